package history

import (
	"cmp"
	"maps"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/collector/sim"
)

// kubeStateWriter writes kube-state-metrics' series of a node's GPU pods as
// the API server knows them at a scrape (sim.Backend.Pods), with the label
// sets of kube-state-metrics v2 (kubernetes/kube-state-metrics@c92fe0c
// internal/store/pod.go; every pod series carries namespace, pod and uid):
//
//   - kube_pod_created: the creation time, Unix seconds;
//   - kube_pod_status_scheduled_time: when a bound pod was bound;
//   - kube_pod_status_unschedulable: 1 while a pod is pending (its
//     PodScheduled condition false);
//   - kube_pod_status_phase{phase}: Pending 1 while pending, 0 the others;
//   - kube_pod_container_resource_requests{container, node, resource, unit}
//     of pending pods, without a node (kube-state-metrics writes node="",
//     which Prometheus stores as no label);
//   - kube_pod_info{node, host_network}: the node only once bound;
//   - kube_pod_scheduler{name}: spec.schedulerName;
//   - kube_node_status_allocatable{node, resource, unit}: what the node
//     offers, as kube_node_status_capacity (nothing is reserved).
//
// With bound, it writes the bound pods' requests (with their node) and
// Running phase and the node's kube_node_status_capacity too: the gputally
// flavour, in which nothing else writes them. The dcgm-exporter flavour's
// sink writes those itself and merges these families into its own.
type kubeStateWriter struct {
	backend *sim.Backend
	node    string
	bound   bool
	pairs   map[[2]string]*dto.LabelPair // interned, so a series has the same pairs in every scrape
}

func newKubeStateWriter(b *sim.Backend, bound bool) *kubeStateWriter {
	return &kubeStateWriter{backend: b, node: b.Hostname(), bound: bound, pairs: map[[2]string]*dto.LabelPair{}}
}

// pair returns the interned label pair name=value.
func (k *kubeStateWriter) pair(name, value string) *dto.LabelPair {
	key := [2]string{name, value}
	p := k.pairs[key]
	if p == nil {
		if len(k.pairs) >= maxRenderedPairs {
			clear(k.pairs)
		}
		p = &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
		k.pairs[key] = p
	}
	return p
}

// families returns the families of the node's pods at t, only those with
// samples.
func (k *kubeStateWriter) families(t time.Time) []*dto.MetricFamily {
	gauge := func(name, help string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum()}
	}
	created := gauge("kube_pod_created", "Unix creation timestamp")
	scheduled := gauge("kube_pod_status_scheduled_time", "Unix timestamp when pod moved into scheduled status")
	unschedulable := gauge("kube_pod_status_unschedulable", "Describes the unschedulable status for the pod.")
	phase := gauge("kube_pod_status_phase", "The pods current phase.")
	requests := gauge("kube_pod_container_resource_requests", "The number of requested request resource by a container.")
	info := gauge("kube_pod_info", "Information about pod.")
	scheduler := gauge("kube_pod_scheduler", "The scheduler for a pod.")
	allocatable := gauge("kube_node_status_allocatable", "The allocatable for different resources of a node that are available for scheduling.")
	capacity := gauge("kube_node_status_capacity", "The capacity for different resources of a node.")
	sample := func(mf *dto.MetricFamily, v float64, labels ...*dto.LabelPair) {
		slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
		mf.Metric = append(mf.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v)}})
	}
	for _, p := range k.backend.Pods(t) {
		ns, pod, uid := k.pair("namespace", p.Namespace), k.pair("pod", p.Pod), k.pair("uid", p.UID)
		pending := p.Node == ""
		sample(created, float64(p.Created.Unix()), ns, pod, uid)
		sample(scheduler, 1, k.pair("name", p.Scheduler), ns, pod, uid)
		if pending {
			sample(unschedulable, 1, ns, pod, uid)
			sample(info, 1, k.pair("host_network", "false"), ns, pod, uid)
		} else {
			sample(scheduled, float64(p.Scheduled.Unix()), ns, pod, uid)
			sample(info, 1, k.pair("host_network", "false"), ns, k.pair("node", p.Node), pod, uid)
		}
		if !pending && !k.bound {
			continue
		}
		for _, ph := range []string{"Pending", "Succeeded", "Failed", "Unknown", "Running"} {
			v := 0.0
			if ph == "Pending" && pending || ph == "Running" && !pending {
				v = 1
			}
			sample(phase, v, ns, k.pair("phase", ph), pod, uid)
		}
		for _, r := range p.Requests {
			labels := []*dto.LabelPair{k.pair("container", r.Container), ns, pod, k.pair("resource", ksmResource(r.Resource)), uid, k.pair("unit", "integer")}
			if !pending {
				labels = append(labels, k.pair("node", p.Node))
			}
			sample(requests, float64(r.Count), labels...)
		}
	}
	_, offered := k.backend.KubeState(t)
	offered["pods"] = 110 // the kubelet's default
	node := k.pair("node", k.node)
	for _, res := range slices.Sorted(maps.Keys(offered)) {
		sample(allocatable, float64(offered[res]), node, k.pair("resource", ksmResource(res)), k.pair("unit", "integer"))
		if k.bound {
			sample(capacity, float64(offered[res]), node, k.pair("resource", ksmResource(res)), k.pair("unit", "integer"))
		}
	}
	var out []*dto.MetricFamily
	for _, mf := range []*dto.MetricFamily{created, scheduled, unschedulable, phase, requests, info, scheduler, allocatable, capacity} {
		if len(mf.Metric) > 0 {
			out = append(out, mf)
		}
	}
	return out
}

// mergeFamilies adds the samples of extra to mfs: to the family of the same
// name, or as a family of its own.
func mergeFamilies(mfs, extra []*dto.MetricFamily) []*dto.MetricFamily {
	index := map[string]int{}
	for i, mf := range mfs {
		index[mf.GetName()] = i
	}
	for _, mf := range extra {
		if i, ok := index[mf.GetName()]; ok {
			mfs[i].Metric = append(mfs[i].Metric, mf.Metric...)
			continue
		}
		index[mf.GetName()] = len(mfs)
		mfs = append(mfs, mf)
	}
	return mfs
}

// kubeStateSink hands scrapes on with the node's kube-state-metrics pod
// series added: the gputally flavour of a scenario whose pods wait
// (sim.Scenario.Waits), as a cluster that runs gputally beside
// kube-state-metrics has them.
type kubeStateSink struct {
	sink Sink
	ksm  *kubeStateWriter
}

func (s *kubeStateSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	return s.sink.AddScrape(mergeFamilies(mfs, s.ksm.families(t)), t)
}
