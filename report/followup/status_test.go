package followup_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/followup"
)

// day is the start of day n of this period.
func day(n int) time.Time { return week2.Add(time.Duration(n) * 24 * time.Hour) }

// TestRelease: a release is applied when the holding no longer holds the
// GPU at the end of the period, whatever took the GPU since; its realized
// figure is the GPU's cost in this period per month. The baseline promised
// 1.50 EUR/h × 730.5 h; in this period GPU-A costs 2.00 EUR/h, 336 EUR over
// the 168 h, so realized = 336 × 730.5/168 = 1461.00 EUR/month.
func TestRelease(t *testing.T) {
	rec := advice.Recommendation{Kind: "release", Target: "ml/nb-0/main", Holdings: []string{"ml/nb-0/main"}, Nodes: []string{"node-a"},
		GPUs: []string{"GPU-A"}, FreedGPUs: []string{"GPU-A"}, FreedEURPerMonth: 1.50 * 730.5}
	gpus := []gpu{{"GPU-A", "node-a", "0", 2.00}, {"GPU-B", "node-a", "1", 3.00}}
	busyB := use{gpu: "GPU-B", holder: "ml/train-0/main", from: 0, to: 6, busy: 0.9}
	for _, tc := range []struct {
		name     string
		uses     []use
		status   string
		realized float64
		since    time.Time // zero: before the period
		went     string
		unalloc  float64 // hours
		other    float64 // hours
	}{
		{"left on day 3, unallocated since", []use{{gpu: "GPU-A", holder: "ml/nb-0/main", from: 0, to: 2}, {gpu: "GPU-A", from: 3, to: 6}, busyB},
			followup.Applied, 1461, day(3), "unallocated", 96, 0},
		// It held the GPU in the period's first step only: free since that
		// step's end, day 1 — not since before the period began.
		{"left in the first step", []use{{gpu: "GPU-A", holder: "ml/nb-0/main", from: 0, to: 0}, {gpu: "GPU-A", from: 1, to: 6}, busyB},
			followup.Applied, 1461, day(1), "unallocated", 144, 0},
		// It held the GPU up to the period's last day, not in it: at the
		// end it no longer holds it (the last bucket is the boundary).
		{"left in the last step", []use{{gpu: "GPU-A", holder: "ml/nb-0/main", from: 0, to: 5}, {gpu: "GPU-A", from: 6, to: 6}, busyB},
			followup.Applied, 1461, day(6), "unallocated", 24, 0},
		{"still there at the end", []use{{gpu: "GPU-A", holder: "ml/nb-0/main", from: 0, to: 6}, busyB},
			followup.NotApplied, 0, time.Time{}, "", 0, 0},
		{"gone before the period, taken by other work", []use{{gpu: "GPU-A", holder: "ci/job-0/main", from: 0, to: 6, busy: 0.9}, busyB},
			followup.Applied, 1461, time.Time{}, "other work", 0, 168},
		{"unallocated, then other work", []use{{gpu: "GPU-A", from: 0, to: 1}, {gpu: "GPU-A", holder: "ci/job-0/main", from: 2, to: 6, busy: 0.9}, busyB},
			followup.Applied, 1461, time.Time{}, "unallocated and other work", 48, 120},
		{"moved to another GPU", []use{{gpu: "GPU-A", from: 0, to: 6}, {gpu: "GPU-B", holder: "ml/nb-0/main", from: 0, to: 6}},
			followup.Applied, 1461, time.Time{}, "unallocated", 168, 0},
		{"GPU without data", []use{busyB}, followup.Gone, 0, time.Time{}, "", 0, 0},
		{"GPU broken", []use{{gpu: "GPU-A", holder: "ml/nb-0/main", from: 0, to: 1}, {gpu: "GPU-A", from: 2, to: 6, lost: true}, busyB},
			followup.Gone, 0, time.Time{}, "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := gpus
			if tc.name == "GPU without data" {
				gs = gpus[1:]
			}
			res := follow(t, []advice.Recommendation{rec}, gs, tc.uses)
			it := res.Items[0]
			if it.Status != tc.status || !near(it.FreedEURPerMonthRealized, tc.realized) || it.FreedEURPerMonthPromised != 1.50*730.5 {
				t.Fatalf("status %s, realized %.4f, promised %.2f; want %s, %.2f, %.2f\n%s", it.Status, it.FreedEURPerMonthRealized,
					it.FreedEURPerMonthPromised, tc.status, tc.realized, 1.50*730.5, it.Evidence)
			}
			if tc.went == "" {
				if len(it.FreedGPUs) != 0 {
					t.Errorf("freed GPUs %+v, want none", it.FreedGPUs)
				}
				return
			}
			if len(it.FreedGPUs) != 1 {
				t.Fatalf("freed GPUs %+v, want GPU-A", it.FreedGPUs)
			}
			f := it.FreedGPUs[0]
			if f.UUID != "GPU-A" || !f.Promised || f.Went != tc.went || !near(f.UnallocatedHours, tc.unalloc) || !near(f.OtherHeldHours, tc.other) ||
				f.FreeBeforePeriod != tc.since.IsZero() || !tc.since.IsZero() && !f.FreeSince.Equal(tc.since) {
				t.Errorf("freed %+v; want GPU-A promised, went %s, %.0f h unallocated, %.0f h other work, free since %v", f, tc.went, tc.unalloc, tc.other, tc.since)
			}
			if since := tc.since.Format(time.RFC3339); !tc.since.IsZero() && (!strings.Contains(it.Evidence, "no longer holds GPU node-a/0 (GPU-A), since "+since) ||
				!strings.Contains(it.Evidence, "GPU-A) free since "+since)) {
				t.Errorf("evidence %q does not say the GPU is left and free since %s", it.Evidence, since)
			}
			if tc.unalloc > 0 != strings.Contains(it.Evidence, "sat unallocated") || tc.unalloc > 0 != strings.Contains(it.Evidence, "money still burning") ||
				tc.other > 0 != strings.Contains(it.Evidence, "taken by other work") {
				t.Errorf("evidence %q does not say where the GPU went (%s)", it.Evidence, tc.went)
			}
		})
	}
}

