package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/mig"
)

// maxMIGChanges bounds the `mig` events of a scenario: each makes a new
// inventory of the node, which the backend keeps.
const maxMIGChanges = 256

// migEpoch is one MIG layout of a GPU and the time from which it is in force,
// until the next epoch's.
type migEpoch struct {
	from   int64 // ns after the start; 0 for the scenario's own layout
	event  int   // the `mig` event that made it; -1 for gpus[].mig
	layout []string
	placed []mig.Placed
	ids    []int // GPU instance IDs, per instance
	slots  []int // per instance: the slot (life of an instance) it is
}

// migSlot is one MIG instance over its life: from the layout that made it
// until the first layout that does not keep it. Layouts keep an instance
// when they have the same profile, placement and GPU instance ID at the same
// index.
type migSlot struct {
	epoch, index int // the epoch that made it and its index there
	profile      string
	until        int64 // ns after the start at which it goes; math.MaxInt64: never
}

// migChange is a validated `mig` event of one GPU.
type migChange struct {
	at     int64
	event  int
	layout []string
}

// migTimeline returns the epochs and slots of a MIG GPU of model whose
// scenario layout is layout and that changes are applied to, in time order.
// Every layout must place (CheckLayout accepted it).
func migTimeline(model *mig.Model, layout []string, changes []migChange) ([]migEpoch, []migSlot) {
	var epochs []migEpoch
	var slots []migSlot
	add := func(from int64, event int, layout []string) {
		// Layouts that passed CheckLayout place (mig.TestPlaceAgreesWithCheckLayout).
		placed, _ := model.PlaceInOrder(layout)
		ep := migEpoch{from: from, event: event, layout: layout, placed: placed, ids: giIDs(model, layout), slots: make([]int, len(layout))}
		var prev *migEpoch
		if len(epochs) > 0 {
			prev = &epochs[len(epochs)-1]
		}
		kept := make([]bool, len(layout))
		for j := range layout {
			if prev != nil && j < len(prev.layout) && prev.layout[j] == layout[j] &&
				prev.placed[j].Start == placed[j].Start && prev.ids[j] == ep.ids[j] {
				ep.slots[j], kept[j] = prev.slots[j], true
				continue
			}
			ep.slots[j] = len(slots)
			slots = append(slots, migSlot{epoch: len(epochs), index: j, profile: layout[j], until: math.MaxInt64})
		}
		if prev != nil {
			for j, s := range prev.slots {
				if j >= len(layout) || !kept[j] {
					slots[s].until = from
				}
			}
		}
		epochs = append(epochs, ep)
	}
	add(0, -1, layout)
	for _, c := range changes {
		add(c.at, c.event, c.layout)
	}
	return epochs, slots
}

// epochAt returns the index of the epoch in force at since ns after the start.
func epochAt(epochs []migEpoch, since int64) int {
	i := sort.Search(len(epochs), func(i int) bool { return epochs[i].from > since })
	return max(i-1, 0)
}

// describeSlot names a MIG instance for error messages.
func describeSlot(gpu int, s migSlot, epochs []migEpoch) string {
	if s.epoch == 0 {
		return fmt.Sprintf("MIG instance %d of GPU %d", s.index, gpu)
	}
	return fmt.Sprintf("MIG instance %d of GPU %d in the layout of events[%d]", s.index, gpu, epochs[s.epoch].event)
}

