package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gputally/gputally/mig"
)

// bookSource is a BookSource whose book a test can swap.
type bookSource struct{ b *Book }

func (s *bookSource) Book() *Book { return s.b }

type seriesKey struct {
	Device string
	Holder HolderKey
	State  State
}

func totalsByKey(t *testing.T, l *Ledger) map[seriesKey]Total {
	t.Helper()
	m := map[seriesKey]Total{}
	for _, tot := range l.AppendTotals(nil) {
		k := seriesKey{tot.Device, tot.Holder, tot.State}
		if _, dup := m[k]; dup {
			t.Fatalf("series %+v exported twice", k)
		}
		m[k] = tot
	}
	return m
}

// within reports whether got is want within 1e-9 relative.
func within(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(math.Abs(want), 1e-12)
}

type wantSeries struct {
	device  string
	holder  HolderKey
	state   State
	seconds float64
	eur     float64
}

func checkSeries(t *testing.T, l *Ledger, want []wantSeries) {
	t.Helper()
	got := totalsByKey(t, l)
	if len(got) != len(want) {
		t.Errorf("ledger has %d series, want %d: %+v", len(got), len(want), got)
	}
	for _, w := range want {
		g, ok := got[seriesKey{w.device, w.holder, w.state}]
		if !ok {
			t.Errorf("missing series %s %+v %s", w.device, w.holder, w.state)
			continue
		}
		if !within(g.Seconds, w.seconds) || !within(g.EUR, w.eur) {
			t.Errorf("%s %+v %s = %.12g s, %.15g EUR; want %.12g s, %.15g EUR",
				w.device, w.holder, w.state, g.Seconds, g.EUR, w.seconds, w.eur)
		}
	}
}

// The worked examples of docs/cost.md, with the default book. The expected
// numbers were computed by hand (exact fractions) and are the ones in the doc.
func TestWorkedExampleA100HeldIdle(t *testing.T) {
	l := NewLedger(&bookSource{Default()})
	pod := HolderKey{"ml", "train-0", "main"}
	gpu := []GPUState{{HoldersKnown: true,
		UUID: "GPU-a100", Model: "NVIDIA A100-SXM4-80GB", PowerW: 250, Activity: 0.02,
		Holders: []Holder{{Key: pod, Share: 1, Activity: math.NaN()}},
	}}
	for range 3600 {
		l.Advance(time.Second, gpu)
	}
	// capital 15000 / (3 × 8760) = 0.570776255707763 EUR/h
	// energy  250 W / 1000 × 1.4 × 0.30 EUR/kWh = 0.105 EUR/h
	checkRate(t, l, "GPU-a100", Rate{Capital: 0.570776255707763, Energy: 0.105})
	checkSeries(t, l, []wantSeries{
		{"GPU-a100", pod, Idle, 3600, 0.675776255707763},
		{"GPU-a100", pod, Busy, 0, 0},
		{"GPU-a100", HolderKey{}, Unallocated, 0, 0},
	})
}

// TestLedgerChargesOverhead holds the ledger to the whole rate of a price
// book whose overhead is non-zero and unlike its capital and energy, with the
// EUR computed by hand from the book's numbers (not from Rate.Total):
//
//	capital  35040 EUR / (4 y × 8760 h)        = 1.00 EUR/h
//	energy   500 W / 1000 × PUE 1.2 × 0.25 EUR = 0.15 EUR/h
//	overhead                                   = 0.35 EUR/h
//
// 1.50 EUR/h; held busy for 2 h in 10 s ticks: 7200 s and 3.00 EUR.
func TestLedgerChargesOverhead(t *testing.T) {
	book := mustParse(t, `
defaults: {amortization_years: 4, energy_eur_per_kwh: 0.25, pue: 1.2, overhead_eur_per_hour: 0.35}
models: [{match: H100, purchase_eur: 35040}]
`)
	l := NewLedger(&bookSource{book})
	pod := HolderKey{"ml", "train-0", "main"}
	gpu := []GPUState{{HoldersKnown: true,
		UUID: "GPU-h100", Model: "NVIDIA H100 80GB HBM3", PowerW: 500, Activity: 0.9,
		Holders: []Holder{{Key: pod, Share: 1, Activity: math.NaN()}},
	}}
	for range 720 {
		l.Advance(10*time.Second, gpu)
	}
	checkSeries(t, l, []wantSeries{
		{"GPU-h100", pod, Busy, 7200, 3.00},
		{"GPU-h100", pod, Idle, 0, 0},
		{"GPU-h100", HolderKey{}, Unallocated, 0, 0},
	})
}

