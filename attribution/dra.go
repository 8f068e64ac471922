package attribution

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultDRADriver is the DRA driver whose devices are attributed by default:
// NVIDIA's GPU driver (sigs.k8s.io/dra-driver-nvidia-gpu).
const DefaultDRADriver = "gpu.nvidia.com"

// DRA is the sharing mode of a container that holds a device through a
// Dynamic Resource Allocation claim rather than a device plugin.
const DRA Sharing = "dra"

// DRADeviceRef names one device a DRA driver published: the driver, pool and
// device of a ClaimResource in the kubelet's dynamic_resources.
type DRADeviceRef struct {
	Driver string // e.g. "gpu.nvidia.com"
	Pool   string // the NVIDIA driver names its pool after the node
	Device string // e.g. "gpu-0", "gpu-1-mig-1g10gb-19-6"
}

func (r DRADeviceRef) String() string { return r.Driver + "/" + r.Pool + "/" + r.Device }

// SliceDevice is what a node's ResourceSlices say about one DRA device.
type SliceDevice struct {
	Type string // the driver's `type` attribute: "gpu", "mig", "vfio"; "" when absent
	// UUID is "GPU-…" or "MIG-…"; "" when the slice carries none, as for a
	// dynamic MIG device that is not prepared yet.
	UUID string
	// ParentUUID is the "GPU-…" UUID of a MIG device's GPU; "" otherwise.
	ParentUUID string
	// Profile is a MIG device's profile, e.g. "1g.10gb"; "" otherwise.
	Profile string
	// PlacementStart is the first memory slice a MIG device occupies on its GPU;
	// -1 when the slice does not say.
	PlacementStart int
	// Capacity is what the device offers of each capacity its slice publishes
	// (positive amounts only); nil when none. Claims that share the device
	// consume part of it (ClaimSource).
	Capacity map[string]float64
}

// SliceSource looks devices up in the node's ResourceSlices. Implementations
// answer from memory (a watch cache or the simulator), never block, and are safe
// for concurrent use. *SliceWatcher and *StaticSlices are two.
type SliceSource interface {
	// Device returns what the slices publish for ref, and whether they publish it.
	Device(ref DRADeviceRef) (SliceDevice, bool)
	// Status says whether the source is current.
	Status() SliceStatus
	// Published returns the device UUIDs the slices publish for the tracked
	// drivers: each device's "GPU-…" or "MIG-…" UUID, and for a MIG device
	// without one (dynamic MIG, not prepared yet) its parent GPU's UUID. The
	// map is shared: callers must not modify it.
	Published() map[string]bool
}

// MIGSlot is one MIG instance of the backend's inventory, with where it sits on
// its GPU: what a dynamic MIG device without a UUID is matched against.
type MIGSlot struct {
	UUID       string // "MIG-…"
	ParentUUID string // "GPU-…"
	Profile    string // e.g. "1g.10gb"
	// PlacementStart is the first memory slice of the instance; -1 when the
	// backend does not know it.
	PlacementStart int
}

// DRAAllocation is one device of a DRA claim, held by one container, that could
// not be mapped to a GPU or MIG instance of this node.
type DRAAllocation struct {
	Namespace, Pod, Container string
	Claim                     string // name of the ResourceClaim, in Namespace
	Device                    DRADeviceRef
	Reason                    string // why it could not be mapped, for logs and tests
}

// draMapper maps the DRA devices of the kubelet's dynamic_resources to device
// UUIDs. Its layout is set from any goroutine; the rest is used by Refresh only
// (under Client.refreshMu).
type draMapper struct {
	drivers map[string]bool
	slices  SliceSource // nil: DRA devices cannot be mapped
	claims  ClaimSource // nil: consumed capacity cannot be read
	log     *slog.Logger

	mu     sync.Mutex
	layout []MIGSlot

	total  uint64          // unmapped allocations seen, one per allocation per refresh
	logged map[string]bool // device refs whose failure was logged
}

