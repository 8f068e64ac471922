package ledger

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// TestStretchBucketsAtLeastOne: a stretch holds a week of step buckets, and
// never none — a step longer than a week would otherwise make the stretch
// zero buckets long and the ledger's read never end. By hand: 7 d / 1 h = 168;
// 7 d / 7 d = 1; 7 d / 8 d = 0, made 1; 7 d / 30 d = 0, made 1; a stretch set
// (tests) is kept.
func TestStretchBucketsAtLeastOne(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		step    time.Duration
		stretch int
		want    int
	}{
		{time.Hour, 0, 168},
		{7 * day, 0, 1},
		{8 * day, 0, 1},
		{30 * day, 0, 1},
		{8 * day, 3, 3},
	} {
		c := &collector{stretch: tc.stretch}
		if got := c.stretchBuckets(tc.step); got != tc.want {
			t.Errorf("stretchBuckets(%s) with stretch %d = %d, want %d", tc.step, tc.stretch, got, tc.want)
		}
	}
}

// TestLedgerStepLongerThanAWeek reads the ledger in 8-day buckets over 16
// days, the report's own stretch (a week of buckets: one bucket each). The
// read must end — it runs under a deadline far beyond what it needs on a
// loaded machine, and ends when that passes — with these figures, scraped
// every 10 min:
//
//	ml/p on GPU-0 runs from 9 d before the range to its end:
//	  16 d = 1,382,400 device-seconds, × 2.70 EUR/h = 1,036.80 EUR;
//	  bucket 0 (0, 8 d] 691,200 s, bucket 1 (8 d, 16 d] 691,200 s.
//	ml/q on GPU-1 starts at 10 d, new in bucket 1 (its counter ends at
//	  6 d = 518,400 s, within the bucket and the slack: counted from 0):
//	  518,400 device-seconds, 388.80 EUR.
func TestLedgerStepLongerThanAWeek(t *testing.T) {
	day := 24 * time.Hour
	step := 8 * day
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * step)
	b := engine.NewStoreBuilder()
	for _, h := range []struct {
		gpu, pod string
		from     time.Time
	}{
		{"GPU-0", "p", start.Add(-9 * day)},
		{"GPU-1", "q", start.Add(10 * day)},
	} {
		base := []string{"UUID", h.gpu, "gpu", h.gpu[len(h.gpu)-1:], "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", h.pod, "container", "main", "state", "busy"}
		for ts := h.from.Add(10 * time.Minute); !ts.After(end); ts = ts.Add(10 * time.Minute) {
			appendLedger(t, b, base, ts, ts.Sub(h.from).Seconds())
		}
	}
	// Generous for a loaded 2-core machine under -race: the read takes well
	// under a second alone.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
	c := &collector{run: engine.NewRunner(q, engine.Limits{MaxPoints: 1000}, nil)}
	if _, err := c.probeWindows(ctx, end); err != nil {
		t.Fatal(err)
	}
	d := model.NewDataset(model.Range{Start: start, End: end, Step: step})
	l, err := c.ledger(ctx, d, start, end, true, "")
	if err != nil {
		t.Fatalf("the ledger read in %s buckets: %v", step, err)
	}
	wants := map[string][2]float64{"p": {1_382_400, 1036.80}, "q": {518_400, 388.80}}
	got := map[string][2]float64{}
	for k, e := range l {
		got[k.Holder.Pod] = [2]float64{got[k.Holder.Pod][0] + e.Seconds[model.StateBusy], got[k.Holder.Pod][1] + e.EUR[model.StateBusy]}
	}
	for pod, w := range wants {
		if g := got[pod]; math.Abs(g[0]-w[0]) > 1e-6 || math.Abs(g[1]-w[1]) > 1e-6 {
			t.Errorf("ml/%s: %.3f busy device-seconds, %.6f EUR; want %.0f, %.2f", pod, g[0], g[1], w[0], w[1])
		}
	}
	// Per bucket: p alone in bucket 0; p and q's first bucket in bucket 1.
	for b, want := range []float64{691_200, 691_200 + 518_400} {
		if got := d.Timeline[b][model.StateBusy]; math.Abs(got-want) > 1e-6 {
			t.Errorf("bucket %d: %.3f busy device-seconds, want %.0f", b, got, want)
		}
	}
}
