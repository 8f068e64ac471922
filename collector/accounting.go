package collector

import (
	"math"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/cost"
)

// HolderSource gives the latest pod attribution; *attribution.Client is one.
// Current must not block and may return nil before the first refresh.
type HolderSource interface {
	Current() *attribution.Snapshot
}

// deviceTable is implemented by holder sources that resolve legacy MIG and GKE
// device IDs through the inventory (*attribution.Client does).
type deviceTable interface {
	SetDevices([]attribution.Device)
}

// AttributionDevices lists the devices of inv, for resolving kubelet device IDs.
func AttributionDevices(inv Inventory) []attribution.Device {
	var devs []attribution.Device
	for _, g := range inv.GPUs {
		devs = append(devs, attribution.Device{UUID: g.UUID, Minor: g.Minor, GPUInstanceID: -1, ComputeInstanceID: -1, MemoryMiB: g.MemoryTotalMiB})
		for _, in := range g.Instances {
			devs = append(devs, attribution.Device{
				UUID: in.UUID, ParentUUID: g.UUID, Minor: g.Minor,
				GPUInstanceID: in.GPUInstanceID, ComputeInstanceID: in.ComputeInstanceID,
			})
		}
	}
	return devs
}

// accountant feeds each sample to the cost ledger. It is owned by the sampler
// goroutine; its buffers are reused from tick to tick so the ledger sees the
// same shapes and allocates nothing in steady state.
type accountant struct {
	ledger *cost.Ledger
	// maxCharged is the longest interval one sample's readings are charged
	// for (2 × the sampling interval); the rest of a longer gap is unknown.
	maxCharged time.Duration
	last       time.Time // time of the previous tick; zero before the first
	// states are the ledger inputs of this tick, prev those of the previous
	// one (the last good sample); the two arrays swap every tick. gap holds
	// the inputs of an unmeasured gap (cost.HeldThroughout of the two).
	states, prev, gap []cost.GPUState
	hostable          []cost.HostableSlices // per GPU of the inventory, from its MIG layout
}

// chargeFactor × the sampling interval is the longest stretch one sample's
// readings are charged for: a late tick still counts whole, a backend outage
// does not.
const chargeFactor = 2

// setInventory works out what the ledger needs of a new inventory: which free
// MIG slices could still host an instance.
func (a *accountant) setInventory(inv Inventory) {
	a.hostable = make([]cost.HostableSlices, len(inv.GPUs))
	for i, g := range inv.GPUs {
		a.hostable[i] = hostableSlices(g)
	}
}

// hostableSlices returns the free slices of g that further instances of its
// model's profile table could use; not Known when g is not in MIG mode, its
// model has no table, or its layout is not one the table allows.
func hostableSlices(g GPU) cost.HostableSlices {
	if !g.MIGEnabled {
		return cost.HostableSlices{}
	}
	layout := make([]string, len(g.Instances))
	for j, in := range g.Instances {
		layout[j] = in.Profile
	}
	return cost.HostableFor(g.Model, layout)
}

