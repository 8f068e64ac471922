package sim

import (
	"fmt"
	"sort"

	"github.com/gputally/gputally/attribution/kubeletsim"
	"github.com/gputally/gputally/collector"
)

// podEntry is one scenario pod entry, or one pod of a job: a container holding
// one device.
type podEntry struct {
	namespace, pod, uid, container string
	resource                       string
	deviceID                       string // as the device plugin reports it; "" for DRA
	claim, draDevice               string // DRA claim and device name (dra.go)
	containerID                    string // 64 hex digits
	pids                           []uint32
	window                         window // when it runs
	// gpu is the index of the entry's GPU (of its MIG instance's GPU).
	gpu int
	// hami and kai are the entry's HAMi grant or KAI fraction; reservation
	// the GPU group of a KAI reservation pod's entry (fractional.go).
	hami        *HAMiGrant
	kai         *KAIShare
	reservation string
}

// key tells entries apart: a job's pods differ in UID, a pod's containers in name,
// a container's devices in device ID or DRA claim and device.
func (e *podEntry) key() string {
	return e.uid + "/" + e.container + "/" + e.deviceID + "/" + e.claim + "/" + e.draDevice
}

// Allocation is what the kubelet's pod-resources List reports for one container and
// resource: the device IDs as the NVIDIA device plugin names them ("GPU-<uuid>",
// "GPU-<uuid>::<replica>" for time-slicing, "MIG-<uuid>").
type Allocation struct {
	Namespace string
	Pod       string
	UID       string
	Container string
	Resource  string
	DeviceIDs []string
	// Claim, Pool, DRADevices and ShareID describe a DRA allocation (Resource
	// gpu.nvidia.com): the claim, the driver's pool (the node name), the devices
	// as the driver names them, and the share ID when claims share the device.
	Claim      string
	Pool       string
	DRADevices []string
	ShareID    string
}

// Allocatable is what GetAllocatableResources reports for one resource.
type Allocatable struct {
	Resource  string
	DeviceIDs []string
}

// allocations groups pod entries into Allocations.
func (b *Backend) allocations(entries []podEntry) []Allocation {
	var allocs []Allocation
	index := map[[5]string]int{}
	claims := draClaimsPerDevice(b.entries) // over the whole scenario: a share ID does not come and go with neighbours
	for _, e := range entries {
		if e.kai != nil {
			continue // KAI's sharers hold nothing in the kubelet's answer: the reservation pod does
		}
		key := [5]string{e.namespace, e.pod, e.container, e.resource, e.claim}
		if i, ok := index[key]; ok {
			if e.draDevice != "" {
				allocs[i].DRADevices = append(allocs[i].DRADevices, e.draDevice)
			} else {
				allocs[i].DeviceIDs = append(allocs[i].DeviceIDs, e.deviceID)
			}
			continue
		}
		index[key] = len(allocs)
		a := Allocation{
			Namespace: e.namespace, Pod: e.pod, UID: e.uid, Container: e.container,
			Resource: e.resource, DeviceIDs: []string{e.deviceID},
		}
		if e.draDevice != "" {
			a.DeviceIDs, a.Claim, a.Pool, a.DRADevices = nil, e.claim, b.hostname, []string{e.draDevice}
			if claims[e.draDevice] > 1 {
				a.ShareID = e.namespace + "-" + e.claim
			}
		}
		allocs = append(allocs, a)
	}
	return allocs
}

// allocatable returns a copy of the devices allocatable at since ns after the
// start.
func (b *Backend) allocatable(since int64) []Allocatable {
	alloc := b.invs[b.inventoryAt(since)].alloc
	avail := make([]Allocatable, len(alloc))
	for i, a := range alloc {
		avail[i] = Allocatable{Resource: a.Resource, DeviceIDs: append([]string(nil), a.DeviceIDs...)}
	}
	return avail
}

// advertised lists the devices the device plugin advertises of inv: whole GPUs
// as nvidia.com/gpu, time-sliced GPUs as replicas of their group's resource
// (nvidia.com/gpu.shared unless it says nvidia.com/gpu), MIG instances as
// nvidia.com/mig-<profile>, HAMi GPUs as their virtual devices
// "GPU-<uuid>-<k>" of nvidia.com/gpu.
func (b *Backend) advertised(sc *Scenario, inv collector.Inventory) []Allocatable {
	byRes := map[string][]string{}
	i := 0
	for _, g := range sc.GPUs {
		for range max(g.Count, 1) {
			gpu := inv.GPUs[i]
			i++
			switch {
			case b.draGPUs[gpu.Index]: // the DRA driver's, not the device plugin's
			case gpu.MIGEnabled:
				for _, in := range gpu.Instances {
					r := resourceMIGPrefix + in.Profile
					byRes[r] = append(byRes[r], in.UUID)
				}
			case g.HAMi != nil:
				for k := range g.HAMi.split() {
					byRes[resourceGPU] = append(byRes[resourceGPU], fmt.Sprintf("%s-%d", gpu.UUID, k))
				}
			case g.Replicas > 0:
				res := g.replicaResource()
				for r := range g.Replicas {
					byRes[res] = append(byRes[res], fmt.Sprintf("%s::%d", gpu.UUID, r))
				}
			default:
				byRes[resourceGPU] = append(byRes[resourceGPU], gpu.UUID)
			}
		}
	}
	out := make([]Allocatable, 0, len(byRes))
	for r, ids := range byRes {
		out = append(out, Allocatable{Resource: r, DeviceIDs: ids})
	}
	sort.Slice(out, func(x, y int) bool { return out[x].Resource < out[y].Resource })
	return out
}

// writeEntry writes the processes and the pod log directory of one entry.
func writeEntry(t kubeletsim.Tree, procDir, podLogsDir string, e *podEntry) error {
	for _, pid := range e.pids {
		if err := kubeletsim.WriteProcess(t, procDir, pid, e.uid, e.containerID); err != nil {
			return fmt.Errorf("write sim procfs: %w", err)
		}
	}
	if err := kubeletsim.WritePodLogs(t, podLogsDir, e.namespace, e.pod, e.uid, e.container); err != nil {
		return fmt.Errorf("write sim pod logs dir: %w", err)
	}
	return nil
}

// removeEntry removes what writeEntry wrote: the entry's processes ended.
func removeEntry(t kubeletsim.Tree, procDir, podLogsDir string, e *podEntry) error {
	for _, pid := range e.pids {
		if err := kubeletsim.RemoveProcess(t, procDir, pid); err != nil {
			return fmt.Errorf("remove sim process: %w", err)
		}
	}
	if err := kubeletsim.RemovePodLogs(t, podLogsDir, e.namespace, e.pod, e.uid); err != nil {
		return fmt.Errorf("remove sim pod logs dir: %w", err)
	}
	return nil
}