func TestWorkedExampleH100MIG(t *testing.T) {
	llm := HolderKey{"inference", "llm-0", "server"}
	nb := HolderKey{"dev", "notebook-a", "jupyter"}
	const model = "NVIDIA H100 80GB HBM3"
	table, ok := mig.ForModel(model)
	if !ok {
		t.Fatalf("no MIG table for %s", model)
	}
	p3g, ok3 := table.Profile("3g.40gb")
	p1g, ok1 := table.Profile("1g.10gb")
	if !ok3 || !ok1 {
		t.Fatalf("H100 MIG table lacks 3g.40gb or 1g.10gb: %v", table.ProfileNames())
	}
	gpu := []GPUState{{HoldersKnown: true,
		UUID: "GPU-h100", Model: model, PowerW: 400, Activity: math.NaN(), MIG: true,
		Instances: []Instance{
			{HoldersKnown: true, UUID: "MIG-3g", ComputeSlices: p3g.ComputeSlices, MemorySlices: p3g.MemorySlices, Activity: 0.60, Holders: []Holder{{Key: llm, Share: 1, Activity: math.NaN()}}},
			{HoldersKnown: true, UUID: "MIG-1g-a", ComputeSlices: p1g.ComputeSlices, MemorySlices: p1g.MemorySlices, Activity: 0.01, Holders: []Holder{{Key: nb, Share: 1, Activity: math.NaN()}}},
			{HoldersKnown: true, UUID: "MIG-1g-b", ComputeSlices: p1g.ComputeSlices, MemorySlices: p1g.MemorySlices, Activity: math.NaN()},
		},
	}}
	// Rate: 30000 / 26280 = 1.141552511415525 capital + 0.4 × 1.4 × 0.30 = 0.168
	// energy = 1.309552511415525 EUR/h.
	tests := []struct {
		weight string
		want   []wantSeries
	}{
		{"compute", []wantSeries{ // 3/7, 1/7, 1/7 and 2/7 free
			{"MIG-3g", llm, Busy, 1542.857142857143, 0.561236790606654},
			{"MIG-3g", llm, Idle, 0, 0},
			{"MIG-1g-a", nb, Idle, 514.2857142857143, 0.187078930202218},
			{"MIG-1g-a", nb, Busy, 0, 0},
			{"MIG-1g-b", HolderKey{}, Unallocated, 514.2857142857143, 0.187078930202218},
			{"GPU-h100", HolderKey{}, Unallocated, 1028.571428571429, 0.374157860404436},
			{"MIG-3g", HolderKey{}, Unallocated, 0, 0},
			{"MIG-1g-a", HolderKey{}, Unallocated, 0, 0},
		}},
		{"memory", []wantSeries{ // 4/8, 1/8, 1/8 and 2/8 free
			{"MIG-3g", llm, Busy, 1800, 0.654776255707763},
			{"MIG-3g", llm, Idle, 0, 0},
			{"MIG-1g-a", nb, Idle, 450, 0.163694063926941},
			{"MIG-1g-a", nb, Busy, 0, 0},
			{"MIG-1g-b", HolderKey{}, Unallocated, 450, 0.163694063926941},
			{"GPU-h100", HolderKey{}, Unallocated, 900, 0.327388127853881},
			{"MIG-3g", HolderKey{}, Unallocated, 0, 0},
			{"MIG-1g-a", HolderKey{}, Unallocated, 0, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.weight, func(t *testing.T) {
			book := mustParse(t, fmt.Sprintf("models: [{match: H100, purchase_eur: 30000}]\nmig_weight: %s\n", tt.weight))
			l := NewLedger(&bookSource{book})
			l.Advance(time.Hour, gpu)
			checkRate(t, l, "GPU-h100", Rate{Capital: 1.141552511415525, Energy: 0.168})
			checkSeries(t, l, tt.want)
		})
	}
}

func TestWorkedExampleTimeSliced(t *testing.T) {
	a := HolderKey{"team-a", "trainer", "main"}
	b := HolderKey{"team-b", "notebook", "jupyter"}
	c := HolderKey{"team-c", "debug", "shell"}
	activity := []float64{0.70, 0.01, 0.02}
	// Each pays its own activity plus a third of the unused 0.27: 0.79, 0.10, 0.11.
	shares := ActivityShares(nil, activity, equalShares(len(activity)))
	gpu := []GPUState{{HoldersKnown: true,
		UUID: "GPU-ts", Model: "NVIDIA A100-PCIE-40GB", PowerW: 300, Activity: 0.73,
		Holders: []Holder{
			{Key: a, Share: shares[0], Activity: activity[0]},
			{Key: b, Share: shares[1], Activity: activity[1]},
			{Key: c, Share: shares[2], Activity: activity[2]},
		},
	}}
	l := NewLedger(&bookSource{Default()})
	for range 60 {
		l.Advance(time.Minute, gpu)
	}
	// Rate: 0.570776255707763 capital + 0.3 × 1.4 × 0.30 = 0.126 energy = 0.696776255707763 EUR/h.
	checkRate(t, l, "GPU-ts", Rate{Capital: 0.570776255707763, Energy: 0.126})
	checkSeries(t, l, []wantSeries{
		{"GPU-ts", a, Busy, 2844, 0.550453242009132},
		{"GPU-ts", b, Idle, 360, 0.0696776255707763},
		{"GPU-ts", c, Idle, 396, 0.0766453881278539},
		{"GPU-ts", a, Idle, 0, 0},
		{"GPU-ts", b, Busy, 0, 0},
		{"GPU-ts", c, Busy, 0, 0},
		{"GPU-ts", HolderKey{}, Unallocated, 0, 0},
	})
}

func checkRate(t *testing.T, l *Ledger, uuid string, want Rate) {
	t.Helper()
	for _, r := range l.AppendRates(nil) {
		if r.UUID != uuid {
			continue
		}
		if !r.Priced || !within(r.Rate.Capital, want.Capital) || !within(r.Rate.Energy, want.Energy) || r.Rate.Overhead != want.Overhead {
			t.Errorf("rate of %s = %+v, want %+v", uuid, r, want)
		}
		return
	}
	t.Errorf("no rate for %s", uuid)
}

// TestEqualReplicaShares: holders of one replica each of a device that they
// share among themselves.
func TestEqualReplicaShares(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		activity []float64
		want     []float64
	}{
		{"none", nil, []float64{}},
		{"one busy of three", []float64{0.70, 0.01, 0.02}, []float64{0.79, 0.10, 0.11}},
		{"all idle", []float64{0, 0, 0, 0}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"unknown activity", []float64{0.9, nan}, []float64{0.5, 0.5}},
		{"over 1", []float64{0.9, 0.6}, []float64{0.6, 0.4}},
		{"negative counts as 0", []float64{-0.5, 0.5}, []float64{0.25, 0.75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ActivityShares(make([]float64, 1, 8), tt.activity, equalShares(len(tt.activity)))
			if len(got) != len(tt.want) {
				t.Fatalf("ActivityShares(%v, equal) = %v, want %v", tt.activity, got, tt.want)
			}
			for i := range got {
				if !approxEqual(got[i], tt.want[i]) {
					t.Fatalf("ActivityShares(%v, equal) = %v, want %v", tt.activity, got, tt.want)
				}
			}
		})
	}
}

func TestActivityShares(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		activity []float64
		replicas []float64
		want     []float64
	}{
		{"MPS 3:1, activity unknown", []float64{0.5, nan}, []float64{0.75, 0.25}, []float64{0.75, 0.25}},
		{"MPS 3:1, unused time by replicas", []float64{0.5, 0.1}, []float64{0.75, 0.25}, []float64{0.8, 0.2}},
		// Two of four replicas held: a quarter each of the 0.4 unused, 0.2 stays unallocated.
		{"unrequested replicas", []float64{0.5, 0.1}, []float64{0.25, 0.25}, []float64{0.6, 0.2}},
		{"replicas above 1 scale", []float64{nan, nan}, []float64{0.5, 1.5}, []float64{1.0 / 3, 2.0 / 3}},
		{"missing replica share", []float64{nan, nan}, []float64{1}, []float64{1, 0}},
		{"activity above 1", []float64{0.9, 0.6}, []float64{0.5, 0.5}, []float64{0.6, 0.4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ActivityShares(nil, tt.activity, tt.replicas)
			if len(got) != len(tt.want) {
				t.Fatalf("ActivityShares = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !approxEqual(got[i], tt.want[i]) {
					t.Fatalf("ActivityShares = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestLedgerEdgeCases covers inputs the collector should not send but might:
// each must still conserve the GPU's cost.
func TestLedgerEdgeCases(t *testing.T) {
	p := HolderKey{"ns", "p", "c"}
	q := HolderKey{"ns", "q", "c"}
	book := mustParse(t, "models: [{match: .*, hourly_eur: 3.6}]\nidle: {threshold: 0.5}\n") // 1 EUR per 1000 s
	tests := []struct {
		name string
		gpu  GPUState
		want []wantSeries
	}{
		{"unallocated GPU", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.9},
			[]wantSeries{{"G", HolderKey{}, Unallocated, 1000, 1}}},
		{"shares above 1 scale down", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.9, Holders: []Holder{{p, 1, math.NaN()}, {q, 3, math.NaN()}}},
			[]wantSeries{{"G", p, Busy, 500, 0.5}, {"G", q, Busy, 500, 0.5}, {"G", p, Idle, 0, 0}, {"G", q, Idle, 0, 0}, {"G", HolderKey{}, Unallocated, 0, 0}}},
		{"NaN and negative shares are 0", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.1, Holders: []Holder{{p, math.NaN(), math.NaN()}, {q, -1, math.NaN()}}},
			[]wantSeries{{"G", p, Idle, 0, 0}, {"G", q, Idle, 0, 0}, {"G", p, Busy, 0, 0}, {"G", q, Busy, 0, 0}, {"G", HolderKey{}, Unallocated, 1000, 1}}},
		{"no activity signal is unknown", GPUState{HoldersKnown: true, UUID: "G", Activity: math.NaN(), Holders: []Holder{{p, 0.75, math.NaN()}}},
			[]wantSeries{{"G", p, Unknown, 750, 0.75}, {"G", p, Busy, 0, 0}, {"G", p, Idle, 0, 0}, {"G", HolderKey{}, Unallocated, 250, 0.25}}},
		{"activity at the threshold is busy", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.5, Holders: []Holder{{p, 1, math.NaN()}}},
			[]wantSeries{{"G", p, Busy, 1000, 1}, {"G", p, Idle, 0, 0}, {"G", HolderKey{}, Unallocated, 0, 0}}},
		{"own activity wins", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.9, Holders: []Holder{{p, 0.5, 0.1}, {q, 0.25, math.NaN()}}},
			[]wantSeries{{"G", p, Idle, 500, 0.5}, {"G", q, Busy, 250, 0.25}, {"G", p, Busy, 0, 0}, {"G", q, Idle, 0, 0}, {"G", HolderKey{}, Unallocated, 250, 0.25}}},
		{"a key held twice is one series", GPUState{HoldersKnown: true, UUID: "G", Activity: 0.9, Holders: []Holder{{p, 0.5, math.NaN()}, {p, 0.5, math.NaN()}}},
			[]wantSeries{{"G", p, Busy, 1000, 1}, {"G", p, Idle, 0, 0}, {"G", HolderKey{}, Unallocated, 0, 0}}},
		{"MIG without instances", GPUState{HoldersKnown: true, UUID: "G", MIG: true, Holders: []Holder{{p, 1, math.NaN()}}},
			[]wantSeries{{"G", HolderKey{}, Unallocated, 1000, 1}}},
		{"MIG slices above 7 scale down", GPUState{HoldersKnown: true, UUID: "G", MIG: true, Instances: []Instance{
			{HoldersKnown: true, UUID: "M1", ComputeSlices: 7, Activity: 1, Holders: []Holder{{p, 1, math.NaN()}}},
			{HoldersKnown: true, UUID: "M2", ComputeSlices: 7, Activity: math.NaN()}}},
			[]wantSeries{{"M1", p, Busy, 500, 0.5}, {"M1", p, Idle, 0, 0}, {"M1", HolderKey{}, Unallocated, 0, 0},
				{"M2", HolderKey{}, Unallocated, 500, 0.5}, {"G", HolderKey{}, Unallocated, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(&bookSource{book})
			l.Advance(1000*time.Second, []GPUState{tt.gpu})
			l.Advance(-time.Second, []GPUState{tt.gpu}) // adds nothing
			checkSeries(t, l, tt.want)
		})
	}
}

func TestLedgerFollowsHolders(t *testing.T) {
	p := HolderKey{"ns", "p", "c"}
	q := HolderKey{"ns", "q", "c"}
	book := mustParse(t, "models: [{match: .*, hourly_eur: 3.6}]\n")
	l := NewLedger(&bookSource{book})
	gpu := func(holders ...HolderKey) []GPUState {
		g := GPUState{HoldersKnown: true, UUID: "G", Activity: 1}
		for _, h := range holders {
			g.Holders = append(g.Holders, Holder{Key: h, Share: 1 / float64(len(holders)), Activity: math.NaN()})
		}
		return []GPUState{g}
	}
	l.Advance(1000*time.Second, gpu(p))
	l.Advance(1000*time.Second, gpu(p, q))
	checkSeries(t, l, []wantSeries{
		{"G", p, Busy, 1500, 1.5}, {"G", p, Idle, 0, 0},
		{"G", q, Busy, 500, 0.5}, {"G", q, Idle, 0, 0},
		{"G", HolderKey{}, Unallocated, 0, 0},
	})
	// p ended: its series go; q keeps counting from where it was.
	l.Advance(1000*time.Second, gpu(q))
	checkSeries(t, l, []wantSeries{
		{"G", q, Busy, 1500, 1.5}, {"G", q, Idle, 0, 0},
		{"G", HolderKey{}, Unallocated, 0, 0},
	})
	// The GPU fell off the bus: all its series go.
	l.Advance(1000*time.Second, nil)
	checkSeries(t, l, nil)
}

func TestLedgerFollowsBookAndPower(t *testing.T) {
	src := &bookSource{mustParse(t, "models: [{match: A100, purchase_eur: 26280}]\n")} // 1 EUR/h capital
	l := NewLedger(src)
	gpu := []GPUState{{HoldersKnown: true, UUID: "G", Model: "A100", PowerW: 1000, Activity: math.NaN()}}
	l.Advance(time.Hour, gpu)
	checkRate(t, l, "G", Rate{Capital: 1, Energy: 0.42}) // 1 kW × 1.4 × 0.30
	for _, broken := range []float64{math.NaN(), math.Inf(1), 2 * MaxPowerW, -1} {
		gpu[0].PowerW = broken // a failed read or a broken sensor keeps the last power
		l.Advance(time.Hour/4, gpu)
		checkRate(t, l, "G", Rate{Capital: 1, Energy: 0.42})
	}
	src.b = mustParse(t, "models: [{match: A100, hourly_eur: 2}]\n")
	l.Advance(time.Hour, gpu)
	checkRate(t, l, "G", Rate{Capital: 2})
	checkSeries(t, l, []wantSeries{{"G", HolderKey{}, Unallocated, 3 * 3600, 1.42*2 + 2}})

	// A GPU the book does not price costs nothing, and says so.
	gpu[0].Model = "T4"
	l.Advance(time.Hour, gpu)
	if r := l.AppendRates(nil); len(r) != 1 || r[0].Priced || r[0].Rate != (Rate{}) {
		t.Errorf("rates of an unpriced GPU = %+v", r)
	}
	// No power seen yet: no energy.
	l2 := NewLedger(&bookSource{Default()})
	l2.Advance(time.Hour, []GPUState{{HoldersKnown: true, UUID: "G", Model: "A100", PowerW: math.NaN()}})
	checkRate(t, l2, "G", Rate{Capital: 0.570776255707763})
}

// TestLedgerConservation is the property test: over random fleets, MIG layouts,
// holders, activity, power, lost GPUs, unknown attribution, unmeasured gaps
// and tick lengths, every tick each GPU's series gain exactly rate × dt EUR and
// dt device-seconds, no counter goes down and none is negative, and each state
// gains only when its condition holds: busy and idle only for a known holder
// whose activity was measured, unallocated only where attribution (or, for MIG
// slices in no instance, the inventory) said no one holds it, lost only on a
// lost GPU's own series.
func TestLedgerConservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(20260801, 4))
	books := []*Book{
		Default(),
		mustParse(t, `
defaults: {amortization_years: 5, energy_eur_per_kwh: 0.42, pue: 1.1, overhead_eur_per_hour: 0.35}
models:
  - {match: "H1", purchase_eur: 28000, pue: 1.6}
  - {match: "A1", purchase_eur: 9000, overhead_eur_per_hour: 0}
  - {match: ".", hourly_eur: 1.7}
mig_weight: memory
idle: {threshold: 0.3}
`),
	}
	for fleet := range 300 {
		src := &bookSource{books[fleet%2]}
		l := NewLedger(src, WithRetention(time.Duration(1+rng.IntN(3))*time.Hour))
		gpus := randomFleet(rng)
		lastPower := map[string]float64{}
		meters := powerSeen{}
		for tick := range 30 {
			prev := gpus
			if rng.IntN(4) != 0 { // else: the same fleet as the last tick
				gpus = mutateFleet(rng, gpus)
			}
			if rng.IntN(10) == 0 {
				src.b = books[rng.IntN(2)]
			}
			dt := time.Duration(rng.Int64N(int64(time.Hour)))
			if rng.IntN(20) == 0 {
				dt = 0
			}
			measured := rng.IntN(6) != 0
			before := totalsByKey(t, l)
			meters.see(gpus)
			charged := gpus
			if measured {
				l.Advance(dt, gpus)
			} else {
				// As the collector charges a gap: the holders at both ends.
				charged = HeldThroughout(nil, prev, gpus)
				l.AdvanceUnmeasured(dt, charged)
			}
			after := totalsByKey(t, l)
			inputs := deviceInputs(charged)

			type sums struct{ eur, seconds, joules float64 }
			perGPU := map[string]*sums{}
			for k, a := range after {
				b := before[k]
				dEUR, dSec := a.EUR-b.EUR, a.Seconds-b.Seconds
				if a.EUR < 0 || a.Seconds < 0 || dEUR < 0 || dSec < 0 || math.IsNaN(a.EUR+a.Seconds) {
					t.Fatalf("fleet %d tick %d: series %+v went from %+v to %+v", fleet, tick, k, b, a)
				}
				if dSec > 0 {
					if why := stateNotAllowed(inputs[k.Device], k, measured); why != "" {
						t.Fatalf("fleet %d tick %d: series %+v gained %v s (measured %v): %s", fleet, tick, k, dSec, measured, why)
					}
				}
				s := perGPU[a.GPU]
				if s == nil {
					s = &sums{}
					perGPU[a.GPU] = s
				}
				s.eur += dEUR
				s.seconds += dSec
				s.joules += a.Joules - b.Joules
				if a.Joules < b.Joules || a.Metered != meters.metered(src.b, gpus, a.GPU) {
					t.Fatalf("fleet %d tick %d: series %+v went from %+v to %+v, metered %v", fleet, tick, k, b, a, meters.metered(src.b, gpus, a.GPU))
				}
			}
			rates := l.AppendRates(nil)
			if len(rates) != len(gpus) {
				t.Fatalf("fleet %d tick %d: %d rates for %d GPUs", fleet, tick, len(rates), len(gpus))
			}
			for i, g := range gpus {
				switch {
				case g.Lost:
					delete(lastPower, g.UUID)
				case !math.IsNaN(g.PowerW):
					lastPower[g.UUID] = g.PowerW
				}
				p, ok := lastPower[g.UUID]
				if !ok {
					p = math.NaN()
				}
				rate := src.b.Price(g.Model).Rate(p)
				if rates[i].UUID != g.UUID || rates[i].Rate != rate {
					t.Fatalf("fleet %d tick %d: rate %+v, want %+v", fleet, tick, rates[i], rate)
				}
				s := perGPU[g.UUID]
				if s == nil {
					t.Fatalf("fleet %d tick %d: GPU %s has no series", fleet, tick, g.UUID)
				}
				wantEUR := rate.Total() * dt.Seconds() / 3600
				if !conserved(s.eur, wantEUR) || !conserved(s.seconds, dt.Seconds()) {
					t.Fatalf("fleet %d tick %d: GPU %s gained %.15g EUR and %.15g s, want %.15g EUR and %.15g s (dt %v)",
						fleet, tick, g.UUID, s.eur, s.seconds, wantEUR, dt.Seconds(), dt)
				}
				// The energy: power × PUE × dt, where the energy is metered.
				if wantJ := meters.facilityW(src.b, g, p) * dt.Seconds(); !conserved(s.joules, wantJ) {
					t.Fatalf("fleet %d tick %d: GPU %s gained %.15g J, want %.15g J (power %v W, dt %v)", fleet, tick, g.UUID, s.joules, wantJ, p, dt)
				}
			}
		}
	}
}

// deviceInput is what one tick's input said about one GPU or MIG instance.
type deviceInput struct {
	gpu      *GPUState
	instance *Instance // nil for the GPU itself
}

func deviceInputs(gpus []GPUState) map[string]deviceInput {
	m := map[string]deviceInput{}
	for i := range gpus {
		g := &gpus[i]
		m[g.UUID] = deviceInput{gpu: g}
		for j := range g.Instances {
			m[g.Instances[j].UUID] = deviceInput{gpu: g, instance: &g.Instances[j]}
		}
	}
	return m
}

// stateNotAllowed says why series k may not gain time this tick, or "".
func stateNotAllowed(in deviceInput, k seriesKey, measured bool) string {
	if in.gpu == nil {
		return "the device is not in the input"
	}
	g := in.gpu
	holders, known, activity := g.Holders, g.HoldersKnown, g.Activity
	if in.instance != nil {
		holders, known, activity = in.instance.Holders, in.instance.HoldersKnown, in.instance.Activity
	}
	if g.Lost && k.State != Lost && (measured || k.State != Unknown || k.Holder != HolderKey{}) {
		return "a lost GPU gains only lost time (unknown in a gap), with no holder"
	}
	if !g.Lost && (g.MIG && in.instance == nil || !g.MIG && in.instance != nil) && k.State != Unallocated && k.State != Unknown {
		return "a part outside the GPU's current layout"
	}
	switch k.State {
	case Busy, Idle:
		if !measured {
			return "busy or idle in an unmeasured gap"
		}
		for _, h := range holders {
			a := h.Activity
			if math.IsNaN(a) {
				a = activity
			}
			if h.Key == k.Holder && !math.IsNaN(a) {
				return ""
			}
		}
		return "busy or idle without a holder whose activity was measured"
	case Unallocated:
		switch {
		case !measured:
			return "unallocated in an unmeasured gap"
		case k.Holder != HolderKey{}:
			return "unallocated with a holder"
		case g.MIG && in.instance == nil:
			return "" // slices in no instance: the inventory says no one holds them
		case !known:
			return "unallocated although attribution did not say who holds the device"
		}
	case Lost:
		if !g.Lost || !measured || in.instance != nil || k.Holder != (HolderKey{}) {
			return "lost time for a GPU that is not lost, or not on the GPU's own series"
		}
	case Unknown:
		if measured && k.Holder == (HolderKey{}) && known {
			return "unknown with no holder although the holders were known"
		}
	}
	return ""
}

// conserved reports whether got equals want within 1e-9 relative (exactly 0
// for want 0).
func conserved(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Abs(want)
}

var models = []string{"NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "Tesla T4"}

// profiles are MIG profiles as (compute, memory) slices.
var profiles = [][2]int{{1, 1}, {1, 2}, {2, 2}, {3, 4}, {4, 4}, {7, 8}}

var keys = func() []HolderKey {
	var k []HolderKey
	for i := range 12 {
		k = append(k, HolderKey{fmt.Sprintf("ns%d", i%3), fmt.Sprintf("pod-%d", i), "main"})
	}
	return k
}()

func randomFleet(rng *rand.Rand) []GPUState {
	gpus := make([]GPUState, 1+rng.IntN(8))
	for i := range gpus {
		gpus[i] = GPUState{HoldersKnown: true, UUID: fmt.Sprintf("GPU-%d", i), Model: models[rng.IntN(len(models))]}
		randomizeGPU(rng, &gpus[i])
	}
	return gpus
}

// mutateFleet returns the fleet with new readings and, sometimes, new holders,
// MIG layouts, or a GPU gone or added.
func mutateFleet(rng *rand.Rand, gpus []GPUState) []GPUState {
	out := make([]GPUState, 0, len(gpus)+1)
	for _, g := range gpus {
		if rng.IntN(30) == 0 {
			continue // fell off the bus
		}
		out = append(out, g)
	}
	if rng.IntN(20) == 0 {
		out = append(out, GPUState{HoldersKnown: true, UUID: fmt.Sprintf("GPU-new-%d", rng.Uint64()), Model: models[rng.IntN(len(models))]})
	}
	for i := range out {
		randomizeGPU(rng, &out[i])
	}
	return out
}

func randomizeGPU(rng *rand.Rand, g *GPUState) {
	g.PowerW = maybeNaN(rng, 50+650*rng.Float64())
	g.Activity = maybeNaN(rng, rng.Float64())
	g.Lost = rng.IntN(12) == 0
	g.HoldersKnown = rng.IntN(5) != 0
	if rng.IntN(3) != 0 && (g.Holders != nil || g.Instances != nil) {
		// Same holders and layout, new readings.
		for j := range g.Instances {
			g.Instances[j].Activity = maybeNaN(rng, rng.Float64())
			g.Instances[j].HoldersKnown = rng.IntN(5) != 0
		}
		return
	}
	g.MIG = rng.IntN(5) < 2
	g.Holders, g.Instances = nil, nil
	if !g.MIG {
		g.Holders = randomHolders(rng)
		return
	}
	// Hostable slices are whatever the caller says; the ledger caps them at the free part.
	g.Hostable = HostableSlices{Known: rng.IntN(2) == 0, Compute: rng.IntN(8), Memory: rng.IntN(9)}
	slices := 0
	for n := range 8 {
		p := profiles[rng.IntN(len(profiles))]
		if slices+p[0] > 7 && rng.IntN(20) != 0 { // rarely, an impossible layout
			break
		}
		slices += p[0]
		g.Instances = append(g.Instances, Instance{
			HoldersKnown: rng.IntN(5) != 0, UUID: fmt.Sprintf("MIG-%s-%d-%d", g.UUID, n, rng.IntN(3)),
			ComputeSlices: p[0], MemorySlices: p[1],
			Activity: maybeNaN(rng, rng.Float64()),
			Holders:  randomHolders(rng),
		})
	}
}

func randomHolders(rng *rand.Rand) []Holder {
	n := rng.IntN(5)
	hs := make([]Holder, n)
	act := make([]float64, n)
	for i := range hs {
		act[i] = maybeNaN(rng, rng.Float64()*0.6)
		hs[i] = Holder{Key: keys[rng.IntN(len(keys))], Activity: act[i]}
	}
	switch rng.IntN(6) {
	case 5: // shares summing to 1 − ε: the remainder is at the edge of rounding
		eps := []float64{1e-7, 3e-9, 1e-9, 1e-11}[rng.IntN(4)] // 3e-9: dropping it would break the 1e-9 bound
		for i := range hs {
			hs[i].Share = (1 - eps) / float64(n)
		}
	case 0: // exclusive, or time-sliced by process activity
		shares := ActivityShares(nil, act, equalShares(len(act)))
		for i := range hs {
			hs[i].Share = shares[i]
		}
	case 4: // replicas of a device that offers 8, by process activity
		replicas := make([]float64, n)
		for i := range replicas {
			replicas[i] = float64(1+rng.IntN(2)) / 8
		}
		shares := ActivityShares(nil, act, replicas)
		for i := range hs {
			hs[i].Share = shares[i]
		}
	case 1: // equal
		for i := range hs {
			hs[i].Share = 1 / float64(n)
		}
	case 2: // anything, summing above 1 or not
		for i := range hs {
			hs[i].Share = rng.Float64()
		}
	default: // garbage
		for i := range hs {
			hs[i].Share = []float64{math.NaN(), -1, 2, 0}[rng.IntN(4)]
		}
	}
	return hs
}

func maybeNaN(rng *rand.Rand, v float64) float64 {
	if rng.IntN(5) == 0 {
		return math.NaN()
	}
	return v
}

// bigNode is the node of the budgets: 8 GPUs × 7 MIG instances, 56 holders.
func bigNode() []GPUState {
	gpus := make([]GPUState, 8)
	for i := range gpus {
		g := GPUState{HoldersKnown: true, UUID: fmt.Sprintf("GPU-%d", i), Model: "NVIDIA H100 80GB HBM3", PowerW: 350, Activity: math.NaN(), MIG: true}
		for j := range 7 {
			g.Instances = append(g.Instances, Instance{HoldersKnown: true,
				UUID: fmt.Sprintf("MIG-%d-%d", i, j), ComputeSlices: 1, MemorySlices: 1, Activity: float64(j) / 10,
				Holders: []Holder{{Key: HolderKey{"ns", fmt.Sprintf("pod-%d-%d", i, j), "main"}, Share: 1, Activity: math.NaN()}},
			})
		}
		gpus[i] = g
	}
	return gpus
}

// TestLedgerSteadyStateAllocs holds the budget "0 allocations per tick in the
// ledger": an Advance with the same devices and holders, and reading the
// totals into reused slices, allocate nothing.
func TestLedgerSteadyStateAllocs(t *testing.T) {
	timeSliced := []GPUState{{HoldersKnown: true, UUID: "G", Model: "A100", PowerW: 200, Activity: 0.3, Holders: []Holder{
		{Key: keys[0], Share: 0.5, Activity: 0.01}, {Key: keys[1], Share: 0.25, Activity: math.NaN()}, {Key: keys[0], Share: 0.25, Activity: 0.9},
	}}}
	for name, gpus := range map[string][]GPUState{"8 GPUs × 7 MIG": bigNode(), "time-sliced": timeSliced} {
		t.Run(name, func(t *testing.T) {
			l := NewLedger(&bookSource{Default()})
			l.Advance(time.Second, gpus)
			totals := l.AppendTotals(nil)
			rates := l.AppendRates(nil)
			allocs := testing.AllocsPerRun(100, func() {
				l.Advance(time.Second, gpus)
				totals = l.AppendTotals(totals[:0])
				rates = l.AppendRates(rates[:0])
			})
			if allocs != 0 {
				t.Errorf("a steady-state tick allocates %v times, want 0", allocs)
			}
		})
	}
}

func BenchmarkLedgerAdvance(b *testing.B) {
	gpus := bigNode()
	l := NewLedger(&bookSource{Default()})
	l.Advance(time.Second, gpus)
	totals := l.AppendTotals(nil)
	b.ReportAllocs()
	for b.Loop() {
		l.Advance(time.Second, gpus)
		totals = l.AppendTotals(totals[:0])
	}
	b.ReportMetric(float64(len(totals)), "series")
}

// equalShares returns n replica shares of 1/n.
func equalShares(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 1 / float64(n)
	}
	return s
}
