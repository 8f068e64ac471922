package dcgmexporter

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/mig"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// The state rules of the dcgm-exporter source (docs/report.md, "Report from
// existing dcgm-exporter data"): what one grid point's samples of
// dcgm-exporter and kube-state-metrics say of each device, as the
// cost.GPUState the ledger's own formulas price.
//
//   - A device labelled with exactly one container (namespace, pod, container,
//     or their exported_ forms when Prometheus scraped without honor_labels)
//     is held by it: busy or idle by its activity against the price book's
//     idle threshold. Activity is DCGM_FI_PROF_GR_ENGINE_ACTIVE, else
//     DCGM_FI_DEV_GPU_UTIL / 100 — never on a MIG instance, where GPU_UTIL is
//     not supported; without either it is unknown.
//   - Several containers labelled on one device at one grid point: who holds
//     it cannot be known from this data: unknown.
//   - A device without pod labels is unallocated — unless the node's
//     kube-state-metrics capacity says it is not the device plugin's to hand
//     out as a whole device: a time-sliced GPU (the node offers
//     nvidia_com_gpu_shared replicas; dcgm-exporter labels no pod on it) is
//     split by the replicas its running pods requested over the replicas
//     offered, the free replicas unallocated (allocation share); a device the
//     node's capacity does not count at all is handed out by something else
//     (DRA without dcgm-exporter's dra_* labels): unknown.
//   - A GPU whose DCGM_FI_DEV_XID_ERRORS is 79 fell off the bus: lost.
//   - Power is the parent GPU's DCGM_FI_DEV_POWER_USAGE, counted once per GPU
//     however many MIG instances older releases repeat it on.

// xidFallenOffTheBus is the XID of a GPU that fell off the bus.
const xidFallenOffTheBus = 79

// dcgmSeries is what the labels of one DCGM_* series say.
type dcgmSeries struct {
	dev    model.DeviceKey // GI and Profile: GPU_I_ID and GPU_I_PROFILE
	gpu    string          // index on the node
	model  string          // modelName
	host   string
	holder model.HolderKey
}

// parseDCGMSeries reads the labels of a DCGM_* series. exported says that
// Prometheus scraped dcgm-exporter without honor_labels: the holder's labels
// are then exported_namespace, exported_pod and exported_container, and
// namespace and pod name the exporter's own pod.
func parseDCGMSeries(id source.Identity, m pmodel.Metric, exported bool) dcgmSeries {
	s := dcgmSeries{
		// GPU_I_ID and GPU_I_PROFILE only on MIG instances: an instance id
		// reused with another profile is another device.
		dev:   model.DeviceKey{Cluster: id.ClusterOf(m), UUID: string(m["UUID"]), GI: string(m["GPU_I_ID"]), Profile: string(m["GPU_I_PROFILE"])},
		gpu:   string(m["gpu"]),
		model: string(m["modelName"]),
		host:  dcgmHostOf(m),
	}
	prefix := ""
	if exported {
		prefix = "exported_"
	}
	s.holder = model.HolderKey{Namespace: string(m[pmodel.LabelName(prefix+"namespace")]), Pod: string(m[pmodel.LabelName(prefix+"pod")]),
		Container: string(m[pmodel.LabelName(prefix+"container")])}
	if s.holder.Pod == "" {
		s.holder = model.HolderKey{}
	}
	return s
}

// dcgmHostLabels are the labels that name a DCGM_* series' node, in the
// order they are read: dcgm-exporter's own (hostname since 4.8.3, Hostname
// before: the node's name in Kubernetes, from the NODE_NAME its chart sets),
// then the ones a relabeling adds from __meta_kubernetes_pod_node_name when
// dcgm-exporter runs with -n (--no-hostname): nodename, as its chart's
// example names it, or node.
var dcgmHostLabels = []pmodel.LabelName{"hostname", "Hostname", "nodename", "node"}

// dcgmHostOf returns the node of a DCGM_* series; "" when no label names it.
func dcgmHostOf(m pmodel.Metric) string {
	for _, l := range dcgmHostLabels {
		if h, ok := m[l]; ok {
			return string(h)
		}
	}
	return ""
}

// noHost returns an error when a GPU's DCGM_* series name no node (the
// first such GPU by UUID), saying how to have them do so.
func noHost(series map[pmodel.Fingerprint]*dcgmSeries) error {
	var s *dcgmSeries
	for _, sr := range series {
		if sr.host == "" && sr.dev.UUID != "" && (s == nil || sr.dev.UUID < s.dev.UUID) {
			s = sr
		}
	}
	if s == nil {
		return nil
	}
	return fmt.Errorf("the dcgm-exporter series of GPU %s (%s, gpu %q) have no hostname label, nor Hostname, nodename or node: the report cannot tell which node the GPU is on. dcgm-exporter leaves the hostname out when started with -n (--no-hostname, DCGM_EXPORTER_NO_HOSTNAME): run it without, or add the node's name with a relabeling of __meta_kubernetes_pod_node_name to nodename in its scrape config (dcgm-exporter's chart has one to uncomment)",
		s.dev.UUID, s.model, s.gpu)
}

