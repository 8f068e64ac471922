package history

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	pmodel "github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// DCGMShapes are the label shapes real clusters' dcgm-exporter series have
// beyond the label sets dcgm-exporter writes in its own repository: how a
// Prometheus Operator ServiceMonitor scraped it, and what older or quirkier
// builds write (testdata/real holds published output of each; its README
// says where from). Each field is one shape; they compose with each other
// and with the flavour's naming — they change labels, values and which
// families are written, never a family's name, but for Names1x. The zero
// value writes none. Only the flavour's sink uses one, on its goroutine.
type DCGMShapes struct {
	// ScrapeTarget is how a ServiceMonitor's scrape labels the DCGM_*
	// series ("": as dcgm-exporter writes them). HonorLabels (honorLabels:
	// true, as NVIDIA's recipes set it, NVIDIA/aicr values.yaml): a series
	// dcgm-exporter labelled no pod on gets the scrape target's namespace,
	// pod and container — the exporter's own pod — and a holder's labels
	// stay. NoHonorLabels: every series gets the target's, and a holder's
	// move to exported_namespace, exported_pod, exported_container. Both add
	// the target's job, service, endpoint and instance (the pod's address),
	// and kube-state-metrics then lists the exporter's pod, Running,
	// requesting no GPU.
	ScrapeTarget string
	// HostnameIsPod writes the exporter pod's name into the host label
	// (hostname, or Hostname under Options.LegacyHostnameLabel), as builds
	// before dcgm-exporter took NODE_NAME did (gpu-operator #472,
	// dcgm-exporter #58, #188, pull request #736).
	HostnameIsPod bool
	// NodeLabel (optional) adds the node's name under this label — node,
	// nodename, kubernetes_node — as a relabeling of
	// __meta_kubernetes_pod_node_name does (gpu-operator #472: node).
	NodeLabel string
	// MIGProfiles spells GPU_I_PROFILE otherwise than the device plugin's
	// resource names the profile: profile → spelling, such as 7g.80gb →
	// 7g.79gb (an A100 80GB, gpu-operator #687) or 1g.12gb → 1g.11gb (an
	// H100 NVL, dcgm-exporter #544).
	MIGProfiles map[string]string
	// ProfilingStuckAtZero writes every DCGM_FI_PROF_* sample as 0 while
	// the other fields move, as an exporter whose profiling module stopped
	// does (dcgm-exporter #662: GR_ENGINE_ACTIVE 0 while GPU_UTIL shows
	// 99–100 %).
	ProfilingStuckAtZero bool
	// NoMIGFramebuffer leaves out the DCGM_FI_DEV_FB_* samples of MIG
	// instances, as on H100s (dcgm-exporter #512, #380); the GPUs keep theirs.
	NoMIGFramebuffer bool
	// EmptyAndExtraLabels adds the empty and extra labels builds write:
	// container="", namespace="", pod="" on a series without a holder (2.x
	// to 3.x: dcgm-exporter #58, gpu-operator #687), pod_uid="" beside a
	// holder's labels (4.x: NVIDIA/aicr's evidence) and
	// DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter" everywhere. Prometheus
	// stores no empty label, nor does the report's store.
	EmptyAndExtraLabels bool
	// NoPCIBusIDOrDriver leaves out the pci_bus_id and driver labels, as
	// builds before them did (dcgm-exporter #58, #317, DCGM #226).
	NoPCIBusIDOrDriver bool
	// VGPUModel (optional) makes every GPU a vGPU guest of this profile, such
	// as "GRID A100-10C" (10 GB of an A100 40GB): its modelName, and only
	// the clock, memory temperature, utilization and framebuffer families,
	// as vGPU guests write (cncf/k8s-ai-conformance v1.36/vks): no power,
	// energy, GPU temperature, profiling, XID or ECC fields.
	VGPUModel string
	// Names1x writes dcgm-exporter 1.x's names and labels instead
	// (dcgm_gpu_utilization …, only gpu and a lower-case uuid, and the pod
	// labels of its pod-gpu-metrics-exporter: pod_name, pod_namespace,
	// container_name; NVIDIA/gpu-monitoring-tools): the families 1.x had no
	// name for are left out.
	Names1x bool
}

