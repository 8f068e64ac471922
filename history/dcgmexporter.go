package history

import (
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/collector/sim"
)

// The forms a run's scrapes are written in (Options.Flavor).
const (
	// FlavorGputally is gputally's own exporter: its gputally_* series (the
	// ledger among them) and the DCGM-compatible device series.
	FlavorGputally = "gputally"
	// FlavorDCGMExporter is what a cluster without gputally has: the DCGM_*
	// families with exactly dcgm-exporter 4.8's label sets, no gputally_*
	// series, and the kube-state-metrics v2 series of the same node's pods
	// (see dcgmExporterSink).
	FlavorDCGMExporter = "dcgm-exporter"
)

// dcgmExporterSink hands a run's scrapes on in dcgm-exporter's form, as a
// Prometheus scraping dcgm-exporter and kube-state-metrics would have stored
// them:
//
//   - the DCGM_* families as the collector writes them — the label set of
//     dcgm-exporter 4.8 (gpu, UUID, pci_bus_id, device, modelName, hostname
//     or Hostname, DCGM_FI_DRIVER_VERSION, GPU_I_PROFILE and GPU_I_ID on MIG
//     instances) with pod labels only while exactly one container holds the
//     whole device, as dcgm-exporter maps nvidia.com/gpu and MIG resources
//     and ignores nvidia.com/gpu.shared (a time-sliced GPU shows no pod);
//   - for a GPU that fell off the bus, only DCGM_FI_DEV_XID_ERRORS with the
//     last XID, 79, where dcgm-exporter reads the blank fields as absent;
//   - kube-state-metrics' kube_pod_container_resource_requests,
//     kube_pod_status_phase and kube_pod_labels of the running pods that
//     request a device plugin resource, and kube_node_status_capacity of the
//     node's resources (time-sliced GPUs as their replicas, and pods), from what the
//     simulated API server knows at the scrape — not from the exporter's
//     attribution, so a kubelet outage does not hide them;
//   - no gputally_* series.
//
// The ledger runs as in any run: Result.Totals are the truth to compare with.
type dcgmExporterSink struct {
	sink    Sink
	backend *sim.Backend
	node    string
	pairs   map[[2]string]*dto.LabelPair // interned, so a series has the same pairs in every scrape
}

func newDCGMExporterSink(sink Sink, backend *sim.Backend) *dcgmExporterSink {
	return &dcgmExporterSink{sink: sink, backend: backend, node: backend.Hostname(), pairs: map[[2]string]*dto.LabelPair{}}
}

// pair returns the interned label pair name=value.
func (s *dcgmExporterSink) pair(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	p := s.pairs[k]
	if p == nil {
		if len(s.pairs) >= maxRenderedPairs {
			clear(s.pairs)
		}
		p = &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
		s.pairs[k] = p
	}
	return p
}

func (s *dcgmExporterSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	out := make([]*dto.MetricFamily, 0, len(mfs)+5)
	var info, healthy, xids *dto.MetricFamily
	withSeries := map[string]bool{} // GPU UUIDs with a DCGM_* series in this scrape
	var xidFamily *dto.MetricFamily
	for _, mf := range mfs {
		name := mf.GetName()
		switch {
		case strings.HasPrefix(name, "DCGM_"):
			for _, m := range mf.GetMetric() {
				withSeries[labelValue(m, "UUID")] = true
			}
			if name == "DCGM_FI_DEV_XID_ERRORS" {
				// Copied: lost GPUs' samples are added to it.
				c := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: append([]*dto.Metric(nil), mf.Metric...)}
				xidFamily, mf = c, c
			}
			out = append(out, mf)
		case name == "gputally_gpu_info":
			info = mf
		case name == "gputally_gpu_healthy":
			healthy = mf
		case name == "gputally_xid_errors_total":
			xids = mf
		}
	}
	if lost := s.lostGPUs(info, healthy, xids, withSeries); len(lost) > 0 {
		if xidFamily == nil {
			xidFamily = &dto.MetricFamily{Name: proto.String("DCGM_FI_DEV_XID_ERRORS"), Help: proto.String("Value of the last XID error encountered."),
				Type: dto.MetricType_GAUGE.Enum()}
			out = append(out, xidFamily)
		}
		for _, labels := range lost {
			xidFamily.Metric = append(xidFamily.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(79)}})
		}
	}
	return s.sink.AddScrape(append(out, s.kubeState(t)...), t)
}