// TestTimeSlicing: time-slicing is done for a pod that shares a whole GPU
// at the end — its device time-sliced, or another holder on it — and the
// change frees, of the GPUs its pods left, as many as the baseline counted:
// those it counted first, then the cheapest. The baseline packed dev/a,
// dev/b and dev/c (on G1 at 1.00, G2 at 1.50 and G3 at 2.00 EUR/h) onto one
// GPU, freeing G1 and G2: (1.00 + 1.50) × 730.5 = 1826.25 EUR/month.
func TestTimeSlicing(t *testing.T) {
	rec := advice.Recommendation{Kind: "time-slicing", Target: "dev", Holdings: []string{"dev/a/main", "dev/b/main", "dev/c/main"},
		GPUs: []string{"G1", "G2", "G3"}, FreedGPUs: []string{"G1", "G2"}, FreedEURPerMonth: 2.50 * 730.5, Replicas: 3}
	gpus := []gpu{{"G1", "n", "1", 1.00}, {"G2", "n", "2", 1.50}, {"G3", "n", "3", 2.00}, {"G4", "n", "4", 4.00}}
	on := func(g, pod, sharing string) use {
		return use{gpu: g, holder: "dev/" + pod + "/main", from: 0, to: 6, busy: 0.1, weight: 0.5, sharing: sharing}
	}
	free := func(g string) use { return use{gpu: g, from: 0, to: 6} }
	dearG1 := slices.Clone(gpus)
	dearG1[0].rate = 5.00
	for _, tc := range []struct {
		name    string
		uses    []use
		status  string
		states  []string // of dev/a, dev/b, dev/c
		freed   []string // UUIDs counted, in order
		realize float64  // EUR/month
		gpus    []gpu    // nil: gpus
	}{
		// G1 and G2 left: 168 × (1.00 + 1.50) × 730.5/168 = 1826.25.
		{"two of three share G4 by time-slicing", []use{on("G4", "a", "time-slicing"), on("G4", "b", "time-slicing"), {gpu: "G3", holder: "dev/c/main", to: 6, busy: 0.1}, free("G1"), free("G2")},
			followup.PartlyApplied, []string{"done", "done", "not done"}, []string{"G1", "G2"}, 1826.25, nil},
		// G1, G2 and G3 left; the baseline counted two: G1 and G2.
		{"all share G4", []use{on("G4", "a", "time-slicing"), on("G4", "b", "time-slicing"), on("G4", "c", "time-slicing"), free("G1"), free("G2"), free("G3")},
			followup.Applied, []string{"done", "done", "done"}, []string{"G1", "G2"}, 1826.25, nil},
		// G1 now costs 5.00 EUR/h, more than G3: the baseline's G1 and G2
		// still count first (the cheaper of them first), (5.00 + 1.50) ×
		// 730.5 = 4748.25.
		{"all share G4, G1 dearer now", []use{on("G4", "a", "time-slicing"), on("G4", "b", "time-slicing"), on("G4", "c", "time-slicing"), free("G1"), free("G2"), free("G3")},
			followup.Applied, []string{"done", "done", "done"}, []string{"G2", "G1"}, 4748.25, dearG1},
		// b still holds G2, a and c left G1 and G3: G1 as counted, G3 in
		// G2's place: (1.00 + 2.00) × 730.5 = 2191.50.
		{"the baseline's GPU still held, another left", []use{on("G4", "a", "time-slicing"), {gpu: "G2", holder: "dev/b/main", to: 6, busy: 0.1}, on("G4", "c", "time-slicing"), free("G1"), free("G3")},
			followup.PartlyApplied, []string{"done", "not done", "done"}, []string{"G1", "G3"}, 2191.50, nil},
		// No sharing label (e.g. a source that cannot tell), but two
		// holders on one whole GPU: they share it.
		{"two holders on one GPU", []use{on("G4", "a", ""), on("G4", "b", ""), on("G4", "c", "time-slicing"), free("G1"), free("G2"), free("G3")},
			followup.Applied, []string{"done", "done", "done"}, []string{"G1", "G2"}, 1826.25, nil},
		{"none shares", []use{{gpu: "G1", holder: "dev/a/main", to: 6}, {gpu: "G2", holder: "dev/b/main", to: 6}, {gpu: "G3", holder: "dev/c/main", to: 6}},
			followup.NotApplied, []string{"not done", "not done", "not done"}, nil, 0, nil},
		// Ended in the period: not there at the end, so gone.
		{"every pod gone", []use{{gpu: "G1", holder: "dev/a/main", to: 2}, free("G2"), free("G3"), {gpu: "G4", holder: "ml/x/main", to: 6}},
			followup.Gone, []string{"gone", "gone", "gone"}, nil, 0, nil},
		{"one gone, the others share", []use{on("G4", "a", "time-slicing"), on("G4", "b", "time-slicing"), free("G1"), free("G2"), free("G3")},
			followup.Applied, []string{"done", "done", "gone"}, []string{"G1", "G2"}, 1826.25, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := tc.gpus
			if gs == nil {
				gs = gpus
			}
			it := follow(t, []advice.Recommendation{rec}, gs, tc.uses).Items[0]
			var states, freed []string
			for _, p := range it.Parts {
				states = append(states, p.State)
			}
			for _, f := range it.FreedGPUs {
				freed = append(freed, f.UUID)
			}
			if it.Status != tc.status || !slices.Equal(states, tc.states) || !slices.Equal(freed, tc.freed) || !near(it.FreedEURPerMonthRealized, tc.realize) {
				t.Errorf("status %s, parts %v, freed %v, realized %.4f; want %s, %v, %v, %.2f\n%s",
					it.Status, states, freed, it.FreedEURPerMonthRealized, tc.status, tc.states, tc.freed, tc.realize, it.Evidence)
			}
		})
	}
}