// The ways a ServiceMonitor's scrape labels the series (DCGMShapes.ScrapeTarget).
const (
	HonorLabels   = "honor-labels"
	NoHonorLabels = "no-honor-labels"
)

// The scrape target's labels: the GPU Operator's DaemonSet, Service and
// port (NVIDIA/aicr's evidence: job and service nvidia-dcgm-exporter,
// endpoint gpu-metrics, namespace gpu-operator).
const (
	exporterNamespace = "gpu-operator"
	exporterContainer = "nvidia-dcgm-exporter"
	exporterJob       = "nvidia-dcgm-exporter"
	exporterEndpoint  = "gpu-metrics"
	exporterPort      = 9400
	// exporterProcessName is DCGM_FI_PROCESS_NAME's value.
	exporterProcessName = "/usr/bin/dcgm-exporter"
)

// names1x maps the names dcgm-exporter 1.x had (its script,
// NVIDIA/gpu-monitoring-tools@03f24221a51848a1c21bc760a062354c2b3940e3:
// exporters/prometheus-dcgm/dcgm-exporter/dcgm-exporter, without -p) from
// the DCGM_* names.
var names1x = map[string]string{
	"DCGM_FI_DEV_SM_CLOCK": "dcgm_sm_clock", "DCGM_FI_DEV_MEM_CLOCK": "dcgm_memory_clock",
	"DCGM_FI_DEV_MEMORY_TEMP": "dcgm_memory_temp", "DCGM_FI_DEV_GPU_TEMP": "dcgm_gpu_temp",
	"DCGM_FI_DEV_POWER_USAGE": "dcgm_power_usage", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "dcgm_total_energy_consumption",
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "dcgm_pcie_replay_counter", "DCGM_FI_DEV_GPU_UTIL": "dcgm_gpu_utilization",
	"DCGM_FI_DEV_MEM_COPY_UTIL": "dcgm_mem_copy_utilization", "DCGM_FI_DEV_ENC_UTIL": "dcgm_enc_utilization",
	"DCGM_FI_DEV_DEC_UTIL": "dcgm_dec_utilization", "DCGM_FI_DEV_XID_ERRORS": "dcgm_xid_errors",
	"DCGM_FI_DEV_POWER_VIOLATION": "dcgm_power_violation", "DCGM_FI_DEV_THERMAL_VIOLATION": "dcgm_thermal_violation",
	"DCGM_FI_DEV_FB_FREE": "dcgm_fb_free", "DCGM_FI_DEV_FB_USED": "dcgm_fb_used",
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "dcgm_ecc_sbe_volatile_total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "dcgm_ecc_dbe_volatile_total",
}

// labels1x maps the labels 1.x had from dcgm-exporter's; it had no others.
var labels1x = map[string]string{"gpu": "gpu", "UUID": "uuid", "pod": "pod_name", "namespace": "pod_namespace", "container": "container_name"}

// Zero reports whether sh writes no shape.
func (sh *DCGMShapes) Zero() bool {
	return sh.ScrapeTarget == "" && !sh.HostnameIsPod && sh.NodeLabel == "" && len(sh.MIGProfiles) == 0 && !sh.ProfilingStuckAtZero &&
		!sh.NoMIGFramebuffer && !sh.EmptyAndExtraLabels && !sh.NoPCIBusIDOrDriver && sh.VGPUModel == "" && !sh.Names1x
}

