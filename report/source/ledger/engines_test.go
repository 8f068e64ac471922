package ledger

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/engineplay"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/model/sketch"
)

// TestLedgerOnEveryEngine (issue 21, rows 1 and 6) plays six hours of an
// exporter scraped every 30 s on the minute — samples on every bucket's edge —
// that restarts twice without a gap in its scrapes, once inside a bucket
// (2h20m10s) and once on a bucket's edge (3h), beside holdings younger than an
// hour at the restarts, whose new counters climb past the value they had at the
// bucket before; and nobody scrapes the node from just after 4h to 5h. Read
// through the embedded engine, Prometheus 2's ranges and VictoriaMetrics'
// counter functions, every holding's device-seconds and EUR are the ones
// computed by hand below, the same on every engine, and the GPUs' buckets are
// what coverage needs.
//
// Hand-computed, device-seconds within (0, 6h], per holding (1 s/s each):
//
//	ledger           what a restart loses: the accrual after the stopping
//	                 process's last scrape (2h20m00s → 2h20m10s: 10 s;
//	                 2h59m30s → 3h: 30 s)
//	                 the gap: from the last scrape before it (4h) to the
//	                 first after it (5h00m30s), 3,630 s, which stays a gap
//	long       (−2h → 7h)        21,600 − 10 − 30 − 3,630 = 17,930
//	young-mid  (1h50m07s → 7h)   14,993 − 10 − 30 − 3,630 = 11,323
//	young-edge (2h30m07s → 7h)   12,593 − 30 − 3,630      =  8,933
//	ended      (0h30m07s → 1h30m07s)                         3,600
//	blip       (1h10m03s → 1h10m23s), shorter than a scrape     20
//	last       (5h59m50s → 7h): its only sample, 10, at the range's end  10
//
// young-mid reads 593 at 2h, climbs to 1,793 by 2h20m00s, restarts from 0 and
// reads 2,360 at 2h59m30s, past 593: a reading that takes the bucket as
// 2,360 − 593 = 1,767 loses 1,793 s. young-edge reads 1,763 at 2h59m30s and
// 3,600 at 4h, past it: taken as 3,600 − 1,763 = 1,837 it loses 1,763 s.
func TestLedgerOnEveryEngine(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(6 * time.Hour)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	const step, scrape = time.Hour, 30 * time.Second
	procs := []process{
		{at(-3 * time.Hour), at(2*time.Hour + 20*time.Minute + 10*time.Second)},
		{at(2*time.Hour + 20*time.Minute + 10*time.Second), at(3 * time.Hour)},
		{at(3 * time.Hour), at(8 * time.Hour)},
	}
	runs := []holdingRun{
		{"long", "long", at(-2 * time.Hour), at(7 * time.Hour)},
		{"young-mid", "young-mid", at(time.Hour + 50*time.Minute + 7*time.Second), at(7 * time.Hour)},
		{"young-edge", "young-edge", at(2*time.Hour + 30*time.Minute + 7*time.Second), at(7 * time.Hour)},
		{"ended", "ended", at(30*time.Minute + 7*time.Second), at(time.Hour + 30*time.Minute + 7*time.Second)},
		{"blip", "blip", at(time.Hour + 10*time.Minute + 3*time.Second), at(time.Hour + 10*time.Minute + 23*time.Second)},
		{"last", "last", at(5*time.Hour + 59*time.Minute + 50*time.Second), at(7 * time.Hour)},
	}
	unscraped := func(ts time.Time) bool { return ts.After(at(4*time.Hour)) && !ts.After(at(5*time.Hour)) }
	b := engine.NewStoreBuilder()
	play(t, b, procs, runs, scrape, 0, start, end, unscraped)
	st := b.Store()
	want := map[string]float64{"long": 17930, "young-mid": 11323, "young-edge": 8933, "ended": 3600, "blip": 20, "last": 10}
	// long's GPU per bucket ending 1h…6h: whole; whole; less the restarts' 40 s;
	// whole (from 0 after the restart at 3h); not scraped; from 5h00m30s.
	wantLong := []float64{3600, 3600, 3560, 3600, 0, 3570}
	// The whole range at once, and stretches of one, two and four buckets
	// (the restarts, the young series, the gap and the ended one on their
	// edges).
	for _, e := range engineplay.All(st) {
		for _, stretch := range []int{0, 1, 2, 4} {
			t.Run(fmt.Sprintf("%s, stretch %d", e.Name, stretch), func(t *testing.T) {
				d, l := ledgerOver(t, e.Q, start, end, step, stretch)
				seconds, eur, joules := map[string]float64{}, map[string]float64{}, map[string]float64{}
				for k, le := range l {
					for s := range model.NumStates {
						seconds[k.Holder.Namespace] += le.Seconds[s]
						eur[k.Holder.Namespace] += le.EUR[s]
						joules[k.Holder.Namespace] += le.Joules[s]
					}
				}
				for ns, w := range want {
					if math.Abs(seconds[ns]-w) > 1e-6 {
						t.Errorf("%s: %.3f device-seconds, want %.0f", ns, seconds[ns], w)
					}
					if math.Abs(eur[ns]-w*eurPerSecond) > 1e-9 {
						t.Errorf("%s: %.6f EUR, want %.6f", ns, eur[ns], w*eurPerSecond)
					}
					if math.Abs(joules[ns]-w*joulesPerSecond) > 1e-6 {
						t.Errorf("%s: %.3f J, want %.3f", ns, joules[ns], w*joulesPerSecond)
					}
				}
				g := d.GPUs[model.GPUKey{UUID: "GPU-long"}]
				if g == nil {
					t.Fatal("GPU-long not seen")
				}
				for i, w := range wantLong {
					if math.Abs(g.Seen[i]-w) > 1e-6 {
						t.Errorf("GPU-long, bucket ending %dh: %.1f device-seconds, want %.0f", i+1, g.Seen[i], w)
					}
				}
			})
		}
	}
}