// TestMIG: MIG is done on each GPU the baseline repartitions when its MIG
// instances at the end have the advised profiles, in any order. The baseline
// packed three pods (on M5, M6, M7) onto M5 (1g.10gb ×2) and M6 (1g.10gb +
// 3g.40gb),
// freeing M7 at 2.00 EUR/h: realized 2.00 × 730.5 = 1461 EUR/month once the
// pods left it.
func TestMIG(t *testing.T) {
	rec := advice.Recommendation{Kind: "mig", Target: "H100-80GB", Holdings: []string{"ai/p/main", "ai/q/main", "ai/r/main"},
		GPUs: []string{"M5", "M6", "M7"}, FreedGPUs: []string{"M7"}, FreedEURPerMonth: 1.80 * 730.5,
		MIGLayouts: []advice.GPULayout{{GPU: "M5", Profiles: []string{"1g.10gb", "1g.10gb"}}, {GPU: "M6", Profiles: []string{"1g.10gb", "3g.40gb"}}}}
	gpus := []gpu{{"M5", "n", "5", 3.00}, {"M6", "n", "6", 3.00}, {"M7", "n", "7", 2.00}}
	inst := func(g, gi, profile, holder string, from int) use {
		return use{gpu: g, gi: gi, profile: profile, holder: holder, from: from, to: 6, busy: 0.4, weight: 1.0 / 7}
	}
	whole := func(g, holder string) use { return use{gpu: g, holder: holder, from: 0, to: 6, busy: 0.4} }
	m5 := []use{inst("M5", "7", "1g.10gb", "ai/p/main", 0), inst("M5", "8", "1g.10gb", "ai/q/main", 0)}
	// In GPU_I_ID order M6's instances are 3g.40gb, 1g.10gb: the advised
	// profiles in another order.
	m6 := []use{inst("M6", "1", "3g.40gb", "ai/r/main", 0), inst("M6", "9", "1g.10gb", "", 0)}
	for _, tc := range []struct {
		name     string
		uses     []use
		status   string
		states   []string
		realized float64
	}{
		{"both layouts", append(append(slices.Clone(m5), m6...), use{gpu: "M7", from: 0, to: 6}), followup.Applied, []string{"done", "done"}, 1461},
		{"a profile missing", append(append(slices.Clone(m5), inst("M6", "1", "3g.40gb", "ai/r/main", 0)), use{gpu: "M7", from: 0, to: 6}), followup.PartlyApplied, []string{"done", "not done"}, 1461},
		// r still holds M7 whole, but q left M6 for M5 (other work took it):
		// M6 is freed in M7's place, 3.00 × 730.5 = 2191.50.
		{"one of two", append(slices.Clone(m5), whole("M6", "ai/x/main"), whole("M7", "ai/r/main")), followup.PartlyApplied, []string{"done", "not done"}, 2191.50},
		{"another layout", append([]use{inst("M5", "7", "1g.10gb", "ai/p/main", 0), inst("M5", "3", "2g.20gb", "ai/q/main", 0)}, whole("M6", "ai/r/main"), whole("M7", "ai/x/main")),
			followup.NotApplied, []string{"not done", "not done"}, 0},
		// M6's instance 1 was a 2g.20gb and a 3g.40gb in the last step: its
		// layout at the end is not known, though the profile that sorts last
		// would make it the advised one.
		{"repartitioned in the last step", append(slices.Clone(m5), inst("M6", "1", "2g.20gb", "ai/x/main", 0), inst("M6", "1", "3g.40gb", "ai/r/main", 6),
			inst("M6", "9", "1g.10gb", "", 0), use{gpu: "M7", from: 0, to: 6}), followup.PartlyApplied, []string{"done", "not done"}, 1461},
		{"whole GPUs", []use{whole("M5", "ai/p/main"), whole("M6", "ai/q/main"), whole("M7", "ai/r/main")}, followup.NotApplied, []string{"not done", "not done"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := follow(t, []advice.Recommendation{rec}, gpus, tc.uses).Items[0]
			var states []string
			for _, p := range it.Parts {
				states = append(states, p.State)
			}
			if it.Status != tc.status || !slices.Equal(states, tc.states) || !near(it.FreedEURPerMonthRealized, tc.realized) {
				t.Errorf("status %s, parts %v, realized %.4f; want %s, %v, %.2f\n%s", it.Status, states, it.FreedEURPerMonthRealized, tc.status, tc.states, tc.realized, it.Evidence)
			}
		})
	}
}