// lostGPUs returns the label sets of DCGM_FI_DEV_XID_ERRORS for the GPUs that
// fell off the bus: unhealthy, with XID 79 counted and no DCGM_* series.
func (s *dcgmExporterSink) lostGPUs(info, healthy, xids *dto.MetricFamily, withSeries map[string]bool) [][]*dto.LabelPair {
	if info == nil || healthy == nil || xids == nil {
		return nil
	}
	fell := map[string]bool{}
	for _, m := range xids.GetMetric() {
		if labelValue(m, "xid") == "79" && labelValue(m, "GPU_I_ID") == "" && m.GetCounter().GetValue() > 0 {
			fell[labelValue(m, "UUID")] = true
		}
	}
	down := map[string]bool{}
	for _, m := range healthy.GetMetric() {
		if labelValue(m, "GPU_I_ID") == "" && m.GetGauge().GetValue() == 0 {
			down[labelValue(m, "UUID")] = true
		}
	}
	var out [][]*dto.LabelPair
	for _, m := range info.GetMetric() {
		uuid := labelValue(m, "UUID")
		if labelValue(m, "GPU_I_ID") != "" || !fell[uuid] || !down[uuid] || withSeries[uuid] {
			continue
		}
		var labels []*dto.LabelPair
		driver := ""
		for _, p := range m.GetLabel() {
			switch p.GetName() {
			case "driver_version":
				driver = p.GetValue()
			case "mig_mode", "idle_signal":
			default:
				labels = append(labels, p)
			}
		}
		out = append(out, append(labels, s.pair("DCGM_FI_DRIVER_VERSION", driver)))
	}
	return out
}

// kubeState returns kube-state-metrics' families of the node at t.
func (s *dcgmExporterSink) kubeState(t time.Time) []*dto.MetricFamily {
	requests, capacity := s.backend.KubeState(t)
	gauge := func(name, help string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum()}
	}
	req := gauge("kube_pod_container_resource_requests", "The number of requested request resource by a container.")
	phase := gauge("kube_pod_status_phase", "The pods current phase.")
	podLabels := gauge("kube_pod_labels", "Kubernetes labels converted to Prometheus labels.")
	capa := gauge("kube_node_status_capacity", "The capacity for different resources of a node.")
	sample := func(mf *dto.MetricFamily, v float64, labels ...*dto.LabelPair) {
		mf.Metric = append(mf.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v)}})
	}
	pods := map[[2]string]bool{}
	for _, r := range requests {
		sample(req, float64(r.Count), s.pair("container", r.Container), s.pair("namespace", r.Namespace), s.pair("node", s.node),
			s.pair("pod", r.Pod), s.pair("resource", ksmResource(r.Resource)), s.pair("uid", r.UID), s.pair("unit", "integer"))
		if k := [2]string{r.Namespace, r.Pod}; !pods[k] {
			pods[k] = true
			for _, ph := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
				v := 0.0
				if ph == "Running" {
					v = 1
				}
				sample(phase, v, s.pair("namespace", r.Namespace), s.pair("phase", ph), s.pair("pod", r.Pod), s.pair("uid", r.UID))
			}
			sample(podLabels, 1, s.pair("namespace", r.Namespace), s.pair("pod", r.Pod), s.pair("uid", r.UID))
		}
	}
	for _, res := range slices.Sorted(maps.Keys(capacity)) {
		sample(capa, float64(capacity[res]), s.pair("node", s.node), s.pair("resource", ksmResource(res)), s.pair("unit", "integer"))
	}
	// Every node has a pods capacity, the kubelet's default of 110.
	sample(capa, 110, s.pair("node", s.node), s.pair("resource", "pods"), s.pair("unit", "integer"))
	var out []*dto.MetricFamily
	for _, mf := range []*dto.MetricFamily{req, phase, podLabels, capa} {
		if len(mf.Metric) > 0 {
			out = append(out, mf)
		}
	}
	return out
}

// ksmResource is a resource name as kube-state-metrics writes it in the
// resource label: every character but letters and digits an underscore
// (nvidia.com/gpu.shared → nvidia_com_gpu_shared).
func ksmResource(r string) string {
	b := []byte(r)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

func labelValue(m *dto.Metric, name string) string {
	for _, p := range m.GetLabel() {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}