// checkMIGEvent validates a `mig` event: its GPU is a MIG GPU of the node
// (not one the DRA driver hands out) and its layout fits it and places.
func (sc *Scenario) checkMIGEvent(p string, e *Event, gpus []gpuFacts, dra map[int]int) error {
	if err := sc.noGPUFields(p, e); err != nil {
		return err
	}
	if e.For != 0 || sc.has(p+".for") {
		return sc.errAt(p+".for", "a MIG reconfiguration happens at one instant: remove for")
	}
	if e.At <= 0 {
		return sc.errAt(p+".at", "must be after 0s: the layout at the start is the GPU's gpus[].mig")
	}
	c := e.MIG
	if sc.lines != nil && !sc.has(p+".mig.gpu") {
		return sc.errAt(p+".mig.gpu", "required: the MIG GPU to reconfigure")
	}
	if c.GPU < 0 || c.GPU >= len(gpus) {
		return sc.errAt(p+".mig.gpu", "no GPU %d (the node has GPUs 0 to %d)", c.GPU, len(gpus)-1)
	}
	g := gpus[c.GPU]
	if g.mig == nil {
		return sc.errAt(p+".mig.gpu", "GPU %d is not in MIG mode: only a MIG GPU (gpus[].mig) is reconfigured", c.GPU)
	}
	if j, ok := dra[c.GPU]; ok {
		return sc.errAt(p+".mig.gpu", "GPU %d is handed out by the DRA driver (pods[%d]): reconfiguring it is not simulated", c.GPU, j)
	}
	if sc.lines != nil && !sc.has(p+".mig.layout") {
		return sc.errAt(p+".mig.layout", "required: the new layout, as gpus[].mig ([] for no instances)")
	}
	if _, err := g.mig.PlaceInOrder(c.Layout); err != nil {
		var le *mig.LayoutError
		if errors.As(err, &le) {
			return sc.errAt(fmt.Sprintf("%s.mig.layout[%d]", p, le.Index), "%s", le.Reason)
		}
		return sc.errAt(p+".mig.layout", "%v", err)
	}
	return nil
}

// planMIG orders the `mig` events (indices into sc.Events) of each GPU by
// time and sets the GPUs' epochs and slots; every MIG GPU gets at least the
// epoch of its own layout. Two changes of one GPU at one time, and a change to
// the layout already in force, are errors.
func (sc *Scenario) planMIG(gpus []gpuFacts, events []int) error {
	if len(events) > maxMIGChanges {
		return sc.errAt(fmt.Sprintf("events[%d].mig", events[maxMIGChanges]), "more than %d MIG reconfigurations", maxMIGChanges)
	}
	byGPU := map[int][]int{}
	for _, i := range events {
		byGPU[sc.Events[i].MIG.GPU] = append(byGPU[sc.Events[i].MIG.GPU], i)
	}
	for gi := range gpus {
		g := &gpus[gi]
		if g.mig == nil {
			continue
		}
		evs := byGPU[gi]
		slices.SortStableFunc(evs, func(a, b int) int { return cmp.Compare(sc.Events[a].At, sc.Events[b].At) })
		changes := make([]migChange, 0, len(evs))
		prev, prevFrom := g.layout, fmt.Sprintf("gpus[%d].mig", g.group)
		for k, i := range evs {
			e := &sc.Events[i]
			p := fmt.Sprintf("events[%d]", i)
			if k > 0 && sc.Events[evs[k-1]].At == e.At {
				return sc.errAt(p+".at", "GPU %d is already reconfigured at %v by events[%d]", gi, e.At, evs[k-1])
			}
			if slices.Equal(prev, e.MIG.Layout) {
				return sc.errAt(p+".mig.layout", "GPU %d has this layout already (%s): give a different one", gi, prevFrom)
			}
			changes = append(changes, migChange{at: int64(e.At), event: i, layout: e.MIG.Layout})
			prev, prevFrom = e.MIG.Layout, fmt.Sprintf("events[%d]", i)
		}
		g.epochs, g.slots = migTimeline(g.mig, g.layout, changes)
	}
	return nil
}

// migInstances lists the instances of epoch ep of GPU name as the inventory
// shows them; uuids are the GPU's slots' UUIDs.
func migInstances(model *mig.Model, ep *migEpoch, uuids []string) []collector.MIGInstance {
	out := make([]collector.MIGInstance, 0, len(ep.layout))
	for j, pname := range ep.layout {
		p, _ := model.Profile(pname)
		out = append(out, collector.MIGInstance{
			UUID:           uuids[ep.slots[j]],
			GPUInstanceID:  ep.ids[j],
			Profile:        p.Name,
			ComputeSlices:  p.ComputeSlices,
			MemorySlices:   p.MemorySlices,
			MemoryTotalMiB: p.MemoryMiB,
			PlacementStart: ep.placed[j].Start,
			PlacementSize:  p.MemorySlices,
		})
	}
	return out
}

// slotUUID is the UUID of a MIG instance of GPU name: those of the scenario's
// layout keep the form they always had, later ones add their epoch.
func slotUUID(seed uint64, name string, s migSlot) string {
	if s.epoch == 0 {
		return "MIG-" + uuidOf(seed, name, fmt.Sprint("mig", s.index))
	}
	return "MIG-" + uuidOf(seed, name, fmt.Sprint("mig", s.index), fmt.Sprint("layout", s.epoch))
}
