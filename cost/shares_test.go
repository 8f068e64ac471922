package cost

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestFractionalSharesWorkedCases: the table of
// shared/reference/fractional-gpus.md §4.2 and docs/cost.md, per policy. The
// expected shares are worked out by hand in the comments; R is 1 − Σ shares,
// the unallocated rest.
func TestFractionalSharesWorkedCases(t *testing.T) {
	c := func(mem, cores float64) Claim { return Claim{Memory: mem, Cores: cores} }
	dominant := SharePolicy{Kind: Dominant}
	memory := SharePolicy{Kind: MemoryShares}
	cores := SharePolicy{Kind: CoreShares}
	weighted := SharePolicy{Kind: Weighted, MemoryWeight: 0.5}
	tests := []struct {
		name   string
		policy SharePolicy
		claims []Claim
		want   []float64
	}{
		// HAMi #3073: four pods at 25 % of memory and cores are one GPU.
		// Σm = Σc = 1, R = 0; d = .25 each, Σd = 1: .25 × 1 / 1.
		{"4 × 25 %, dominant", dominant, []Claim{c(.25, .25), c(.25, .25), c(.25, .25), c(.25, .25)}, []float64{.25, .25, .25, .25}},
		{"4 × 25 %, memory", memory, []Claim{c(.25, .25), c(.25, .25), c(.25, .25), c(.25, .25)}, []float64{.25, .25, .25, .25}},
		// Full by cores, not by memory: Σm = .4, Σc = 1, R = min(.6, 0) = 0;
		// d = .25 each: .25 × 1 / 1. Memory alone would show .6 free that
		// HAMi's scheduler refuses (no cores left).
		{"full by cores, dominant", dominant, []Claim{c(.1, .25), c(.1, .25), c(.1, .25), c(.1, .25)}, []float64{.25, .25, .25, .25}},
		{"full by cores, memory", memory, []Claim{c(.1, .25), c(.1, .25), c(.1, .25), c(.1, .25)}, []float64{.1, .1, .1, .1}},
		// .5 × .1 + .5 × .25 = .175 each, R = .3.
		{"full by cores, weighted", weighted, []Claim{c(.1, .25), c(.1, .25), c(.1, .25), c(.1, .25)}, []float64{.175, .175, .175, .175}},
		{"full by cores, cores", cores, []Claim{c(.1, .25), c(.1, .25), c(.1, .25), c(.1, .25)}, []float64{.25, .25, .25, .25}},
		// A (.75, 25), B (.25, 75): R = 0, d = .75 each: .75 / 1.5 = .5.
		{"crossed, dominant", dominant, []Claim{c(.75, .25), c(.25, .75)}, []float64{.5, .5}},
		{"crossed, memory", memory, []Claim{c(.75, .25), c(.25, .75)}, []float64{.75, .25}},
		{"crossed, weighted", weighted, []Claim{c(.75, .25), c(.25, .75)}, []float64{.5, .5}},
		// A (.6, 10), B (.1, 60): Σm = Σc = .7, R = .3; d = .6 each, Σd =
		// 1.2: .6 × .7 / 1.2 = .35.
		{"room left, dominant", dominant, []Claim{c(.6, .1), c(.1, .6)}, []float64{.35, .35}},
		{"room left, memory", memory, []Claim{c(.6, .1), c(.1, .6)}, []float64{.6, .1}},
		{"room left, cores", cores, []Claim{c(.6, .1), c(.1, .6)}, []float64{.1, .6}},
		// No core limit reserves no cores: the core axis does not count, R
		// = .9, and the pod pays its memory.
		{"no core limit, dominant", dominant, []Claim{c(.1, 0)}, []float64{.1}},
		// Weighted: the unlimited pod takes the compute the limits leave,
		// 1 − 0 = 1: .5 × .1 + .5 × 1 = .55.
		{"no core limit, weighted", weighted, []Claim{c(.1, 0)}, []float64{.55}},
		{"no core limit, cores", cores, []Claim{c(.1, 0)}, []float64{1}},
		// A limited and an unlimited pod: the unlimited one's compute is
		// 1 − .3 = .7; cores: .3 and .7.
		{"limited and unlimited, cores", cores, []Claim{c(.2, .3), c(.2, 0)}, []float64{.3, .7}},
		// KAI 0.5 + 0.3: memory only; R = .2.
		{"KAI .5 + .3, dominant", dominant, []Claim{c(.5, 0), c(.3, 0)}, []float64{.5, .3}},
		// Cores (KAI #274: equal time slices): 1/2 each.
		{"KAI .5 + .3, cores", cores, []Claim{c(.5, 0), c(.3, 0)}, []float64{.5, .5}},
		// Weighted: .5 × .5 + .5 × .5 = .5; .5 × .3 + .5 × .5 = .4; R = .1.
		{"KAI .5 + .3, weighted", weighted, []Claim{c(.5, 0), c(.3, 0)}, []float64{.5, .4}},
		// KAI 3 × .34 (portions ceiled to .01): Σ = 1.02, R = 0, each .34 /
		// 1.02 = 1/3.
		{"KAI 3 × .34, dominant", dominant, []Claim{c(.34, 0), c(.34, 0), c(.34, 0)}, []float64{1. / 3, 1. / 3, 1. / 3}},
		{"KAI 3 × .34, memory", memory, []Claim{c(.34, 0), c(.34, 0), c(.34, 0)}, []float64{1. / 3, 1. / 3, 1. / 3}},
		// A KAI reservation without sharers holds the whole GPU.
		{"reservation", dominant, []Claim{c(1, 0)}, []float64{1}},
		// Garbage counts as 0: a NaN and a negative claim pay nothing.
		{"garbage", dominant, []Claim{c(math.NaN(), -1), c(.5, 0)}, []float64{0, .5}},
		{"nothing claimed", dominant, []Claim{c(0, 0)}, []float64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FractionalShares(nil, tc.policy, tc.claims)
			if len(got) != len(tc.want) {
				t.Fatalf("%d shares, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Errorf("shares %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
}

// TestDominantSharesProperties: over random GPUs, the dominant rule's shares
// and the free capacity R add up to 1, no holder pays more than its dominant
// share, and R is the free capacity of the tightest axis (none shown free that
// one axis could not grant, none hidden that every axis could).
func TestDominantSharesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 3073))
	for range 20000 {
		n := 1 + rng.IntN(8)
		claims := make([]Claim, n)
		var sumMem, sumCores float64
		coreAxis := false
		for i := range claims {
			claims[i].Memory = rng.Float64() * 1.2 / float64(n)
			if rng.IntN(3) != 0 {
				claims[i].Cores = rng.Float64() * 1.2 / float64(n)
				coreAxis = true
			}
			sumMem += claims[i].Memory
			sumCores += claims[i].Cores
		}
		shares := FractionalShares(nil, SharePolicy{Kind: Dominant}, claims)
		sum := 0.0
		for i, s := range shares {
			d := max(claims[i].Memory, claims[i].Cores)
			if s < 0 || s > d+1e-12 {
				t.Fatalf("claims %+v: share %d = %g, more than its dominant share %g", claims, i, s, d)
			}
			sum += s
		}
		wantFree := max(0, 1-sumMem)
		if coreAxis {
			wantFree = max(0, min(1-sumMem, 1-sumCores))
		}
		if free := 1 - sum; math.Abs(free-wantFree) > 1e-12 {
			t.Fatalf("claims %+v: shares %v leave %g free, the tightest axis leaves %g", claims, shares, free, wantFree)
		}
	}
}

// TestSharesSumToAtMostOne: every policy's shares of random (and garbage)
// claims are in [0, 1] and sum to at most 1.
func TestSharesSumToAtMostOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	for range 20000 {
		claims := make([]Claim, rng.IntN(9))
		for i := range claims {
			claims[i] = Claim{Memory: maybeNaN(rng, rng.Float64()*0.8-0.1), Cores: maybeNaN(rng, rng.Float64()*0.8-0.1)}
		}
		policy := SharePolicy{Kind: SharePolicyKind(rng.IntN(4)), MemoryWeight: rng.Float64()}
		sum := 0.0
		for _, s := range FractionalShares(nil, policy, claims) {
			if !(s >= 0 && s <= 1) {
				t.Fatalf("%v of %+v: share %g", policy, claims, s)
			}
			sum += s
		}
		if sum > 1+1e-12 {
			t.Fatalf("%v of %+v: shares sum to %g", policy, claims, sum)
		}
	}
}

