package attribution

import "github.com/prometheus/client_golang/prometheus"

// FractionalCollector exports the health of fractional attribution: the pod
// watch, and the holders of GPU shares that could not be resolved, by reason
// (every reason, at 0 too). It reads the Client's latest Snapshot and the pod
// source's in-memory status, so a scrape does no I/O. It is safe for
// concurrent use.
type FractionalCollector struct {
	client *Client
	pods   PodSource // nil: the node's pods are not watched

	up, count, unresolved, unresolvedTotal *prometheus.Desc
}

// NewFractionalCollector returns the collector for client and its pod source
// (nil when the node's pods are not watched: then only the unresolved holders
// are exported).
func NewFractionalCollector(client *Client, pods PodSource) *FractionalCollector {
	return &FractionalCollector{
		client: client,
		pods:   pods,
		up: prometheus.NewDesc("gputally_pod_watch_up",
			"1 when the last list or watch of the pods bound to this node succeeded, else 0.", nil, nil),
		count: prometheus.NewDesc("gputally_pod_watch_pods",
			"Pods bound to this node, as the pod watch last saw them.", nil, nil),
		unresolved: prometheus.NewDesc("gputally_attribution_unresolved_shares",
			"Holders of GPU shares (HAMi, KAI-Scheduler, DRA consumed capacity) of the last kubelet refresh that could not be resolved, by reason.",
			[]string{"reason"}, nil),
		unresolvedTotal: prometheus.NewDesc("gputally_attribution_unresolved_shares_total",
			"Holders of GPU shares that could not be resolved, by reason, one per holder per kubelet refresh.",
			[]string{"reason"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *FractionalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.count
	ch <- c.unresolved
	ch <- c.unresolvedTotal
}

// Collect implements prometheus.Collector.
func (c *FractionalCollector) Collect(ch chan<- prometheus.Metric) {
	if c.pods != nil {
		st := c.pods.Status()
		up := 0.0
		if st.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(st.Pods))
	}
	s := c.client.Current()
	var last [NumUnresolvedReasons]int
	for _, u := range s.Unresolved {
		last[u.Reason]++
	}
	for r := range NumUnresolvedReasons {
		ch <- prometheus.MustNewConstMetric(c.unresolved, prometheus.GaugeValue, float64(last[r]), r.String())
		ch <- prometheus.MustNewConstMetric(c.unresolvedTotal, prometheus.CounterValue, float64(s.UnresolvedTotal[r]), r.String())
	}
}
