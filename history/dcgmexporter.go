package history

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/dcgmnames"
)

// The forms a run's scrapes are written in (Options.Flavor).
const (
	// FlavorGputally is gputally's own exporter: its gputally_* series (the
	// ledger among them) and the DCGM-compatible device series.
	FlavorGputally = "gputally"
	// FlavorDCGMExporter is what a cluster without gputally has: the DCGM_*
	// families with exactly dcgm-exporter's label sets, under the names of
	// Options.Names, no gputally_* series, and the kube-state-metrics v2
	// series of the same node's pods (see dcgmExporterSink).
	FlavorDCGMExporter = "dcgm-exporter"
)

// dcgmExporterSink hands a run's scrapes on in dcgm-exporter's form, as a
// Prometheus scraping dcgm-exporter and kube-state-metrics would have stored
// them:
//
//   - the DCGM_* families as the collector writes them, under the names in
//     force at the scrape (Names) — the label set of dcgm-exporter (gpu,
//     UUID, pci_bus_id, device, modelName, hostname or Hostname, the driver
//     label DCGM_FI_DRIVER_VERSION up to 4.8 or DCGM_FI_SYSTEM_DRIVER_VERSION
//     from 4.9, GPU_I_PROFILE and GPU_I_ID on MIG instances) with pod labels
//     only while exactly one container holds the whole device, as
//     dcgm-exporter maps nvidia.com/gpu and MIG resources and ignores
//     nvidia.com/gpu.shared (a time-sliced GPU shows no pod);
//   - for a GPU that fell off the bus, only the last-XID family
//     (DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DEV_XID_ERROR from 4.9) at 79, where
//     dcgm-exporter reads the blank fields as absent;
//   - kube-state-metrics' kube_pod_container_resource_requests,
//     kube_pod_status_phase and kube_pod_labels of the running pods that
//     request a device plugin resource (and the pods' lifecycle series,
//     kubestate.go), and kube_node_status_capacity of the
//     node's resources (time-sliced GPUs as their replicas, and pods), from what the
//     simulated API server knows at the scrape — not from the exporter's
//     attribution, so a kubelet outage does not hide them;
//   - on a GPU time-sliced without renaming (its replicas advertised as
//     nvidia.com/gpu), the pod labels of one of the containers that hold a
//     replica — the last listed, as dcgm-exporter's pod mapper maps every
//     replica's device ID to the GPU and keeps the last;
//   - no gputally_* series.
//
// opts leaves out what clusters often lack. The ledger runs as in any run:
// Result.Totals are the truth to compare with.
type dcgmExporterSink struct {
	sink    Sink
	backend *sim.Backend
	node    string
	opts    DCGMExporterOptions
	names   Names
	start   time.Time                    // of the run, for names
	pairs   map[[2]string]*dto.LabelPair // interned, so a series has the same pairs in every scrape
	shaper  *shaper                      // nil without Shapes
	ksm     *kubeStateWriter             // the pods' lifecycle series (kubestate.go)
}

// DCGMExporterOptions leave out of the dcgm-exporter flavour what clusters
// often lack.
type DCGMExporterOptions struct {
	// NoHostname writes the DCGM_* series without the hostname (or
	// Hostname) label, as dcgm-exporter's -n (--no-hostname) does.
	NoHostname bool
	// NoProfiling writes no DCGM_FI_PROF_* series, as dcgm-exporter does
	// when its profiling (DCP) fields are off or unsupported.
	NoProfiling bool
	// NoKubeStateMetrics writes no kube-state-metrics series: a cluster
	// that does not run it, or whose Prometheus does not scrape it.
	NoKubeStateMetrics bool
	// Shapes (optional) writes the label shapes of real clusters
	// (dcgmshapes.go); nil: none.
	Shapes *DCGMShapes
}