// TestUsageOnEveryEngine (issue 21, row 7): activity and framebuffer scraped
// every 30 s on the minute — a sample on every 5-minute edge — read through
// the embedded engine and Prometheus 2's ranges give the same samples, each
// of one 5-minute step (t−5m, t]: 10 scrapes. Activity cycles 0, 0.1, …, 0.9
// over the 10 scrapes of a step, so every step's average is 0.45 (Prometheus 2
// over [t−5m, t] averaged 11 scrapes: 0.409 or 0.5); the framebuffer peaks at
// 6,000 MiB at every 10-minute scrape and is 1,000 MiB otherwise, so the steps
// ending on the 10 minutes read 6,000 and the others 1,000 (Prometheus 2 read
// 6,000 everywhere). The p95 of activity and p99 of framebuffer the advice
// reads follow from these samples alone.
func TestUsageOnEveryEngine(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	b := engine.NewStoreBuilder()
	dev := []string{"UUID", "GPU-0", "gpu", "0", "hostname", "node-0", "modelName", "NVIDIA A100-SXM4-80GB",
		"namespace", "ml", "pod", "p", "container", "c"}
	for k := 0; k <= 120; k++ {
		ts := start.Add(time.Duration(k) * 30 * time.Second).UnixMilli()
		fb := 1000.0
		if k%20 == 0 {
			fb = 6000
		}
		for _, s := range []struct {
			name string
			v    float64
		}{{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", float64(k%10) / 10}, {"DCGM_FI_DEV_FB_USED", fb}} {
			if err := b.Append(labels.FromStrings(append([]string{"__name__", s.name}, dev...)...), ts, s.v); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := b.Store()
	for _, e := range engineplay.All(st) {
		t.Run(e.Name, func(t *testing.T) {
			d := model.NewDataset(model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute})
			c := &collector{run: engine.NewRunner(e.Q, engine.Limits{MaxPoints: 1000}, nil)}
			if _, err := c.probeWindows(context.Background(), end); err != nil {
				t.Fatal(err)
			}
			if err := c.usage(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			// One holding; 12 steps of 0.45, and 6 steps of 1,000 MiB and 6 of
			// 6,000: the p50 (rank 6) is 1,000, the p51 (rank ⌈6.12⌉ = 7) 6,000.
			var act, fb sketch.Sketch
			for _, v := range d.Activity {
				act.Merge(v)
			}
			for _, v := range d.FBMiB {
				fb.Merge(v)
			}
			if act.Count() != 12 || fb.Count() != 12 {
				t.Fatalf("%d activity and %d framebuffer samples, want 12 each (one per 5 minutes)", act.Count(), fb.Count())
			}
			if math.Abs(act.Quantile(0)-0.45) > 1e-6 || math.Abs(act.Max()-0.45) > 1e-6 {
				t.Errorf("activity of the steps from %.4f to %.4f, want 0.45 each", act.Quantile(0), act.Max())
			}
			if fb.Quantile(0.5) != 1000 || fb.Quantile(0.51) != 6000 || fb.Max() != 6000 {
				t.Errorf("framebuffer p50 %.0f, p51 %.0f, peak %.0f MiB; want 6 steps of 1,000 and 6 of 6,000", fb.Quantile(0.5), fb.Quantile(0.51), fb.Max())
			}
		})
	}
}

// TestUUIDMatcher: a second read selects its GPUs' series by a quoted regular
// expression of their UUIDs, or every series when there are more than
// maxFineUUIDs.
func TestUUIDMatcher(t *testing.T) {
	if got, want := uuidMatcher(map[string]bool{"GPU-b": true, "MIG-a.1": true}), `{UUID=~"GPU-b|MIG-a\\.1"}`; got != want {
		t.Errorf("matcher %s, want %s", got, want)
	}
	many := map[string]bool{}
	for i := range maxFineUUIDs + 1 {
		many[fmt.Sprint("GPU-", i)] = true
	}
	if got := uuidMatcher(many); got != "" {
		t.Errorf("matcher of %d GPUs %q, want none", len(many), got)
	}
}

// TestSharesOnEveryEngine: a time-sliced holding whose allocation's last
// sample lies exactly on a bucket's edge (1h, scraped every 30 s from the
// range's start) had its share in the bucket ending at 1h on the embedded
// engine and in the one ending at 2h on Prometheus 2's ranges, which include
// their start. Read through the probed windows, the share's bucket is the
// first (index 0) on every engine.
func TestSharesOnEveryEngine(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Hour)
	b := engine.NewStoreBuilder()
	lset := labels.FromStrings("__name__", "gputally_gpu_allocation", "UUID", "GPU-0", "GPU_I_ID", "", "namespace", "dev", "pod", "nb", "container", "c",
		"resource", "nvidia.com/gpu.shared", "sharing", "time-slicing")
	for ts := start.Add(30 * time.Second); !ts.After(start.Add(time.Hour)); ts = ts.Add(30 * time.Second) {
		if err := b.Append(lset, ts.UnixMilli(), 0.25); err != nil {
			t.Fatal(err)
		}
	}
	st := b.Store()
	for _, e := range engineplay.All(st) {
		d := model.NewDataset(model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute})
		c := &collector{run: engine.NewRunner(e.Q, engine.Limits{MaxPoints: 1000}, nil)}
		if _, err := c.probeWindows(context.Background(), end); err != nil {
			t.Fatal(err)
		}
		if err := c.shares(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		k := model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "dev", Pod: "nb", Container: "c"}}
		if got, ok := d.Shares[k]; !ok || got.Share != 0.25 || got.Bucket != 0 {
			t.Errorf("%s: share %+v (found %v), want 0.25 in bucket 0", e.Name, got, ok)
		}
	}
}