func TestParseFractional(t *testing.T) {
	const models = "models: [{match: '.*', hourly_eur: 1}]\n"
	tests := []struct {
		yaml    string
		want    SharePolicy
		wantErr string
	}{
		{"", SharePolicy{Kind: Dominant, MemoryWeight: 0.5}, ""},
		{"fractional: {policy: memory}\n", SharePolicy{Kind: MemoryShares, MemoryWeight: 0.5}, ""},
		{"fractional: {policy: cores}\n", SharePolicy{Kind: CoreShares, MemoryWeight: 0.5}, ""},
		{"fractional: {policy: weighted}\n", SharePolicy{Kind: Weighted, MemoryWeight: 0.5}, ""},
		{"fractional: {policy: weighted, memory_weight: 0.7}\n", SharePolicy{Kind: Weighted, MemoryWeight: 0.7}, ""},
		{"fractional: {policy: weighted, memory_weight: 0}\n", SharePolicy{Kind: Weighted, MemoryWeight: 0}, ""},
		{"fractional: {policy: weighted, memory_weight: 1}\n", SharePolicy{Kind: Weighted, MemoryWeight: 1}, ""},
		{"fractional: {policy: dominant}\n", SharePolicy{Kind: Dominant, MemoryWeight: 0.5}, ""},
		{"fractional: {policy: weighted, memory_weight: 1.01}\n", SharePolicy{}, "b.yaml:1: fractional.memory_weight: must be between 0 and 1, got 1.01"},
		{"fractional: {policy: weighted, memory_weight: -0.1}\n", SharePolicy{}, "fractional.memory_weight: must be between 0 and 1"},
		{"fractional: {policy: memory, memory_weight: 0.5}\n", SharePolicy{}, "fractional.memory_weight: only with policy weighted, not memory"},
		{"fractional: {policy: max}\n", SharePolicy{}, `fractional.policy: must be dominant, memory, cores or weighted, got "max"`},
		{"fractional: {policy: 3}\n", SharePolicy{}, "fractional.policy"},
		{"fractional:\n  policy: memory\n  weight: 1\n", SharePolicy{}, "b.yaml:3: fractional.weight: unknown field"},
	}
	for _, tc := range tests {
		b, err := Parse([]byte(tc.yaml+models), "b.yaml")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if b.Fractional != tc.want {
			t.Errorf("%q: policy %+v, want %+v", tc.yaml, b.Fractional, tc.want)
		}
	}
}

