package cost

import (
	"math"
	"testing"
	"time"
)

// powerSeen is the conservation test's own account of which GPUs the ledger
// meters: those that had a power reading while not lost, priced by an entry
// with an energy component. GPUs that left the input keep their last state.
type powerSeen struct {
	seen map[string]bool
	last map[string]bool
}

func (p *powerSeen) see(gpus []GPUState) {
	if p.seen == nil {
		p.seen, p.last = map[string]bool{}, map[string]bool{}
	}
	for _, g := range gpus {
		if !g.Lost && !math.IsNaN(g.PowerW) {
			p.seen[g.UUID] = true
		}
	}
}

// metered says whether GPU uuid's series carry energy under book b.
func (p *powerSeen) metered(b *Book, gpus []GPUState, uuid string) bool {
	for _, g := range gpus {
		if g.UUID == uuid {
			p.last[uuid] = p.seen[uuid] && !b.Price(g.Model).Flat
		}
	}
	return p.last[uuid]
}

// facilityW is the facility power of g this tick, W, at the power the
// ledger charges: power × PUE of its entry, 0 when not metered.
func (p *powerSeen) facilityW(b *Book, g GPUState, powerW float64) float64 {
	price := b.Price(g.Model)
	if !p.seen[g.UUID] || price.Flat || math.IsNaN(powerW) {
		return 0
	}
	return powerW * price.PUE
}

// TestLedgerEnergyWorkedExample: docs/cost.md's A100 at 250 W held idle for
// an hour draws 250 W × PUE 1.4 = 350 W at the facility: 350 × 3600 =
// 1,260,000 J (0.35 kWh), the energy its 0.105 EUR of energy price
// (0.35 kWh × 0.30 EUR/kWh).
func TestLedgerEnergyWorkedExample(t *testing.T) {
	l := NewLedger(&bookSource{Default()})
	held := []Holder{{Key: HolderKey{"ml", "train-0", "main"}, Share: 1, Activity: math.NaN()}}
	l.Advance(time.Hour, []GPUState{{HoldersKnown: true, UUID: "GPU-a", Model: "NVIDIA A100-SXM4-80GB", PowerW: 250, Activity: 0.02, Holders: held}})
	got := totalsByKey(t, l)
	idle := got[seriesKey{"GPU-a", held[0].Key, Idle}]
	if !idle.Metered || !within(idle.Joules, 1_260_000) {
		t.Errorf("idle series: %+v, want metered and 1,260,000 J", idle)
	}
	if kWh := idle.Joules / JoulesPerKWh; !within(kWh*0.30, 0.105) {
		t.Errorf("%v kWh × 0.30 EUR/kWh = %v EUR, want the energy component's 0.105", kWh, kWh*0.30)
	}
	for _, st := range []State{Busy, Unallocated} {
		k := seriesKey{"GPU-a", held[0].Key, st}
		if st == Unallocated {
			k.Holder = HolderKey{}
		}
		if s := got[k]; s.Joules != 0 || !s.Metered {
			t.Errorf("%s: %+v, want metered at 0 J", st, s)
		}
	}
}