// Check reports a DCGMShapes that cannot be written.
func (sh *DCGMShapes) Check() error {
	var errs []error
	if sh.ScrapeTarget != "" && sh.ScrapeTarget != HonorLabels && sh.ScrapeTarget != NoHonorLabels {
		errs = append(errs, fmt.Errorf("scrape target %q: want %s or %s", sh.ScrapeTarget, HonorLabels, NoHonorLabels))
	}
	if l := sh.NodeLabel; l != "" && (!pmodel.LegacyValidation.IsValidLabelName(l) || slices.Contains(dcgmLabels, l)) {
		errs = append(errs, fmt.Errorf("node label %q: want a label name dcgm-exporter does not write, such as node, nodename or kubernetes_node", l))
	}
	for _, p := range slices.Sorted(maps.Keys(sh.MIGProfiles)) {
		if s := sh.MIGProfiles[p]; p == "" || s == "" || s == p {
			errs = append(errs, fmt.Errorf("MIG profile %q spelled %q: want two different names", p, s))
		}
	}
	if sh.Names1x && sh.ScrapeTarget == NoHonorLabels {
		errs = append(errs, errors.New("1.x names with no-honor-labels: 1.x wrote pod_name, which a scrape does not rename"))
	}
	return errors.Join(errs...)
}

// dcgmLabels are the labels dcgm-exporter writes on its DCGM_* series.
var dcgmLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "Hostname", "DCGM_FI_DRIVER_VERSION",
	"DCGM_FI_SYSTEM_DRIVER_VERSION", "GPU_I_PROFILE", "GPU_I_ID", "container", "namespace", "pod"}

// shaper applies a DCGMShapes to one node's DCGM_* families.
type shaper struct {
	sh   *DCGMShapes
	node string
	pod  string // the exporter's pod on the node
	uid  string // its uid
	addr string // its address, instance
	pair func(name, value string) *dto.LabelPair
}

func newShaper(sh *DCGMShapes, node string, pair func(name, value string) *dto.LabelPair) *shaper {
	h := fnv.New64a()
	h.Write([]byte(node))
	sum := h.Sum64()
	// A DaemonSet pod's name: its own and five characters of Kubernetes'
	// name alphabet (k8s.io/apimachinery's util/rand), such as
	// nvidia-dcgm-exporter-57pvc.
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	suffix := make([]byte, 5)
	for i, s := 0, sum; i < len(suffix); i, s = i+1, s/uint64(len(alphabet)) {
		suffix[i] = alphabet[s%uint64(len(alphabet))]
	}
	return &shaper{sh: sh, node: node, pod: "nvidia-dcgm-exporter-" + string(suffix), pair: pair,
		uid:  fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(sum), uint16(sum>>32), sum>>48&0xfff, sum>>20&0xfff, sum&0xffffffffffff),
		addr: fmt.Sprintf("10.244.%d.%d:%d", sum>>56, sum>>48&0xff, exporterPort)}
}

// families shapes the DCGM_* families of one scrape, in place where only
// labels and values change; it returns the families to write.
func (p *shaper) families(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	out := mfs[:0]
	for _, mf := range mfs {
		name := mf.GetName()
		switch {
		case !strings.HasPrefix(name, "DCGM_"):
		case p.sh.VGPUModel != "" && !vgpuFamily(name):
			continue
		case p.sh.Names1x:
			n1, ok := names1x[name]
			if !ok {
				continue
			}
			mf = &dto.MetricFamily{Name: proto.String(n1), Help: mf.Help, Type: mf.Type, Metric: mf.Metric}
		}
		if strings.HasPrefix(name, "DCGM_") {
			mf.Metric = p.metrics(name, mf.Metric)
		}
		if len(mf.Metric) > 0 || !strings.HasPrefix(name, "DCGM_") {
			out = append(out, mf)
		}
	}
	return out
}

