package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

var historyStart0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// historyDataset is a 6-hour range in 1 h buckets in which each GPU had
// the idle device-seconds seen[uuid][bucket], held by one pod at 1 EUR/h.
func historyDataset(seen map[string][]float64) *model.Dataset {
	d := model.NewDataset(model.Range{Start: historyStart0, End: historyStart0.Add(6 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
	for uuid, secs := range seen {
		k := model.HoldingKey{Dev: model.DeviceKey{UUID: uuid}, Holder: model.HolderKey{Namespace: "ns", Pod: "p-" + uuid, Container: "c"}}
		e := &model.LedgerEntry{Model: "NVIDIA H100 80GB HBM3", Host: "n1", GPU: uuid, Last: -1, BusyPerBucket: make([]float32, d.Buckets)}
		d.Ledger[k] = e
		for b, s := range secs {
			if s > 0 {
				e.Seconds[model.StateIdle] += s
				e.EUR[model.StateIdle] += s / 3600
				d.AddSeconds(e, d.GPU(k.Dev.GPU(), e), b, model.StateIdle, s)
			}
		}
	}
	return d
}

// TestCoverageFromFirstSeen: a GPU counts from the first step bucket in
// which it is seen, from its first seconds there. GPU A is seen all 6 h;
// GPU B from the middle of bucket 3 (1800 s) — a node added then — with
// bucket 5 empty. B expects 0.5 + 2 × 1 = 2.5 h, sees 1.5 h and misses the
// 1 h of bucket 5 (a gap 5 h – 6 h), not the 3 h before it was there: the
// fleet expects 8.5 h, sees 7.5 h, misses 1 h. The history begins with A at
// the range's start.
func TestCoverageFromFirstSeen(t *testing.T) {
	d := historyDataset(map[string][]float64{
		"A": {3600, 3600, 3600, 3600, 3600, 3600},
		"B": {0, 0, 0, 1800, 3600, 0},
	})
	r, err := Analyze(d, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Coverage
	if !sameHours(c.ExpectedHours, 8.5) || !sameHours(c.SeenHours, 7.5) || !sameHours(c.MissingHours, 1) {
		t.Errorf("fleet expects %g h, sees %g, misses %g; want 8.5, 7.5, 1", c.ExpectedHours, c.SeenHours, c.MissingHours)
	}
	for _, g := range c.GPUs {
		if g.UUID == "B" && (!sameHours(g.ExpectedHours, 2.5) || !sameHours(g.MissingHours, 1)) {
			t.Errorf("GPU B expects %g h, misses %g; want 2.5, 1", g.ExpectedHours, g.MissingHours)
		}
	}
	if len(c.Gaps) != 1 || c.Gaps[0].UUID != "B" || !c.Gaps[0].From.Equal(historyStart0.Add(5*time.Hour)) || !sameHours(c.Gaps[0].Hours, 1) || c.Gaps[0].Kind != GapMissing {
		t.Errorf("gaps %+v, want B's missing 5 h – 6 h", c.Gaps)
	}
	if !r.Start.Equal(historyStart0) {
		t.Errorf("report from %s, want the range's start", r.Start)
	}
}

// TestHistoryStart: every GPU is first seen in bucket 2, with 1200 s there:
// the history begins at 3 h − 1200 s = 2 h 40 m. The report covers 3 h 20 m,
// says so, and scales a month by them (730.5 / 3.3333); its timeline
// begins with bucket 2. A first bucket 36 s short (1 % of the step) is the
// range's own start: jitter, not history.
func TestHistoryStart(t *testing.T) {
	d := historyDataset(map[string][]float64{"A": {0, 0, 1200, 3600, 3600, 3600}, "B": {0, 0, 600, 3600, 3600, 3600}})
	r, err := Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	from := historyStart0.Add(2*time.Hour + 40*time.Minute)
	if !r.Start.Equal(from) || r.Partial || !sameHours(r.MonthFactor(), 730.5/(10.0/3)) || len(r.Timeline) != 4 {
		t.Errorf("report from %s, partial %v, month × %g, %d timeline points; want from %s, complete, × %g, 4", r.Start, r.Partial, r.MonthFactor(), len(r.Timeline), from, 730.5/(10.0/3))
	}
	said := false
	for _, w := range r.Warnings {
		said = said || strings.Contains(w, "no data before 2026-01-05T02:40:00Z") && strings.Contains(w, "3.3 of the 6.0 hours asked for")
	}
	if !said {
		t.Errorf("warnings %q, want one saying from when", r.Warnings)
	}
	for _, first := range []float64{3564, 3563} {
		d := historyDataset(map[string][]float64{"A": {first, 3600, 3600, 3600, 3600, 3600}})
		r, err := Analyze(d, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if moved := r.Start.After(historyStart0); moved != (first == 3563) {
			t.Errorf("a first bucket of %g s: report from %s", first, r.Start)
		}
	}
}

// TestHistoryStartAtMostABucket: GPU A is first seen in bucket 2 with 3630
// s there (its counter's first reading holds 30 s from before the bucket);
// the history begins at the bucket's start, 2 h, not 30 s before it — and
// the report, less than the range, covers 4 h.
func TestHistoryStartAtMostABucket(t *testing.T) {
	r, err := Analyze(historyDataset(map[string][]float64{"A": {0, 0, 3630, 3600, 3600, 3600}}), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if from := historyStart0.Add(2 * time.Hour); !r.Start.Equal(from) {
		t.Errorf("report from %s, want %s", r.Start, from)
	}
}

// sameHours reports whether a and b agree to 1e-9 (relative above 1).
func sameHours(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
