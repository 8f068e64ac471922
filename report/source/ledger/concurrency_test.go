package ledger

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// TestBusyAtOnce plays two hours of an exporter (scrapes every 30 s, 13 s
// off the minute; stopped from 1:00:12 to 1:01) into the embedded engine and reads how many
// devices each namespace kept busy at the same time. Every pod is a device
// of its own, busy while it runs. By hand:
//
//   - ci: build-n runs 2 min every 10 min from 0:00:07, lint-n 90 s every
//     10 min from 0:01:07: each build overlaps one lint (0:01:07–0:02:07) and
//     no two builds or lints overlap, so at most 2 at once — while an hour
//     sees 12 of its pods;
//   - ml: a 0:05–0:50, b 0:40–1:30, e 0:55–0:58, c 1:01:01–1:50 and d
//     1:01:02–1:01:12: two at once but in the interval that ends at 1:01:30,
//     the first after the exporter's restart at 1:01, where b, c and d are
//     busy: 3. b's counter was reset there (read as X < P) and d was scraped
//     once (at 1:01:13, a new series); ml/idle, which appears then with a
//     busy counter at 0 and stays at 0, is never busy;
//   - short: one 20 s job between two scrapes: 1.
func TestBusyAtOnce(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	const scrape, offset = 30 * time.Second, 13 * time.Second
	at := func(h, m, s int) time.Time {
		return start.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	var runs []holdingRun
	runs = append(runs, jobs("ci", "build", at(0, 0, 7), end, 10*time.Minute, 2*time.Minute)...)
	runs = append(runs, jobs("ci", "lint", at(0, 1, 7), end, 10*time.Minute, 90*time.Second)...)
	runs = append(runs,
		holdingRun{ns: "ml", pod: "a", from: at(0, 5, 0), to: at(0, 50, 0)},
		holdingRun{ns: "ml", pod: "b", from: at(0, 40, 0), to: at(1, 30, 0)},
		holdingRun{ns: "ml", pod: "e", from: at(0, 55, 0), to: at(0, 58, 0)},
		holdingRun{ns: "ml", pod: "c", from: at(1, 1, 1), to: at(1, 50, 0)},
		holdingRun{ns: "ml", pod: "d", from: at(1, 1, 2), to: at(1, 1, 12)},
		holdingRun{ns: "short", pod: "blip", from: at(1, 40, 15), to: at(1, 40, 35)},
	)
	procs := []process{{start.Add(-time.Hour), at(1, 0, 12)}, {at(1, 1, 0), end.Add(time.Hour)}}
	for _, withUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("gputally_up %v", withUp), func(t *testing.T) {
			b := engine.NewStoreBuilder()
			play(t, b, procs, runs, scrape, offset, start, end, nil)
			// ml/idle holds a device from the restart on and is never busy: its
			// busy counter is 0 from its first scrape, and it is not counted.
			for ts := at(1, 1, 13); ts.Before(end); ts = ts.Add(scrape) {
				appendLedger(t, b, []string{"UUID", "GPU-idle", "gpu", "0", "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
					"namespace", "ml", "pod", "idle", "container", "main", "state", "busy"}, ts, 0)
			}
			if withUp {
				for _, p := range procs {
					for ts := p.from.Truncate(scrape).Add(offset); ts.Before(p.to); ts = ts.Add(scrape) {
						if err := b.Append(labels.FromStrings("__name__", "gputally_up", "backend", "sim"), ts.UnixMilli(), 1); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			d := model.NewDataset(model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute})
			c := &collector{run: engine.NewRunner(engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard()), engine.Limits{MaxPoints: 1000}, nil)}
			if err := c.concurrency(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			cc := d.Concurrency
			peak := map[string]int{}
			for k, busy := range cc.Busy {
				for _, n := range busy {
					peak[k.Namespace+"/"+k.Profile] = max(peak[k.Namespace+"/"+k.Profile], int(n))
				}
			}
			want := map[string]int{"ci/": 2, "ml/": 3, "short/": 1}
			if !withUp {
				// Without gputally_up the reading falls back to the resolution and
				// says it is not the scrape interval.
				if cc.Scraped || cc.Interval != 5*time.Minute {
					t.Errorf("interval %s scraped %v, want the 5m resolution, not scraped", cc.Interval, cc.Scraped)
				}
				return
			}
			if !cc.Scraped || cc.Interval != scrape {
				t.Errorf("interval %s scraped %v, want the 30s scrape interval", cc.Interval, cc.Scraped)
			}
			if !maps.Equal(peak, want) {
				t.Errorf("devices busy at once per namespace %v, want %v", peak, want)
			}
			// ml's 3 are in the interval ending at 1:01:30, the 122nd after
			// the first, which ends at 0:00:30: (3,690 s − 30 s) ÷ 30 s; none
			// in the one before (the exporter was down), b and c in the one
			// after (d ended at 1:01:12).
			ml := cc.Busy[model.ConcurrencyKey{Namespace: "ml"}]
			if !cc.First.Equal(at(0, 0, 30)) || len(ml) != 240 || ml[121] != 0 || ml[122] != 3 || ml[123] != 2 {
				t.Errorf("first interval ends %s, ml's %d intervals, %v at 121–123; want 0:00:30, 240, [0 3 2]", cc.First, len(ml), ml[121:124])
			}
		})
	}
}

// TestBusyAtOnceClusters: namespace ml keeps GPU-0 and GPU-1 busy together
// for an hour in east, and GPU-0 alone in west (the same UUID): the devices
// busy at once are counted per cluster, 2 in east and 1 in west, not 3 for
// one namespace nor 2 for a merged GPU-0.
func TestBusyAtOnceClusters(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	b := engine.NewStoreBuilder()
	for _, dev := range []struct{ cluster, uuid string }{{"east", "GPU-0"}, {"east", "GPU-1"}, {"west", "GPU-0"}} {
		base := []string{"cluster", dev.cluster, "UUID", dev.uuid, "gpu", "0", "hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", "p-" + dev.uuid, "container", "main", "state", "busy"}
		for ts := start.Add(15 * time.Second); ts.Before(end); ts = ts.Add(30 * time.Second) {
			appendLedger(t, b, base, ts, ts.Sub(start).Seconds())
		}
	}
	peak := busyPeaks(t, b.Store(), source.NewIdentity("cluster"), start, end)
	want := map[model.ConcurrencyKey]int{{Cluster: "east", Namespace: "ml"}: 2, {Cluster: "west", Namespace: "ml"}: 1}
	if !maps.Equal(peak, want) {
		t.Errorf("devices busy at once %v, want %v", peak, want)
	}
}
