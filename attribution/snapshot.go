package attribution

import (
	"cmp"
	"slices"
	"strings"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Sharing says how a holder shares the device it holds: the `sharing` label of
// gputally_gpu_allocation.
type Sharing string

// The sharing modes.
const (
	// Exclusive: the container holds a whole physical GPU.
	Exclusive Sharing = "exclusive"
	// TimeSlicing: the container holds replicas ("::<n>", "/vgpu<n>") of a GPU or
	// MIG instance that the device plugin time-slices among its holders.
	TimeSlicing Sharing = "time-slicing"
	// MPS: as TimeSlicing, for a resource named in Config.MPSResources. The device
	// plugin reports MPS and time-slicing replicas with the same IDs, so only the
	// resource name can tell them apart.
	MPS Sharing = "mps"
	// MIG: the container holds a whole MIG instance.
	MIG Sharing = "mig"
	// HAMi: the container holds the memory and cores of a GPU that HAMi's
	// hami.io/vgpu-devices-allocated annotation grants it (hami.go).
	HAMi Sharing = "hami"
	// KAI: the container holds the gpu-fraction or gpu-memory portion of a
	// GPU that KAI-Scheduler reserved for its GPU group, or is the group's
	// reservation pod while no sharer holds the GPU (kai.go).
	KAI Sharing = "kai"
)

// Holder is one container holding a device, with its share of it.
type Holder struct {
	Namespace string
	Pod       string
	Container string
	// Resource is the extended resource name, e.g. "nvidia.com/gpu.shared";
	// "" for a KAI sharer, which asks by annotation (its reservation pod holds
	// the GPU as nvidia.com/gpu).
	Resource string
	Sharing  Sharing
	// Replicas is how many replicas of the device the container holds (1 unless
	// TimeSlicing or MPS).
	Replicas int
	// Share is the container's part of the device, 0–1: its replicas over the
	// replicas the device offers (Snapshot.Replicas), so replicas no container
	// holds are left over. When the kubelet does not advertise the device, or
	// advertises fewer replicas than its holders hold, the replicas held by all
	// holders stand in for those offered. The shares of a device sum to at most 1.
	Share float64
	// Claim is the ResourceClaim (in Namespace) through which a DRA holder holds
	// the device; "" for device-plugin holders.
	Claim string
	// ShareID is the share_id of a DRA holder's allocation when the driver
	// shares the device among claims (consumable capacity); "" otherwise.
	ShareID string

	// Fractional is true for a holder of a share of the device's capacity:
	// HAMi and KAI holders, and DRA holders whose claims consumed capacity the
	// driver publishes. Share is then 0 as attribution reports it: the
	// collector sets it from Memory and Cores by the price book's policy
	// (cost.FractionalShares), over the device's fractional holders.
	Fractional bool
	// Memory and Cores are what a fractional holder reserved, as fractions of
	// the capacity the device offers: memory (HAMi's registered memory, a KAI
	// portion, a DRA claim's consumed memory) and compute (HAMi's gpucores
	// over the registered cores; 0 for no core limit, which is no reservation).
	Memory, Cores float64
	// Reservation is true for a KAI reservation pod that no sharer of its
	// group holds the GPU through: it holds the whole GPU (Memory 1), and
	// nothing runs in it, so its time is idle.
	Reservation bool
}

// Snapshot is what the kubelet reported at one refresh. It is immutable once
// published: callers must not modify it or its maps and slices, and may read it
// from any number of goroutines.
type Snapshot struct {
	// Up is true when the last refresh succeeded.
	Up bool
	// LastSuccess is when a refresh last succeeded; zero before the first.
	LastSuccess time.Time
	// Holders maps a device UUID ("GPU-…" physical GPU or "MIG-…" MIG instance) to
	// the containers holding it, sorted by namespace, pod, container and resource.
	// A device no container holds is absent. Nil when there is no usable data
	// (before the first success, or once the last success is older than StaleAfter).
	Holders map[string][]Holder
	// Allocatable maps a resource name to the sorted UUIDs of the devices the kubelet
	// can allocate for it (replicas collapsed to their device).
	Allocatable map[string][]string
	// Replicas maps a device UUID to how many replicas of it the kubelet can
	// allocate (GetAllocatableResources): the time-slicing or MPS replica
	// count, 1 for a device offered whole. A device the kubelet does not
	// advertise is absent. Nil with Holders.
	Replicas map[string]int
	// DRAPublished holds the device UUIDs the node's ResourceSlices publish for
	// the tracked DRA drivers at the last successful refresh
	// (SliceSource.Published; a GPU's UUID also stands for a dynamic MIG device
	// of it without a UUID). Nil with Holders, or when ResourceSlice lookups
	// are off. Shared: callers must not modify it.
	DRAPublished map[string]bool
	// UnknownIDs counts, since the Client started, the device IDs of tracked resources
	// that did not parse or name no device of this node (one per ID per refresh).
	UnknownIDs uint64
	// UnmappedDRA lists the DRA allocations of tracked drivers that could not be
	// mapped to a GPU or MIG instance of this node, sorted by namespace, pod,
	// container and device. Some device of the node is held by each, but which
	// one is not known: see docs/attribution.md for how the ledger counts them.
	UnmappedDRA []DRAAllocation
	// UnmappedDRATotal counts, since the Client started, the unmapped DRA
	// allocations (one per allocation per refresh).
	UnmappedDRATotal uint64
	// Unresolved lists the holders of fractional shares (HAMi, KAI, DRA by
	// consumed capacity) that could not be resolved, sorted by namespace,
	// pod, container, GPU and reason: see HoldersKnownOn.
	Unresolved []Unresolved
	// UnresolvedTotal counts, since the Client started, the unresolved
	// holders by reason (one per holder per refresh).
	UnresolvedTotal [NumUnresolvedReasons]uint64
}

// Exclusive returns the only holder of a device when exactly one container holds
// all of it: the case where device series carry pod labels. A lone holder of
// time-slicing or MPS replicas does not hold the whole device (the next pod
// scheduled onto a free replica shares it), so its device series carry no pod
// labels; labels that come and go with a neighbour would split the series.
func (s *Snapshot) Exclusive(uuid string) (Holder, bool) {
	hs := s.Holders[uuid]
	if len(hs) != 1 || hs[0].Share != 1 || !wholeDevice(hs[0]) {
		return Holder{}, false
	}
	return hs[0], true
}

// wholeDevice reports whether h's kind of hold keeps the device to itself: a
// whole GPU or MIG instance from a device plugin, or a DRA allocation that is
// not one share of a shared device.
func wholeDevice(h Holder) bool {
	return h.Sharing == Exclusive || h.Sharing == MIG || (h.Sharing == DRA && h.ShareID == "")
}

// resourceFilter selects the extended resources the Client tracks.
type resourceFilter struct {
	extra map[string]bool
	mps   map[string]bool
}

func newResourceFilter(extra, mps []string) resourceFilter {
	f := resourceFilter{extra: make(map[string]bool), mps: make(map[string]bool)}
	for _, r := range extra {
		f.extra[r] = true
	}
	for _, r := range mps {
		f.mps[r] = true
		f.extra[r] = true
	}
	return f
}

// tracked reports whether resource names NVIDIA GPUs, MIG instances or an extra resource.
func (f resourceFilter) tracked(resource string) bool {
	return resource == "nvidia.com/gpu" || resource == "nvidia.com/gpu.shared" ||
		strings.HasPrefix(resource, "nvidia.com/mig-") || f.extra[resource]
}

// sharing infers how a container holding id through resource shares its device.
func (f resourceFilter) sharing(id DeviceID, resource string) Sharing {
	switch {
	case id.Replica >= 0 && f.mps[resource]:
		return MPS
	case id.Replica >= 0:
		return TimeSlicing
	case id.Form == FormMIG || id.Form == FormLegacyMIG || id.GPUInstanceID >= 0:
		return MIG
	default:
		return Exclusive
	}
}

// holderKey identifies one container's hold on one device through one resource.
type holderKey struct {
	device, namespace, pod, container, resource string
}

// building accumulates one holder while a snapshot is built.
type building struct {
	sharing  Sharing
	replicas []int // distinct replica indices; one -1 entry for a non-replicated hold
}

// tables is what one refresh yields.
type tables struct {
	holders     map[string][]Holder
	allocatable map[string][]string
	replicas    map[string]int // device UUID → replicas offered
	unknown     []string       // raw IDs that did not resolve, one per occurrence
	unmappedDRA []DRAAllocation
	vgpu        []vgpuHold   // containers holding HAMi virtual devices (fractional.go)
	unresolved  []Unresolved // holders of fractional shares that could not be resolved
}

// buildTables turns a List and a GetAllocatableResources answer into holders and
// allocatable devices. Malformed entries (nil pods, containers or devices, empty
// or unknown IDs) are skipped; unresolvable IDs of tracked resources are returned
// in unknown.
func buildTables(list *podresourcesv1.ListPodResourcesResponse, alloc *podresourcesv1.AllocatableResourcesResponse,
	res *resolver, filter resourceFilter) tables {
	var t tables
	acc := make(map[holderKey]*building)
	for _, pod := range list.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			for _, dev := range ctr.GetDevices() {
				resource := dev.GetResourceName()
				if !filter.tracked(resource) {
					continue
				}
				for _, raw := range dev.GetDeviceIds() {
					uuid, id, err := res.resolve(raw)
					if err != nil {
						t.unknown = append(t.unknown, raw)
						continue
					}
					if id.VGPU >= 0 {
						// HAMi's: the pod's annotation, not this ID, says what it holds.
						t.vgpu = append(t.vgpu, vgpuHold{pod.GetNamespace(), pod.GetName(), ctr.GetName(), resource, uuid})
						continue
					}
					k := holderKey{uuid, pod.GetNamespace(), pod.GetName(), ctr.GetName(), resource}
					b := acc[k]
					if b == nil {
						b = &building{sharing: filter.sharing(id, resource)}
						acc[k] = b
					}
					if !slices.Contains(b.replicas, id.Replica) {
						b.replicas = append(b.replicas, id.Replica)
					}
				}
			}
		}
	}
	t.allocatable, t.replicas = allocatable(alloc, res, filter, &t.unknown)
	t.holders = make(map[string][]Holder)
	held := make(map[string]int)
	for k, b := range acc {
		held[k.device] += len(b.replicas)
	}
	for k, b := range acc {
		// Free replicas stay unpaid: the share is of the replicas offered.
		offered := max(t.replicas[k.device], held[k.device])
		t.holders[k.device] = append(t.holders[k.device], Holder{
			Namespace: k.namespace,
			Pod:       k.pod,
			Container: k.container,
			Resource:  k.resource,
			Sharing:   b.sharing,
			Replicas:  len(b.replicas),
			Share:     float64(len(b.replicas)) / float64(offered),
		})
	}
	for _, hs := range t.holders {
		slices.SortFunc(hs, compareHolders)
	}
	return t
}