// TestLedgerEstimatedActivity: a fractional holder without its own activity
// is busy or idle by the device's, and that time is also counted as
// estimated; one with its own activity, or one not flagged, is not; an
// unmeasured gap is unknown, not estimated.
func TestLedgerEstimatedActivity(t *testing.T) {
	p, q, r := HolderKey{"a", "p", "c"}, HolderKey{"b", "q", "c"}, HolderKey{"c", "r", "c"}
	l := NewLedger(&bookSource{mustParse(t, "models: [{match: '.*', hourly_eur: 3.6}]\n")})
	g := GPUState{HoldersKnown: true, UUID: "G", Activity: 0.8, Holders: []Holder{
		{Key: p, Share: 0.5, Activity: math.NaN(), ActivityEstimated: true},
		{Key: q, Share: 0.25, Activity: 0.01, ActivityEstimated: true}, // its own activity: measured
		{Key: r, Share: 0.25, Activity: math.NaN()},                    // the device's, not flagged
	}}
	l.Advance(1000*time.Second, []GPUState{g})
	l.AdvanceUnmeasured(500*time.Second, []GPUState{g})
	// 3.6 EUR/h = 0.001 EUR/s: p is busy 0.5 × 1000 s = 500 s, 0.5 EUR, all estimated.
	got := l.AppendEstimates(nil)
	if len(got) != 1 || got[0].Holder != p || got[0].Device != "G" || !within(got[0].Seconds, 500) || !within(got[0].EUR, 0.5) {
		t.Errorf("estimates %+v, want p's 500 s and 0.5 EUR", got)
	}
	checkSeries(t, l, []wantSeries{
		{"G", p, Busy, 500, 0.5}, {"G", p, Idle, 0, 0}, {"G", p, Unknown, 250, 0.25},
		{"G", q, Busy, 0, 0}, {"G", q, Idle, 250, 0.25}, {"G", q, Unknown, 125, 0.125},
		{"G", r, Busy, 250, 0.25}, {"G", r, Idle, 0, 0}, {"G", r, Unknown, 125, 0.125},
		{"G", HolderKey{}, Unallocated, 0, 0},
	})
}