func newDCGMExporterSink(sink Sink, backend *sim.Backend, opts DCGMExporterOptions, names Names, start time.Time) *dcgmExporterSink {
	s := &dcgmExporterSink{sink: sink, backend: backend, node: backend.Hostname(), opts: opts, names: names, start: start, pairs: map[[2]string]*dto.LabelPair{},
		ksm: newKubeStateWriter(backend, false)}
	if opts.Shapes != nil {
		s.shaper = newShaper(opts.Shapes, s.node, s.pair)
	}
	return s
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
	names := s.names.at(s.start, t)
	xidFamilies := map[string]*dto.MetricFamily{} // the last-XID family under each name in force
	requests, capacity := s.backend.KubeState(t)
	labelled := s.labelledReplicas(requests)
	for _, mf := range mfs {
		name := mf.GetName()
		switch {
		case s.opts.NoProfiling && strings.HasPrefix(name, "DCGM_FI_PROF_"):
		case strings.HasPrefix(name, "DCGM_"):
			for _, m := range mf.GetMetric() {
				withSeries[labelValue(m, "UUID")] = true
				s.relabel(m, labelled)
			}
			if f, _, _ := dcgmnames.ByName(name); f == dcgmnames.XID {
				// Copied: lost GPUs' samples are added to it.
				c := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: append([]*dto.Metric(nil), mf.Metric...)}
				xidFamilies[name], mf = c, c
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
	if lost := s.lostGPUs(info, healthy, xids, withSeries, names); len(lost) > 0 {
		for _, n := range names {
			xidFamily := xidFamilies[dcgmnames.XID.Name(n)]
			if xidFamily == nil {
				xidFamily = &dto.MetricFamily{Name: proto.String(dcgmnames.XID.Name(n)), Help: proto.String(dcgmnames.XID.Help),
					Type: dto.MetricType_GAUGE.Enum()}
				out = append(out, xidFamily)
			}
			for _, labels := range lost {
				m := &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(79)}}
				s.relabel(m, nil)
				xidFamily.Metric = append(xidFamily.Metric, m)
			}
		}
	}
	if s.shaper != nil {
		out = s.shaper.families(out)
	}
	if !s.opts.NoKubeStateMetrics {
		out = mergeFamilies(out, append(s.kubeState(requests, capacity), s.ksm.families(t)...))
	}
	return s.sink.AddScrape(out, t)
}

// labelledReplicas returns, per GPU time-sliced without renaming, the
// container dcgm-exporter labels on it: of the requests of nvidia.com/gpu
// replicas ("GPU-<uuid>::<n>"), the last.
func (s *dcgmExporterSink) labelledReplicas(requests []sim.PodRequest) map[string]*sim.PodRequest {
	var out map[string]*sim.PodRequest
	for i, r := range requests {
		if r.Resource != "nvidia.com/gpu" {
			continue
		}
		for _, id := range r.DeviceIDs {
			if uuid, _, replica := strings.Cut(id, "::"); replica {
				if out == nil {
					out = map[string]*sim.PodRequest{}
				}
				out[uuid] = &requests[i]
			}
		}
	}
	return out
}

// relabel gives a DCGM_* sample the labels dcgm-exporter would: without
// the hostname under NoHostname, and with the pod labels of the container
// labelled on its GPU when that is time-sliced without renaming. The label
// pairs stay shared; the slice is new when it changes.
func (s *dcgmExporterSink) relabel(m *dto.Metric, labelled map[string]*sim.PodRequest) {
	r := labelled[labelValue(m, "UUID")]
	if !s.opts.NoHostname && (r == nil || labelValue(m, "GPU_I_ID") != "") {
		return
	}
	labels := make([]*dto.LabelPair, 0, len(m.Label)+3)
	for _, p := range m.Label {
		if !s.opts.NoHostname || p.GetName() != "hostname" && p.GetName() != "Hostname" {
			labels = append(labels, p)
		}
	}
	if r != nil && labelValue(m, "GPU_I_ID") == "" {
		labels = append(labels, s.pair("container", r.Container), s.pair("namespace", r.Namespace), s.pair("pod", r.Pod))
		slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	}
	m.Label = labels
}

// lostGPUs returns the label sets of the last-XID family for the GPUs that
// fell off the bus: unhealthy, with XID 79 counted and no DCGM_* series; with
// the driver label of each naming in names.
func (s *dcgmExporterSink) lostGPUs(info, healthy, xids *dto.MetricFamily, withSeries map[string]bool, names []dcgmnames.Naming) [][]*dto.LabelPair {
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
		for _, n := range names {
			labels = append(labels, s.pair(n.DriverLabel(), driver))
		}
		slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
		out = append(out, labels)
	}
	return out
}

// kubeState returns kube-state-metrics' families of the node's requests
// and capacity.
func (s *dcgmExporterSink) kubeState(requests []sim.PodRequest, capacity map[string]int) []*dto.MetricFamily {
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
	running := func(namespace, pod, uid string) {
		if k := [2]string{namespace, pod}; !pods[k] {
			pods[k] = true
			for _, ph := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
				v := 0.0
				if ph == "Running" {
					v = 1
				}
				sample(phase, v, s.pair("namespace", namespace), s.pair("phase", ph), s.pair("pod", pod), s.pair("uid", uid))
			}
			sample(podLabels, 1, s.pair("namespace", namespace), s.pair("pod", pod), s.pair("uid", uid))
		}
	}
	for _, r := range requests {
		sample(req, float64(r.Count), s.pair("container", r.Container), s.pair("namespace", r.Namespace), s.pair("node", s.node),
			s.pair("pod", r.Pod), s.pair("resource", ksmResource(r.Resource)), s.pair("uid", r.UID), s.pair("unit", "integer"))
		running(r.Namespace, r.Pod, r.UID)
	}
	if s.shaper != nil {
		if ns, pod, uid, ok := s.shaper.kubePod(); ok {
			running(ns, pod, uid) // the exporter's own pod: it requests no GPU
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