// advance charges the time since the previous tick at the readings of s — at
// most maxCharged of it; the rest as unmeasured, to the holders present both
// at the previous tick and in s (cost.HeldThroughout) — and returns the ledger's
// totals and rates. attr nil (attribution off), without holders (stale or
// never refreshed), or with a DRA allocation it could not map
// (attribution.Snapshot.HoldersKnown), leaves every device's holders unknown:
// the part of a GPU or MIG instance no holder holds is unknown, not
// unallocated. So does a GPU or MIG instance the node does not advertise
// (attribution.Snapshot.Advertised): no holder of it means only that the
// kubelet and the ResourceSlices do not offer it; and one on which the holder
// of a fractional share is unresolved (attribution.Snapshot.HoldersKnownOn).
// An unmapped DRA allocation also makes MIG slices in no instance unknown: it
// may hold a dynamic MIG instance the inventory lacks.
func (a *accountant) advance(inv Inventory, s Sample, act []Activity, attr *attribution.Snapshot, usage []DeviceUsage) ([]cost.Total, []cost.GPURate, []cost.Estimate) {
	var dt time.Duration
	if !a.last.IsZero() {
		dt = s.Time.Sub(a.last)
	}
	a.last = s.Time
	known := attr != nil && attr.HoldersKnown()
	unmapped := attr != nil && len(attr.UnmappedDRA) > 0
	a.states, a.prev = a.prev, a.states
	a.states = resize(a.states, len(inv.GPUs))
	for i := range inv.GPUs {
		g, r, st := &inv.GPUs[i], &s.GPUs[i], &a.states[i]
		st.UUID, st.Model, st.MIG, st.Lost = g.UUID, g.Model, g.MIGEnabled, r.Lost
		st.HoldersKnown = known && attr.HoldersKnownOn(g.UUID, "")
		st.FreeSlicesMayBeHeld = unmapped
		st.PowerW, _ = r.Values.Get(PowerUsage)
		st.Activity = act[i].Ratio
		st.Hostable = a.hostable[i] // setInventory saw inv
		if !g.MIGEnabled {
			st.Holders = holdersOf(st.Holders, attr, g.UUID, usage)
			st.Instances = st.Instances[:0]
			continue
		}
		st.Holders = st.Holders[:0]
		st.Instances = resize(st.Instances, len(g.Instances))
		for j := range g.Instances {
			in, cs := &g.Instances[j], &st.Instances[j]
			cs.UUID, cs.ComputeSlices, cs.MemorySlices = in.UUID, in.ComputeSlices, in.MemorySlices
			cs.HoldersKnown = known && attr.HoldersKnownOn(in.UUID, g.UUID)
			cs.Activity = math.NaN()
			if j < len(act[i].Instances) {
				cs.Activity = act[i].Instances[j].Ratio
			}
			cs.Holders = holdersOf(cs.Holders, attr, in.UUID, usage)
		}
	}
	if gap := dt - a.maxCharged; a.maxCharged > 0 && gap > 0 {
		// Only holders present at both ends of the gap are charged for it;
		// the rest of each device is unknown with no holder.
		a.gap = cost.HeldThroughout(a.gap, a.prev, a.states)
		a.ledger.AdvanceUnmeasured(gap, a.gap)
		dt = a.maxCharged
	}
	a.ledger.Advance(dt, a.states)
	return a.ledger.AppendTotals(nil), a.ledger.AppendRates(nil), a.ledger.AppendEstimates(nil)
}

// holdersOf fills dst with the ledger holders of device uuid. On a shared
// device whose holders' own activity is known from process accounting, the
// shares follow that activity (cost.ActivityShares), for a lone holder too;
// otherwise they are the kubelet's replica shares (replicas held over replicas
// offered). Fractional shares (attr priced by sharePricer) are what the
// holders reserved whatever they use: their activity only makes them busy or
// idle — their own where process accounting gives it, else the device's,
// marked estimated when they share the device; a KAI reservation pod runs
// nothing, so its hold is idle.
func holdersOf(dst []cost.Holder, attr *attribution.Snapshot, uuid string, usage []DeviceUsage) []cost.Holder {
	dst = dst[:0]
	if attr == nil {
		return dst
	}
	u := usageOf(usage, uuid)
	hs := attr.Holders[uuid]
	for _, h := range hs {
		key := cost.HolderKey{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container}
		ch := cost.Holder{Key: key, Share: h.Share, Activity: u.activity(key)}
		switch {
		case h.Reservation:
			ch.Activity = 0
		case h.Fractional:
			ch.ActivityEstimated = math.IsNaN(ch.Activity) && len(hs) > 1
		}
		dst = append(dst, ch)
	}
	if u == nil || fractional(hs) {
		return dst
	}
	var actBuf, replicaBuf, shareBuf [16]float64
	acts, replicas := actBuf[:0], replicaBuf[:0]
	for _, h := range dst {
		acts, replicas = append(acts, h.Activity), append(replicas, h.Share)
	}
	for k, share := range cost.ActivityShares(shareBuf[:0], acts, replicas) {
		dst[k].Share = share
	}
	return dst
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}