// maxLoggedDRA bounds how many distinct unmapped DRA devices are logged.
const maxLoggedDRA = 100

// newDRAMapper returns a mapper of the devices of drivers (none means
// DefaultDRADriver) that looks them up in slices (nil: lookups are off) and
// reads the capacity claims consumed of shared devices from claims.
func newDRAMapper(drivers []string, slices SliceSource, claims ClaimSource, log *slog.Logger) *draMapper {
	return &draMapper{drivers: driverSet(drivers), slices: slices, claims: claims, log: log, logged: make(map[string]bool)}
}

// published returns the device UUIDs the slice source publishes
// (SliceSource.Published); nil when lookups are off.
func (m *draMapper) published() map[string]bool {
	if m.slices == nil {
		return nil
	}
	return m.slices.Published()
}

func (m *draMapper) setLayout(slots []MIGSlot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.layout = slices.Clone(slots)
}

// resolve maps one DRA device to the UUID of a GPU or MIG instance of this
// node, and returns what its slice says of it. res checks UUIDs against the
// device table.
func (m *draMapper) resolve(ref DRADeviceRef, res *resolver) (string, SliceDevice, error) {
	if m.slices == nil {
		return "", SliceDevice{}, fmt.Errorf("DRA device %s: ResourceSlice lookups are off (--attribution.dra.enabled)", ref)
	}
	d, ok := m.slices.Device(ref)
	if !ok {
		return "", d, fmt.Errorf("DRA device %s: not in the node's ResourceSlices", ref)
	}
	if d.UUID != "" {
		if !res.knows(d.UUID) {
			return "", d, fmt.Errorf("DRA device %s: UUID %s names no device of this node", ref, d.UUID)
		}
		return d.UUID, d, nil
	}
	if d.ParentUUID == "" || d.Profile == "" {
		return "", d, fmt.Errorf("DRA device %s: its slice entry has neither a UUID nor a MIG parent and profile", ref)
	}
	uuid, err := m.placeMIG(ref, d)
	return uuid, d, err
}

// placeMIG finds the inventory's MIG instance of profile d.Profile on GPU
// d.ParentUUID at d.PlacementStart. Without a placement on either side, the
// profile must be unique on that GPU.
func (m *draMapper) placeMIG(ref DRADeviceRef, d SliceDevice) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var found []string
	for _, s := range m.layout {
		if s.ParentUUID != d.ParentUUID || s.Profile != d.Profile {
			continue
		}
		if d.PlacementStart >= 0 && s.PlacementStart >= 0 && s.PlacementStart != d.PlacementStart {
			continue
		}
		found = append(found, s.UUID)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("DRA device %s: no %s instance at placement %d on %s in the inventory",
			ref, d.Profile, d.PlacementStart, d.ParentUUID)
	default:
		return "", fmt.Errorf("DRA device %s: %d %s instances on %s could be it (placement unknown)",
			ref, len(found), d.Profile, d.ParentUUID)
	}
}

// draHold is one container's part of one claim on one device while a
// snapshot is built.
type draHold struct {
	namespace, pod, container, driver, claim, shareID string
}

// draAlloc identifies one allocation of a device: a claim, or one share of a
// claim (share_id), on it.
type draAlloc struct {
	namespace, claim, shareID string
}

func compareDRAAllocs(a, b draAlloc) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.claim, b.claim), cmp.Compare(a.shareID, b.shareID))
}

// draShare is what an allocation consumed of a device shared by consumable
// capacity, as fractions of the capacity the device offers.
type draShare struct{ memory, cores float64 }