// ksmRequest is one container's request of an nvidia.com resource
// (kube_pod_container_resource_requests).
type ksmRequest struct {
	holder   model.HolderKey
	node     string
	resource string // as kube-state-metrics writes it: nvidia_com_gpu_shared
	value    float64
}

// gridPoint is everything one grid point sampled.
type gridPoint struct {
	devices  map[model.DeviceKey]*deviceReading
	requests []ksmRequest
	running  map[model.HolderKey]bool      // pods (Container empty) in phase Running
	capacity map[string]map[string]float64 // by node and resource: kube_node_status_capacity
}

func newGridPoint() *gridPoint {
	return &gridPoint{devices: map[model.DeviceKey]*deviceReading{}, running: map[model.HolderKey]bool{}, capacity: map[string]map[string]float64{}}
}

// device returns the reading of the device of s, created if new.
func (p *gridPoint) device(s *dcgmSeries) *deviceReading {
	r := p.devices[s.dev]
	if r == nil {
		r = newDeviceReading(s)
		p.devices[s.dev] = r
	}
	return r
}

// The kube-state-metrics resource names the rules read.
const (
	ksmGPU       = "nvidia_com_gpu"
	ksmGPUShared = "nvidia_com_gpu_shared"
	ksmMIGPrefix = "nvidia_com_mig_"
)

// ksmMIGResource returns the kube-state-metrics name of the device plugin's
// resource for a MIG profile (mixed strategy): nvidia_com_mig_3g_40gb.
func ksmMIGResource(profile string) string {
	return ksmMIGPrefix + strings.NewReplacer(".", "_", "-", "_", "+", "_").Replace(profile)
}

// pointDevice is one GPU of a grid point as the rules classified it, with
// the ledger input that prices it.
type pointDevice struct {
	uuid  string
	id    *dcgmSeries // the GPU's identity: node, index, model
	state cost.GPUState
	// shared is, for a time-sliced GPU split by requested replicas
	// (allocation share), the resource its replicas are offered as, as
	// kube-state-metrics names it: ksmGPUShared, or ksmGPU when not
	// renamed; "" for any other GPU.
	shared string
	// Per device of the GPU (the GPU itself, or each MIG instance, in the
	// order of state.Instances): its reading and the holder whose activity
	// and framebuffer it is (zero: none).
	parts []pointPart
}

type pointPart struct {
	reading *deviceReading
	holder  model.HolderKey
}

// classify applies the state rules to one grid point: the ledger input of
// every GPU with a sample there, sorted by UUID. wholeSeen is, per node, how
// many GPUs out of MIG mode the grid has seen there so far: a GPU without a
// sample at this point still counts against the node's capacity. idleBelow
// is the price book's idle threshold.
func classify(p *gridPoint, wholeSeen map[string]int, idleBelow float64) []pointDevice {
	gpus := map[string]*deviceReading{}
	instances := map[string][]*deviceReading{}
	for k, r := range p.devices {
		if k.GI == "" {
			gpus[k.UUID] = r
		} else {
			instances[k.UUID] = append(instances[k.UUID], r)
		}
	}
	// A MIG instance's GPU may have no series of its own (older releases
	// repeat the GPU's fields on each instance): its first instance stands in.
	for uuid, ins := range instances {
		slices.SortFunc(ins, func(a, b *deviceReading) int { return model.CompareGPUIndex(a.id.dev.GI, b.id.dev.GI) })
		if gpus[uuid] == nil {
			g := newDeviceReading(&dcgmSeries{dev: model.DeviceKey{Cluster: ins[0].id.dev.Cluster, UUID: uuid}, gpu: ins[0].id.gpu, model: ins[0].id.model, host: ins[0].id.host})
			gpus[uuid] = g
		}
		// Power counted once per GPU: the GPU's own, else the instances' (the same value repeated).
		if g := gpus[uuid]; math.IsNaN(g.power) {
			for _, in := range ins {
				g.power = maxNaN(g.power, in.power)
			}
		}
	}
	byNode := map[string][]string{}
	for uuid, g := range gpus {
		byNode[g.id.host] = append(byNode[g.id.host], uuid)
	}
	var out []pointDevice
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		uuids := byNode[node]
		slices.Sort(uuids)
		out = append(out, classifyNode(p, node, uuids, gpus, instances, wholeSeen[node], idleBelow)...)
	}
	slices.SortFunc(out, func(a, b pointDevice) int { return cmp.Compare(a.uuid, b.uuid) })
	return out
}

func costHolder(h model.HolderKey) cost.HolderKey {
	return cost.HolderKey{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container}
}

// migSlices returns the compute (of 7) and memory (of 8) slices of a MIG
// profile of a GPU model: from the mig tables, else the compute slices its
// name begins with ("3g.40gb": 3) and no memory slices.
func migSlices(modelName, profile string) (compute, memory int) {
	if m, ok := mig.ForModel(modelName); ok {
		if p, ok := m.Profile(profile); ok {
			return p.ComputeSlices, p.MemorySlices
		}
	}
	if i := strings.Index(profile, "g."); i > 0 {
		if n, err := strconv.Atoi(profile[:i]); err == nil {
			return n, 0
		}
	}
	return 0, 0
}
