package attribution

import "github.com/prometheus/client_golang/prometheus"

// DRACollector exports the health of DRA attribution: the ResourceSlice source
// and the DRA allocations that could not be mapped. It reads the Client's
// latest Snapshot and the source's in-memory status, so a scrape does no I/O.
// It is safe for concurrent use.
type DRACollector struct {
	client *Client
	slices SliceSource // nil: ResourceSlice lookups are off

	up, devices, unmapped, unmappedTotal *prometheus.Desc
}

// NewDRACollector returns the collector for client and its slice source (nil when
// ResourceSlice lookups are off: then only the unmapped allocations are exported).
func NewDRACollector(client *Client, slices SliceSource) *DRACollector {
	return &DRACollector{
		client: client,
		slices: slices,
		up: prometheus.NewDesc("gputally_dra_resourceslices_up",
			"1 when the last list or watch of the node's ResourceSlices succeeded, else 0.", nil, nil),
		devices: prometheus.NewDesc("gputally_dra_resourceslice_devices",
			"Devices of attributed DRA drivers that the node's ResourceSlices publish.", nil, nil),
		unmapped: prometheus.NewDesc("gputally_dra_unmapped_allocations",
			"DRA allocations of the last kubelet refresh that could not be mapped to a GPU or MIG instance of this node.", nil, nil),
		unmappedTotal: prometheus.NewDesc("gputally_dra_unmapped_allocations_total",
			"DRA allocations that could not be mapped, one per allocation per kubelet refresh.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DRACollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.devices
	ch <- c.unmapped
	ch <- c.unmappedTotal
}

// Collect implements prometheus.Collector.
func (c *DRACollector) Collect(ch chan<- prometheus.Metric) {
	if c.slices != nil {
		st := c.slices.Status()
		up := 0.0
		if st.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
		ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(st.Devices))
	}
	s := c.client.Current()
	ch <- prometheus.MustNewConstMetric(c.unmapped, prometheus.GaugeValue, float64(len(s.UnmappedDRA)))
	ch <- prometheus.MustNewConstMetric(c.unmappedTotal, prometheus.CounterValue, float64(s.UnmappedDRATotal))
}