// addHolders adds to t the holders of the DRA devices in list and records the
// allocations that could not be mapped. A device's DRA holders split it equally
// per allocation (claim and share ID), and an allocation equally among the
// containers that hold it; on a device whose slice publishes capacity, an
// allocation with a share ID holds what its claim consumed of that capacity
// instead (draFractions), as fractional holders, and one whose consumed
// capacity cannot be read is unresolved.
func (m *draMapper) addHolders(ctx context.Context, t *tables, list *podresourcesv1.ListPodResourcesResponse, res *resolver) {
	holds := make(map[string]map[draAlloc][]draHold) // device UUID → allocation → containers
	shares := make(map[string]map[draAlloc]draShare) // device UUID → allocation → consumed, on capacity devices
	for _, pod := range list.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			for _, dyn := range ctr.GetDynamicResources() {
				for _, cr := range dyn.GetClaimResources() {
					if !m.drivers[cr.GetDriverName()] {
						continue
					}
					ref := DRADeviceRef{Driver: cr.GetDriverName(), Pool: cr.GetPoolName(), Device: cr.GetDeviceName()}
					uuid, dev, err := m.resolve(ref, res)
					if err != nil {
						t.unmappedDRA = append(t.unmappedDRA, DRAAllocation{
							Namespace: pod.GetNamespace(), Pod: pod.GetName(), Container: ctr.GetName(),
							Claim: dyn.GetClaimName(), Device: ref, Reason: err.Error(),
						})
						continue
					}
					a := draAlloc{namespace: dyn.GetClaimNamespace(), claim: dyn.GetClaimName(), shareID: cr.GetShareId()}
					h := draHold{pod.GetNamespace(), pod.GetName(), ctr.GetName(), ref.Driver, dyn.GetClaimName(), cr.GetShareId()}
					if len(dev.Capacity) > 0 && a.shareID != "" {
						if _, seen := shares[uuid][a]; !seen {
							share, err := m.consumed(ctx, a, ref, dev)
							if err != nil {
								t.unresolved = append(t.unresolved, Unresolved{Namespace: h.namespace, Pod: h.pod, Container: h.container,
									GPU: uuid, Reason: ReasonDRAClaimUnavailable, Detail: err.Error()})
								continue
							}
							if shares[uuid] == nil {
								shares[uuid] = make(map[draAlloc]draShare)
							}
							shares[uuid][a] = share
						}
					}
					if holds[uuid] == nil {
						holds[uuid] = make(map[draAlloc][]draHold)
					}
					if !slices.Contains(holds[uuid][a], h) {
						holds[uuid][a] = append(holds[uuid][a], h)
					}
				}
			}
		}
	}
	for uuid, allocs := range holds {
		hs := draHolders(allocs, shares[uuid])
		if prior := t.holders[uuid]; len(prior) > 0 {
			// Device-plugin and DRA holders of one device: should not happen;
			// each kind gets half.
			hs = append(hs, prior...)
			for i := range hs {
				hs[i].Share /= 2
			}
		}
		slices.SortFunc(hs, compareHolders)
		t.holders[uuid] = hs
	}
	slices.SortFunc(t.unmappedDRA, func(a, b DRAAllocation) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Container, b.Container), cmp.Compare(a.Device.String(), b.Device.String()))
	})
}

// consumed reads what allocation a consumed of device dev (ref), as fractions.
func (m *draMapper) consumed(ctx context.Context, a draAlloc, ref DRADeviceRef, dev SliceDevice) (draShare, error) {
	if m.claims == nil {
		return draShare{}, fmt.Errorf("claim %s/%s: ResourceClaim lookups are off", a.namespace, a.claim)
	}
	used, err := m.claims.ConsumedCapacity(ctx, a.namespace, a.claim, ref, a.shareID)
	if err != nil {
		return draShare{}, err
	}
	mem, cores := draFractions(dev.Capacity, used)
	return draShare{memory: mem, cores: cores}, nil
}