// TestLedgerEnergyMIGAndShares: an H100 at 400 W (PUE 1.4: 560 W at the
// facility) split 3/7 busy, 1/7 idle, 1/7 unallocated instance, 2/7 free
// slices: each series gets its device-seconds × 560 W, so an hour's
// 2,016,000 J go 864,000 / 288,000 / 288,000 / 576,000 — the MIG instances
// share the board's power, never each the whole of it.
func TestLedgerEnergyMIGAndShares(t *testing.T) {
	l := NewLedger(&bookSource{Default()})
	llm, nb := HolderKey{"inference", "llm-0", "server"}, HolderKey{"dev", "notebook-a", "jupyter"}
	g := GPUState{HoldersKnown: true, UUID: "GPU-h", Model: "NVIDIA H100 80GB HBM3", PowerW: 400, Activity: math.NaN(), MIG: true,
		Hostable: HostableSlices{Known: true, Compute: 2, Memory: 2},
		Instances: []Instance{
			{UUID: "MIG-1", ComputeSlices: 3, MemorySlices: 4, Activity: 0.6, HoldersKnown: true, Holders: []Holder{{Key: llm, Share: 1, Activity: math.NaN()}}},
			{UUID: "MIG-2", ComputeSlices: 1, MemorySlices: 1, Activity: 0.01, HoldersKnown: true, Holders: []Holder{{Key: nb, Share: 1, Activity: math.NaN()}}},
			{UUID: "MIG-3", ComputeSlices: 1, MemorySlices: 1, Activity: 0, HoldersKnown: true},
		}}
	l.Advance(time.Hour, []GPUState{g})
	got := totalsByKey(t, l)
	for _, w := range []struct {
		k    seriesKey
		want float64
	}{
		{seriesKey{"MIG-1", llm, Busy}, 560 * 3600 * 3 / 7},
		{seriesKey{"MIG-2", nb, Idle}, 560 * 3600 / 7},
		{seriesKey{"MIG-3", HolderKey{}, Unallocated}, 560 * 3600 / 7},
		{seriesKey{"GPU-h", HolderKey{}, Unallocated}, 560 * 3600 * 2 / 7},
	} {
		if s := got[w.k]; !within(s.Joules, w.want) || !s.Metered {
			t.Errorf("%+v: %v J (metered %v), want %v J", w.k, s.Joules, s.Metered, w.want)
		}
	}
	sum := 0.0
	for _, s := range got {
		sum += s.Joules
	}
	if !within(sum, 2_016_000) {
		t.Errorf("the GPU's series hold %v J, want 400 W × 1.4 × 3600 s = 2,016,000 J", sum)
	}
}

// TestLedgerEnergyNotMetered: a flat-rate GPU (the built-in book's T4 at
// 2.50 EUR/h) has no energy whatever its power, and a priced GPU has none
// until its first power reading; from then on its energy counts at the last
// power seen, through failed reads, and a lost GPU draws nothing.
func TestLedgerEnergyNotMetered(t *testing.T) {
	l := NewLedger(&bookSource{Default()})
	key := HolderKey{"ml", "train-0", "main"}
	held := func(uuid, model string, power float64, lost bool) GPUState {
		return GPUState{HoldersKnown: true, UUID: uuid, Model: model, PowerW: power, Activity: 0.5, Lost: lost,
			Holders: []Holder{{Key: key, Share: 1, Activity: math.NaN()}}}
	}
	busy := func(uuid string) Total { return totalsByKey(t, l)[seriesKey{uuid, key, Busy}] }
	l.Advance(time.Hour, []GPUState{held("GPU-t4", "Tesla T4", 70, false), held("GPU-a", "NVIDIA A100-SXM4-80GB", math.NaN(), false)})
	if s := busy("GPU-t4"); s.Metered || s.Joules != 0 || !within(s.EUR, 2.5) {
		t.Errorf("flat-rate T4: %+v, want no energy and 2.50 EUR", s)
	}
	if s := busy("GPU-a"); s.Metered || s.Joules != 0 {
		t.Errorf("A100 without a power reading: %+v, want no energy", s)
	}
	// 200 W × 1.4 × 3600 s = 1,008,000 J; then a failed read keeps 200 W.
	l.Advance(time.Hour, []GPUState{held("GPU-t4", "Tesla T4", 70, false), held("GPU-a", "NVIDIA A100-SXM4-80GB", 200, false)})
	l.Advance(time.Hour, []GPUState{held("GPU-t4", "Tesla T4", 70, false), held("GPU-a", "NVIDIA A100-SXM4-80GB", math.NaN(), false)})
	if s := busy("GPU-a"); !s.Metered || !within(s.Joules, 2*1_008_000) {
		t.Errorf("A100 at 200 W for two hours: %+v, want 2,016,000 J", s)
	}
	// Lost: capital as lost, no energy; the series stay metered.
	l.Advance(time.Hour, []GPUState{held("GPU-t4", "Tesla T4", 70, false), held("GPU-a", "NVIDIA A100-SXM4-80GB", 200, true)})
	lost := totalsByKey(t, l)[seriesKey{"GPU-a", HolderKey{}, Lost}]
	if !lost.Metered || lost.Joules != 0 || lost.EUR <= 0 {
		t.Errorf("lost A100: %+v, want metered, 0 J and its capital", lost)
	}
}