// fractionalHolders gives hs the shares a random policy gives random claims,
// some flagged as estimated: the fractional holders of the ledger's property
// test (TestLedgerConservation).
func fractionalHolders(rng *rand.Rand, hs []Holder) {
	claims := make([]Claim, len(hs))
	for i := range claims {
		claims[i] = Claim{Memory: rng.Float64() * 0.5}
		if rng.IntN(2) == 0 {
			claims[i].Cores = rng.Float64() * 0.5
		}
	}
	policy := SharePolicy{Kind: SharePolicyKind(rng.IntN(4)), MemoryWeight: rng.Float64()}
	for i, s := range FractionalShares(nil, policy, claims) {
		hs[i].Share, hs[i].ActivityEstimated = s, rng.IntN(2) == 0
	}
}

// checkEstimates holds the estimated series of one tick to their rule: they
// grow only in a measured tick, for a holder flagged ActivityEstimated
// without its own activity, by no more than its busy and idle time grew.
func checkEstimates(t *testing.T, before, after []Estimate, totBefore, totAfter map[seriesKey]Total, inputs map[string]deviceInput, measured bool) {
	t.Helper()
	type key struct {
		device string
		holder HolderKey
	}
	prev := map[key]Estimate{}
	for _, e := range before {
		prev[key{e.Device, e.Holder}] = e
	}
	for _, e := range after {
		k := key{e.Device, e.Holder}
		d := e.Seconds - prev[k].Seconds
		if d < 0 || e.EUR < prev[k].EUR {
			t.Fatalf("estimate %+v went down from %+v", e, prev[k])
		}
		if d == 0 {
			continue
		}
		held := 0.0
		for _, st := range []State{Busy, Idle} {
			sk := seriesKey{e.Device, e.Holder, st}
			held += totAfter[sk].Seconds - totBefore[sk].Seconds
		}
		if d > held*(1+1e-9)+1e-12 {
			t.Fatalf("estimate of %+v grew %g s, more than its busy and idle %g s", k, d, held)
		}
		in := inputs[e.Device]
		hs := in.gpu.Holders
		if in.instance != nil {
			hs = in.instance.Holders
		}
		flagged := false
		for _, h := range hs {
			flagged = flagged || (h.Key == e.Holder && h.ActivityEstimated && math.IsNaN(h.Activity))
		}
		if !measured || !flagged {
			t.Fatalf("estimate of %+v grew (measured %v) without a flagged holder lacking its own activity", k, measured)
		}
	}
}