// allocatable returns, from a GetAllocatableResources answer, the sorted device
// UUIDs per tracked resource and the replicas offered per device (distinct
// replica indices over all tracked resources; a device offered whole counts
// one, and so does a GPU HAMi offers as virtual devices). IDs that do not
// resolve are appended to unknown.
func allocatable(alloc *podresourcesv1.AllocatableResourcesResponse, res *resolver, filter resourceFilter, unknown *[]string) (map[string][]string, map[string]int) {
	byResource := make(map[string][]string)
	seen := make(map[string][]int) // device UUID → distinct replica indices
	for _, dev := range alloc.GetDevices() {
		resource := dev.GetResourceName()
		if !filter.tracked(resource) {
			continue
		}
		for _, raw := range dev.GetDeviceIds() {
			uuid, id, err := res.resolve(raw)
			if err != nil {
				*unknown = append(*unknown, raw)
				continue
			}
			byResource[resource] = append(byResource[resource], uuid)
			// HAMi's virtual devices (Replica -1) offer the GPU once, not
			// replicas of it: its holders' shares come from their pods'
			// annotations.
			if !slices.Contains(seen[uuid], id.Replica) {
				seen[uuid] = append(seen[uuid], id.Replica)
			}
		}
	}
	for r, uuids := range byResource {
		slices.Sort(uuids)
		byResource[r] = slices.Compact(uuids)
	}
	replicas := make(map[string]int, len(seen))
	for uuid, ids := range seen {
		replicas[uuid] = len(ids)
	}
	return byResource, replicas
}

func compareHolders(a, b Holder) int {
	return cmp.Or(
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Pod, b.Pod),
		cmp.Compare(a.Container, b.Container),
		cmp.Compare(a.Resource, b.Resource),
	)
}