// vgpuFamily reports whether a vGPU guest writes family name: clocks,
// memory temperature, utilization and framebuffer — under either naming.
func vgpuFamily(name string) bool {
	if strings.HasPrefix(name, "DCGM_FI_PROF_") {
		return false
	}
	for _, s := range []string{"CLOCK", "MEMORY_TEMP", "UTIL", "_FB_"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// metrics shapes the samples of DCGM_* family name.
func (p *shaper) metrics(name string, ms []*dto.Metric) []*dto.Metric {
	out := make([]*dto.Metric, 0, len(ms))
	for _, m := range ms {
		if p.sh.NoMIGFramebuffer && strings.HasPrefix(name, "DCGM_FI_DEV_FB_") && labelValue(m, "GPU_I_ID") != "" {
			continue
		}
		if p.sh.ProfilingStuckAtZero && strings.HasPrefix(name, "DCGM_FI_PROF_") && m.Gauge != nil {
			m.Gauge = &dto.Gauge{Value: proto.Float64(0)}
		}
		m.Label = p.labels(m.Label)
		out = append(out, m)
	}
	return out
}

// labels returns the shaped label pairs of one sample, sorted by name; the
// pairs stay shared.
func (p *shaper) labels(in []*dto.LabelPair) []*dto.LabelPair {
	sh := p.sh
	out := make([]*dto.LabelPair, 0, len(in)+10)
	has := func(name string) bool {
		return slices.ContainsFunc(in, func(l *dto.LabelPair) bool { return l.GetName() == name })
	}
	held := slices.ContainsFunc(in, func(l *dto.LabelPair) bool { return l.GetName() == "pod" && l.GetValue() != "" })
	free := !has("pod") // dcgm-exporter wrote no pod labels
	for _, l := range in {
		name, value := l.GetName(), l.GetValue()
		switch {
		case sh.Names1x:
			if n1, ok := labels1x[name]; ok {
				out = append(out, p.pair(n1, value))
			}
			continue
		case sh.NoPCIBusIDOrDriver && (name == "pci_bus_id" || name == "DCGM_FI_DRIVER_VERSION" || name == "DCGM_FI_SYSTEM_DRIVER_VERSION"):
			continue
		case name == "GPU_I_PROFILE" && sh.MIGProfiles[value] != "":
			l = p.pair(name, sh.MIGProfiles[value])
		case (name == "hostname" || name == "Hostname") && sh.HostnameIsPod:
			l = p.pair(name, p.pod)
		case name == "modelName" && sh.VGPUModel != "":
			l = p.pair(name, sh.VGPUModel)
		case (name == "namespace" || name == "pod" || name == "container") && sh.ScrapeTarget == NoHonorLabels:
			l = p.pair("exported_"+name, value)
		}
		out = append(out, l)
	}
	add := func(name, value string) { out = append(out, p.pair(name, value)) }
	if sh.NodeLabel != "" {
		add(sh.NodeLabel, p.node)
	}
	if sh.EmptyAndExtraLabels && !sh.Names1x {
		switch {
		case held:
			add("pod_uid", "")
		case free:
			prefix := ""
			if sh.ScrapeTarget == NoHonorLabels {
				prefix = "exported_"
			}
			add(prefix+"container", "")
			add(prefix+"namespace", "")
			add(prefix+"pod", "")
			free = false
		}
		add("DCGM_FI_PROCESS_NAME", exporterProcessName)
	}
	if sh.ScrapeTarget != "" {
		// honorLabels keeps what the scrape has, an empty label included
		// (Prometheus then stores no such label); without it, the
		// target's replace them (moved to exported_ above).
		for _, t := range [][2]string{{"namespace", exporterNamespace}, {"pod", p.pod}, {"container", exporterContainer}} {
			if sh.ScrapeTarget == NoHonorLabels || free && !has(t[0]) {
				add(t[0], t[1])
			}
		}
		add("job", exporterJob)
		add("service", exporterJob)
		add("endpoint", exporterEndpoint)
		add("instance", p.addr)
	}
	slices.SortStableFunc(out, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out
}

// kubePod is the exporter's own pod as kube-state-metrics lists it, when
// the scrape went through a ServiceMonitor: namespace, pod and uid.
func (p *shaper) kubePod() (namespace, pod, uid string, ok bool) {
	return exporterNamespace, p.pod, p.uid, p.sh.ScrapeTarget != ""
}
