package dcgmexporter

import (
	"cmp"
	"math"
	"slices"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// classifyNode classifies the GPUs of one node: first each device by its
// own samples, then, against what the device plugin offers of the node,
// the devices no pod is labelled on. Without the node's capacity, an
// unlabelled GPU that shows work (activity at or above idleBelow, or
// framebuffer in use) is held by someone the data does not show: unknown.
func classifyNode(p *gridPoint, node string, uuids []string, gpus map[string]*deviceReading, instances map[string][]*deviceReading, wholeSeen int, idleBelow float64) []pointDevice {
	c := readNodeDevices(uuids, gpus, instances)
	capacity, known := p.capacity[node]
	whole := max(c.whole, wholeSeen)
	switch {
	case !known:
		c.markInUseUnknown(idleBelow)
	case whole > 0 && int(capacity[ksmGPU]) > whole:
		c.shareNotRenamed(p, node, capacity[ksmGPU])
	default:
		c.attributeUnlabelled(p, node, capacity, whole)
		c.markUnofferedMIG(capacity)
	}
	return c.out
}

// inUseFBMiB is the framebuffer, MiB, above which a GPU holds someone's
// memory: above what an idle GPU with no process reports on any driver, and
// below what any CUDA process with a model in it holds.
const inUseFBMiB = 1024

// markInUseUnknown marks unknown the unlabelled GPUs that show work —
// activity at or above idleBelow, or framebuffer in use — on a node whose
// capacity is not known: a holder dcgm-exporter labels no pod for
// (time-slicing, DRA) may hold them. The others stay unallocated.
func (c *nodeDevices) markInUseUnknown(idleBelow float64) {
	for _, i := range c.unlabelled {
		r := c.out[i].parts[0].reading
		if a := r.activity(); a >= idleBelow || r.fb >= inUseFBMiB<<20 {
			c.out[i].state.HoldersKnown = false
		}
	}
}

// shareNotRenamed splits every whole, healthy GPU of a node whose device
// plugin offers more nvidia.com/gpu than it has GPUs — time-slicing without
// renamed resources — over the node's running pods that request
// nvidia.com/gpu, by the replicas requested of those offered (replicas):
// dcgm-exporter labels only one of the pods that share such a GPU.
func (c *nodeDevices) shareNotRenamed(p *gridPoint, node string, replicas float64) {
	holders := sharedHolders(p, node, ksmGPU, replicas)
	for i := range c.out {
		d := &c.out[i]
		if d.state.MIG || d.state.Lost {
			continue
		}
		d.shared, d.state.HoldersKnown, d.state.Holders = ksmGPU, true, holders
		d.parts[0].holder = model.HolderKey{}
	}
}

// nodeDevices is one node's devices as classified by their own samples, and
// what the node's capacity is yet to decide of them.
type nodeDevices struct {
	out        []pointDevice
	unlabelled []int // whole, healthy GPUs without a pod: indices into out
	whole      int   // whole GPUs of the node, lost ones included: the device plugin still counts them
	migFree    map[string][]pointPartRef
	migHeld    map[string]int
}

// readNodeDevices classifies each GPU of a node by its own samples: lost
// (fallen off the bus), partitioned into MIG instances, or whole.
func readNodeDevices(uuids []string, gpus map[string]*deviceReading, instances map[string][]*deviceReading) *nodeDevices {
	c := &nodeDevices{migFree: map[string][]pointPartRef{}, migHeld: map[string]int{}}
	for _, uuid := range uuids {
		g := gpus[uuid]
		d := pointDevice{uuid: uuid, id: g.id, state: cost.GPUState{UUID: uuid, Model: g.id.model, PowerW: g.power, Activity: g.activity()}}
		ins := instances[uuid]
		switch {
		case g.xid == xidFallenOffTheBus:
			d.state.Lost = true
			d.state.PowerW = math.NaN()
			if len(ins) == 0 {
				c.whole++
			}
		case len(ins) > 0:
			c.addMIGInstances(&d, g, ins)
		default:
			c.addWholeGPU(&d, g)
		}
		c.out = append(c.out, d)
	}
	return c
}

// addMIGInstances fills in a partitioned GPU: each instance held by the one
// container labelled on it, free when none is, unknown when several are.
func (c *nodeDevices) addMIGInstances(d *pointDevice, g *deviceReading, ins []*deviceReading) {
	d.state.MIG = true
	d.state.Activity = math.NaN()
	layout := make([]string, len(ins))
	for j, in := range ins {
		layout[j] = in.id.dev.Profile
		cs, ms := migSlices(g.id.model, in.id.dev.Profile)
		inst := cost.Instance{UUID: d.uuid + "/" + in.id.dev.GI + "/" + in.id.dev.Profile, ComputeSlices: cs, MemorySlices: ms, Activity: in.activity(), HoldersKnown: true}
		part := pointPart{reading: in}
		switch len(in.holders) {
		case 0:
			c.migFree[in.id.dev.Profile] = append(c.migFree[in.id.dev.Profile], pointPartRef{len(c.out), j})
		case 1:
			inst.Holders = []cost.Holder{{Key: costHolder(in.holders[0]), Share: 1, Activity: math.NaN()}}
			part.holder = in.holders[0]
			c.migHeld[in.id.dev.Profile]++
		default:
			inst.HoldersKnown = false
		}
		d.state.Instances = append(d.state.Instances, inst)
		d.parts = append(d.parts, part)
	}
	d.state.Hostable = cost.HostableFor(g.id.model, layout)
}

// addWholeGPU fills in a whole, healthy GPU: held by the one container
// labelled on it, unlabelled when none is, unknown when several are.
func (c *nodeDevices) addWholeGPU(d *pointDevice, g *deviceReading) {
	c.whole++
	d.state.HoldersKnown = true
	part := pointPart{reading: g}
	switch len(g.holders) {
	case 0:
		c.unlabelled = append(c.unlabelled, len(c.out))
	case 1:
		d.state.Holders = []cost.Holder{{Key: costHolder(g.holders[0]), Share: 1, Activity: math.NaN()}}
		part.holder = g.holders[0]
	default:
		d.state.HoldersKnown = false
	}
	d.parts = []pointPart{part}
}

// attributeUnlabelled decides the unlabelled whole GPUs of a node with
// whole GPUs: the first of them, by framebuffer in use (a GPU whose memory
// is in use while no pod is labelled on it is held by pods dcgm-exporter
// does not map), are the time-sliced ones, then those the device plugin
// does not offer; the rest are unallocated.
func (c *nodeDevices) attributeUnlabelled(p *gridPoint, node string, capacity map[string]float64, whole int) {
	out := c.out
	slices.SortStableFunc(c.unlabelled, func(a, b int) int {
		fa, fb := out[a].parts[0].reading.fb, out[b].parts[0].reading.fb
		return cmp.Compare(nanAsZero(fb), nanAsZero(fa))
	})
	replicas := capacity[ksmGPUShared]
	sharedGPUs := 0
	if replicas > 0 {
		sharedGPUs = max(0, whole-int(capacity[ksmGPU]))
	}
	unoffered := max(0, whole-int(capacity[ksmGPU])-sharedGPUs)
	var shareHolders []cost.Holder
	if sharedGPUs > 0 {
		shareHolders = sharedHolders(p, node, ksmGPUShared, replicas)
	}
	for n, i := range c.unlabelled {
		switch {
		case n < sharedGPUs:
			out[i].shared = ksmGPUShared
			out[i].state.Holders = shareHolders
		case n < sharedGPUs+unoffered:
			out[i].state.HoldersKnown = false
		}
	}
}

// sharedHolders is who holds a node's time-sliced GPUs: the running pods
// requesting resource (as kube-state-metrics names it) there, each by its
// share of the replicas, in order of namespace, pod and container.
func sharedHolders(p *gridPoint, node, resource string, replicas float64) []cost.Holder {
	var holders []cost.Holder
	for _, rq := range p.requests {
		if rq.node == node && rq.resource == resource && p.running[model.HolderKey{Namespace: rq.holder.Namespace, Pod: rq.holder.Pod}] {
			holders = append(holders, cost.Holder{Key: costHolder(rq.holder), Share: rq.value / replicas, Activity: math.NaN()})
		}
	}
	slices.SortFunc(holders, func(a, b cost.Holder) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Pod, b.Key.Pod), cmp.Compare(a.Key.Container, b.Key.Container))
	})
	return holders
}

// markUnofferedMIG marks unknown the free MIG instances beyond what the
// device plugin offers of their profile: something else hands them out.
func (c *nodeDevices) markUnofferedMIG(capacity map[string]float64) {
	for profile, free := range c.migFree {
		extra := len(free) + c.migHeld[profile] - int(capacity[ksmMIGResource(profile)])
		for n := 0; n < extra && n < len(free); n++ {
			ref := free[len(free)-1-n]
			c.out[ref.gpu].state.Instances[ref.instance].HoldersKnown = false
		}
	}
}

// pointPartRef names a MIG instance of a node: its GPU in the node's
// devices and its index among the GPU's instances.
type pointPartRef struct{ gpu, instance int }

// nanAsZero reads an unknown (NaN) value as 0.
func nanAsZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