// TestDrain: a drain is applied when the node holds no pods at the end; it
// frees the node's GPUs that are not broken. The baseline drained node-x
// (X1, X2); in this period they cost 1.00 and 1.20 EUR/h: realized
// (1.00 + 1.20) × 730.5 = 1607.10 EUR/month.
func TestDrain(t *testing.T) {
	rec := advice.Recommendation{Kind: "drain", Target: "node-x", Nodes: []string{"node-x"}, GPUs: []string{"X1", "X2"}, FreedGPUs: []string{"X1", "X2"}, FreedEURPerMonth: 2 * 730.5}
	gpus := []gpu{{"X1", "node-x", "0", 1.00}, {"X2", "node-x", "1", 1.20}, {"Y", "node-y", "0", 3.00}}
	y := use{gpu: "Y", holder: "ml/t/main", from: 0, to: 6, busy: 1}
	for _, tc := range []struct {
		name     string
		gpus     []gpu
		uses     []use
		status   string
		realized float64
		since    string // in the evidence
		x1Since  time.Time
	}{
		{"idle all week", gpus, []use{{gpu: "X1", to: 6}, {gpu: "X2", to: 6}, y}, followup.Applied, 1607.10, "since before this period began", time.Time{}},
		// Any pod is the drain's: X1 is free since it left, and went
		// nowhere but unallocated.
		{"a pod left on day 2", gpus, []use{{gpu: "X1", holder: "ci/b/main", to: 1}, {gpu: "X1", from: 2, to: 6}, {gpu: "X2", to: 6}, y}, followup.Applied, 1607.10, "since " + day(2).Format(time.RFC3339), day(2)},
		{"a pod there at the end", gpus, []use{{gpu: "X1", holder: "ci/b/main", from: 3, to: 6}, {gpu: "X1", to: 2}, {gpu: "X2", to: 6}, y}, followup.NotApplied, 0, "ci/b/main", time.Time{}},
		// X1 fell off the bus: only X2 is freed, 1.20 × 730.5 = 876.60.
		{"one GPU broken", gpus, []use{{gpu: "X1", to: 6, lost: true}, {gpu: "X2", to: 6}, y}, followup.Applied, 876.60, "holds no pods", time.Time{}},
		{"node gone", gpus[2:], []use{y}, followup.Gone, 0, "no data in this period", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := follow(t, []advice.Recommendation{rec}, tc.gpus, tc.uses).Items[0]
			if it.Status != tc.status || !near(it.FreedEURPerMonthRealized, tc.realized) || !strings.Contains(it.Evidence, tc.since) {
				t.Errorf("status %s, realized %.4f, evidence %q; want %s, %.2f, %q", it.Status, it.FreedEURPerMonthRealized, it.Evidence, tc.status, tc.realized, tc.since)
			}
			for _, f := range it.FreedGPUs {
				if f.UUID == "X1" && !tc.x1Since.IsZero() && (!f.FreeSince.Equal(tc.x1Since) || f.Went != "unallocated" || f.OtherHeldHours != 0) {
					t.Errorf("X1 %+v, want free since %s, unallocated", f, tc.x1Since)
				}
			}
		})
	}
}