// draHolders returns the holders of one device from its allocations: equal
// shares per allocation and container, or, when the device is shared by
// consumed capacity (shares not empty), each container its allocation's
// consumed fractions over the allocation's containers (an allocation without a
// share ID there holds the whole device).
func draHolders(allocs map[draAlloc][]draHold, shares map[draAlloc]draShare) []Holder {
	var hs []Holder
	// In a fixed order, so that a container in two claims names the same
	// one (the first) at every refresh.
	for _, a := range slices.SortedFunc(maps.Keys(allocs), compareDRAAllocs) {
		ctrs := allocs[a]
		n := float64(len(ctrs))
		for _, h := range ctrs {
			add := Holder{
				Namespace: h.namespace, Pod: h.pod, Container: h.container,
				Resource: h.driver, Sharing: DRA, Replicas: 1, Claim: h.claim, ShareID: h.shareID,
			}
			if shares != nil {
				s, ok := shares[a]
				if !ok {
					s = draShare{memory: 1, cores: 1}
				}
				add.Fractional, add.Memory, add.Cores = true, s.memory/n, s.cores/n
			} else {
				add.Share = 1 / float64(len(allocs)) / n
			}
			i := slices.IndexFunc(hs, func(o Holder) bool {
				return o.Namespace == h.namespace && o.Pod == h.pod && o.Container == h.container
			})
			if i >= 0 { // one container in two claims on one device
				hs[i].Share += add.Share
				hs[i].Memory += add.Memory
				hs[i].Cores += add.Cores
				hs[i].ShareID = cmp.Or(hs[i].ShareID, h.shareID)
				continue
			}
			hs = append(hs, add)
		}
	}
	return hs
}

// note counts and logs (once per device) the unmapped allocations of a
// successful refresh. It runs under Client.refreshMu.
func (m *draMapper) note(unmapped []DRAAllocation) {
	for _, a := range unmapped {
		m.total++
		key := a.Device.String()
		if !m.logged[key] && len(m.logged) < maxLoggedDRA {
			m.logged[key] = true
			m.log.Warn("DRA device could not be mapped to a GPU of this node; its time counts as unknown",
				"device", key, "claim", a.Namespace+"/"+a.Claim, "pod", a.Namespace+"/"+a.Pod, "reason", a.Reason)
		}
	}
}

// HoldersKnown reports whether s says who holds every device of the node: false
// before the first successful refresh, once the holders are stale (Holders nil),
// while some DRA allocation is unmapped, and while the holder of a fractional
// share on a GPU that is not known is unresolved (then some device is held, but
// which is not known). Where it is false, the part of a device that no holder
// holds is `unknown` time, never `unallocated` (docs/attribution.md).
func (s *Snapshot) HoldersKnown() bool {
	return s.Holders != nil && len(s.UnmappedDRA) == 0 &&
		!slices.ContainsFunc(s.Unresolved, func(u Unresolved) bool { return u.GPU == "" })
}

// HoldersKnownOn reports whether s says who holds all of device uuid (parent
// is a MIG instance's GPU, "" for a GPU): the node's holders are known
// (HoldersKnown), the node advertises the device (Advertised), and no
// unresolved holder of a fractional share holds part of it or of its GPU.
// Where it is false, the part of the device no holder holds is `unknown`.
func (s *Snapshot) HoldersKnownOn(uuid, parent string) bool {
	if !s.HoldersKnown() || !s.Advertised(uuid, parent) {
		return false
	}
	return !slices.ContainsFunc(s.Unresolved, func(u Unresolved) bool { return u.GPU == uuid || (parent != "" && u.GPU == parent) })
}

// Advertised reports whether the node offers device uuid for allocation, so
// that nobody holding it positively means it is free: the kubelet lists it in
// GetAllocatableResources for a tracked resource (Replicas), some container
// holds it (Holders), or the node's ResourceSlices publish it (DRAPublished).
// parent is a MIG instance's GPU UUID ("" for a GPU): a published GPU,
// or a dynamic MIG device of that GPU without a UUID, advertises every MIG
// instance of it. A device not advertised (a device plugin not registered
// yet, a GPU on an untracked resource name) has unknown holders: its time is
// `unknown`, never `unallocated` (docs/attribution.md).
func (s *Snapshot) Advertised(uuid, parent string) bool {
	_, offered := s.Replicas[uuid]
	_, held := s.Holders[uuid]
	return offered || held || s.DRAPublished[uuid] || (parent != "" && s.DRAPublished[parent])
}