// TestGoneTargetLastStep: a target not there at the end is gone, and the
// evidence names the end of the last step it held a device in — its last
// over all its devices, not the first it held one in, nor the first device's
// last. dev/a held G1 on days 0–1 and G2 on days 2–4 of the period that
// begins 2026-01-12: its last step is day 4, which ends on 2026-01-17.
func TestGoneTargetLastStep(t *testing.T) {
	rec := advice.Recommendation{Kind: "time-slicing", Target: "dev", Holdings: []string{"dev/a/main"},
		GPUs: []string{"G1"}, FreedGPUs: []string{"G1"}, FreedEURPerMonth: 730.5, Replicas: 2}
	gpus := []gpu{{"G1", "n", "1", 1.00}, {"G2", "n", "2", 1.50}}
	uses := []use{
		{gpu: "G1", holder: "dev/a/main", from: 0, to: 1, busy: 0.1}, {gpu: "G1", from: 2, to: 6},
		{gpu: "G2", holder: "ml/x/main", from: 0, to: 1, busy: 0.5}, {gpu: "G2", holder: "dev/a/main", from: 2, to: 4, busy: 0.1}, {gpu: "G2", from: 5, to: 6},
	}
	it := follow(t, []advice.Recommendation{rec}, gpus, uses).Items[0]
	want := "dev/a/main is not there at the end of this period (last held a device in the step ending 2026-01-17T00:00:00Z)"
	if it.Status != followup.Gone || len(it.Parts) != 1 || it.Parts[0].State != "gone" || it.Parts[0].Evidence != want {
		t.Errorf("status %s, parts %+v; want gone, one part gone: %q", it.Status, it.Parts, want)
	}
}
