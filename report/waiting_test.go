package report

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/model"
)

// The waiting story (testdata/scenarios/waiting, three nodes of four H100s
// priced flat at 3.00 EUR/h by testdata/prices/fleet.yaml, two days from
// dayOneStart scraped every 30 s), read by both sources from
// kube-state-metrics' series in the history's form. By hand:
//
//   - research/train (4 GPUs) waits 2 h → 8 h, while 5 GPUs are free —
//     fleet-a 2, fleet-b 2, fleet-c 1 — and no node has 4: 6 h × 4 = 24
//     GPU-hours, all of them fragmented; then it runs on fleet-c;
//   - notebooks/nb-q-0 (1 GPU) waits 24 h → 30 h and is deleted: 6; it fits
//     (fleet-c is free from 20 h): not fragmented;
//   - notebooks/nb-q-1 (2 GPUs) waits 36 h → 48 h, the end: 12 × 2 = 24,
//     not fragmented;
//   - every other pod is bound as it is created: not counted.
//
// So 54 GPU-hours by 3 pods; waits 6, 6 and 12 h: p50 rank 2 → 6 h, p95
// rank 3 → 12 h; 24 fragmented. Idle while waiting: in hours 2–7 the three
// nb-old notebooks idle (3 × 6 h), in 24–29 and 36–47 nb-idle (6 + 12 h):
// 36 idle GPU-hours × 3.00 = 108 EUR — less the last 10 s sample interval of
// the nb-old notebooks, which the ledger books to the holder at its end,
// train: 3 × 10 s × 3.00 EUR/h = 0.025 EUR, so 107.975 EUR; the sampled
// source, to its 30 s grid. No other GPU is ever idle (training pods are
// busy, free GPUs unallocated).
//
// Kueue quotas (headroom 1.2, teams = namespaces): research keeps long's 2
// busy and waits for train's 4 at once → ⌈6 × 1.2⌉ = 8, not below train's 4;
// notebooks held its GPUs idle (busy 0) and waits for nb-q-1's 2 → ⌈2.4⌉ =
// 3 of nvidia.com/gpu; ml 2 busy → 3.
func TestWaitingStoryBothSources(t *testing.T) {
	for _, c := range []struct {
		flavor, source string
		eurWithin      float64 // the sampled source reads the grid's 30 s at a holder's change as the next holder's
	}{{history.FlavorGputally, SourceLedger, 1e-6}, {history.FlavorDCGMExporter, SourceDCGMExporter, 0.1}} {
		t.Run(c.source, func(t *testing.T) {
			checkWaitingStory(t, storyReport(t, "waiting", []string{"fleet-a", "fleet-b", "fleet-c"}, 48*time.Hour, c.flavor, c.source), c.eurWithin)
		})
	}
}

// storyReport simulates the nodes of testdata/scenarios/<dir> for span
// from dayOneStart, priced by testdata/prices/fleet.yaml, sampled every 10 s
// and scraped every 30 s in flavor, and reports on the span from source.
func storyReport(t *testing.T, dir string, names []string, span time.Duration, flavor, src string) *Report {
	t.Helper()
	book, err := cost.Load(filepath.Join("..", "testdata", "prices", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*sim.Scenario
	for _, n := range names {
		sc, err := sim.Load(filepath.Join("..", "testdata", "scenarios", dir, n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	b := NewStoreBuilder()
	o := history.Options{Start: dayOneStart, Duration: span, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second, Flavor: flavor, Book: book}
	if _, err := history.RunFleet(context.Background(), o, nodes, b); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Source, cfg.PriceBook, cfg.Out, cfg.AllowPartial = src, book, "-", true
	cfg.Range, cfg.End = span, dayOneStart.Add(span)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := Generate(context.Background(), cfg, cfg.source(engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())), discard())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkWaitingStory holds r to TestWaitingStoryBothSources' figures.
func checkWaitingStory(t *testing.T, r *Report, eurWithin float64) {
	t.Helper()
	w := r.Waiting
	if !w.Measured || w.Interval != "30s" {
		t.Errorf("measured %v, interval %q; want true, 30s", w.Measured, w.Interval)
	}
	for _, c := range []struct {
		name            string
		got, want, with float64
	}{
		{"gpu_hours", w.GPUHours, 54, 1e-9}, {"pods", float64(w.Pods), 3, 0}, {"p50", w.P50WaitHours, 6, 1e-9}, {"p95", w.P95WaitHours, 12, 1e-9},
		{"fragmented", w.FragmentedGPUHours, 24, 1e-9}, {"idle while waiting EUR", w.IdleWhileWaitingEUR, 107.975, eurWithin},
	} {
		if math.Abs(c.got-c.want) > c.with {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	outcomes := map[string]string{}
	for _, p := range w.PodsWaited {
		outcomes[p.Namespace+"/"+p.Pod] = p.Outcome
		if p.Pod == "train" && (len(p.Requests) != 1 || p.Requests[0].Count != 4 || p.Node != "fleet-c") {
			t.Errorf("train: %+v, want one row of 4 GPUs, bound to fleet-c", p)
		}
	}
	want := map[string]string{"research/train": analysis.OutcomeScheduled, "notebooks/nb-q-0": analysis.OutcomeDeleted, "notebooks/nb-q-1": analysis.OutcomeStillWaiting}
	if len(outcomes) != len(want) {
		t.Errorf("pods waited %v, want %v", outcomes, want)
	}
	for pod, o := range want {
		if outcomes[pod] != o {
			t.Errorf("%s: outcome %q, want %q", pod, outcomes[pod], o)
		}
	}
	q := applyspec.CheckKueue(t, r.Apply.Kueue)
	if q["research nvidia.com/gpu"] != 8 || q["notebooks nvidia.com/gpu"] != 3 || q["ml nvidia.com/gpu"] != 3 {
		t.Errorf("quotas %v, want research 8, notebooks 3, ml 3\n%s", q, r.Apply.Kueue)
	}
	if !strings.Contains(r.Apply.SchedulerConfig, "type: MostAllocated") {
		t.Errorf("no bin-packing profile although 24 GPU-hours waited fragmented")
	}
}

// TestWaitingStoryDemo: `report --demo` on the story writes the Markdown
// that names the pods that never ran.
func TestWaitingStoryDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulated days")
	}
	var nodes []*sim.Scenario
	for _, n := range []string{"fleet-a", "fleet-b", "fleet-c"} {
		sc, err := sim.Load(filepath.Join("..", "testdata", "scenarios", "waiting", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	b := NewStoreBuilder()
	if _, err := history.RunFleet(context.Background(), history.Options{Start: dayOneStart, Duration: 48 * time.Hour, ScrapeInterval: 30 * time.Second}, nodes, b); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Range, cfg.Format, cfg.Out = 48*time.Hour, FormatMarkdown, filepath.Join(t.TempDir(), "r.md")
	if err := RunDemoStore(context.Background(), cfg, b.Store(), discard()); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Pods that never ran", "notebooks/nb-q-0 (1 × nvidia.com/gpu, team notebooks): waited 6.0 h, never ran: deleted while waiting",
		"notebooks/nb-q-1 (2 × nvidia.com/gpu, team notebooks): waited 12.0 h, never ran: still waiting at the end", "| research/train | research | 4 × nvidia.com/gpu |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("the Markdown lacks %q", s)
		}
	}
}

// TestWaitingMIGBothSources: the MIG waiting story
// (testdata/scenarios/waiting-mig: two A100s, each cut into seven
// 1g.10gb instances, 1.80 EUR/h each, six hours from dayOneStart scraped
// every 30 s) read by both sources. By hand:
//
//   - inference/pair (two instances, one pod) waits 1 h → 6 h, the end: 5 h
//     × 2 = 10 GPU-hours; one instance is free on each node until 4 h, when
//     inference/late takes mig-a's — two in all, on no one node: fragmented
//     in [1 h, 4 h), 3 h × 2 = 6 GPU-hours; from 4 h one is free in all;
//   - inference/late (one instance) waits 2 h → 4 h: 2 GPU-hours, not
//     fragmented (either node has one free);
//   - inference/quick is bound 20 s after its creation at 5 h, within the
//     30 s interval: not counted.
//
// So 12 GPU-hours by 2 pods; waits 2 and 5 h: p50 rank ⌈1⌉ = 1 → 2 h, p95
// rank ⌈1.9⌉ = 2 → 5 h; 6 fragmented. Idle while waiting: lab/nb holds
// mig-a's instance 5 idle all along, a seventh of its A100 by compute
// slices: 1.80 ÷ 7 EUR/h; pods waited in hours 1–5: 5 × 1.80 ÷ 7 =
// 1.2857… EUR. By namespace: inference alone.
//
// What it calls for (teams = namespaces, headroom 1.2): Kueue quotas of
// nvidia.com/mig-1g.10gb — shop 11 busy → ⌈13.2⌉ = 14; lab's notebook
// idle, nothing busy or waited for → the floor 1; inference, read by the
// ledger at its 30 s scrape interval, late and quick busy and pair's 2
// waiting at 5 h 0 m 30 s → ⌈4 × 1.2⌉ = 5, read by the dcgm-exporter source
// per 1 h bucket, late's 1 and pair's 2 waiting at 3 h (nothing busy) →
// ⌈3.6⌉ = 4. Bin-packing about the 6 instance-hours fragmented at the
// cluster's 21.60 EUR ÷ 12 GPU-hours = 1.80 EUR per GPU-hour × 1/7:
// 1.5428… EUR, not 6 × 1.80 = 10.80 as if an instance were a GPU. Release:
// in hours 1–3 mig-a and mig-b each fall 1 short of pair's 2; mig-a, first
// by name, has lab/nb idle all the hour to cover it — lab/nb serves pair,
// 2 × 3 = 6 GPU-hours, about 3 of the 6 hours' idle EUR it idled: 3 ×
// 1.80 ÷ 7 = 0.7714… EUR. From 4 h mig-a falls 2 short with one idle
// holding, mig-b has none: no release serves.
func TestWaitingMIGBothSources(t *testing.T) {
	for _, c := range []struct {
		flavor, source string
		inference      int // inference's quota, by the source's reading
	}{{history.FlavorGputally, SourceLedger, 5}, {history.FlavorDCGMExporter, SourceDCGMExporter, 4}} {
		t.Run(c.source, func(t *testing.T) {
			r := storyReport(t, "waiting-mig", []string{"mig-a", "mig-b"}, 6*time.Hour, c.flavor, c.source)
			w := r.Waiting
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"gpu_hours", w.GPUHours, 12}, {"pods", float64(w.Pods), 2}, {"p50", w.P50WaitHours, 2}, {"p95", w.P95WaitHours, 5},
				{"fragmented", w.FragmentedGPUHours, 6}, {"idle while waiting EUR", w.IdleWhileWaitingEUR, 5 * 1.80 / 7},
			} {
				if math.Abs(f.got-f.want) > 1e-6 {
					t.Errorf("%s = %g, want %g", f.name, f.got, f.want)
				}
			}
			if len(w.ByNamespace) != 1 || w.ByNamespace[0].Name != "inference" || math.Abs(w.ByNamespace[0].GPUHours-12) > 1e-6 {
				t.Errorf("by namespace %+v, want inference alone with 12 GPU-hours", w.ByNamespace)
			}
			rows := map[string]analysis.PodWaited{}
			for _, p := range w.PodsWaited {
				rows[p.Pod] = p
			}
			pair, late := rows["pair"], rows["late"]
			if len(rows) != 2 || len(pair.Requests) != 1 || pair.Requests[0] != (model.Request{Resource: "nvidia.com/mig-1g.10gb", Count: 2}) ||
				pair.Outcome != analysis.OutcomeStillWaiting || late.Outcome != analysis.OutcomeScheduled || late.Node != "mig-a" {
				t.Errorf("pods waited %+v, want pair (2 × nvidia.com/mig-1g.10gb, still waiting) and late (bound to mig-a)", w.PodsWaited)
			}
			mig := "nvidia.com/mig-1g.10gb"
			if q := applyspec.CheckKueue(t, r.Apply.Kueue); len(q) != 3 || q["shop "+mig] != 14 || q["lab "+mig] != 1 || q["inference "+mig] != c.inference {
				t.Errorf("quotas %v, want shop 14, lab 1, inference %d of %s", q, c.inference, mig)
			}
			kinds := map[string][]string{}
			for _, a := range r.WaitingAdvice {
				kinds[a.Kind] = append(kinds[a.Kind], fmt.Sprintf("%s %s %.6f EUR %.6f GPU-hours", a.Target, strings.Join(a.Pods, ","), a.EUR, a.GPUHours))
			}
			want := map[string][]string{
				advice.WaitQueues:     {fmt.Sprintf("kueue.yaml inference/late,inference/pair %.6f EUR 12.000000 GPU-hours", 5*1.80/7)},
				advice.WaitBinPacking: {fmt.Sprintf("kube-scheduler profile default-scheduler inference/pair %.6f EUR 6.000000 GPU-hours", 6*1.80/7)},
				advice.WaitRelease:    {fmt.Sprintf("lab/nb inference/pair %.6f EUR 6.000000 GPU-hours", 3*1.80/7)},
			}
			if !maps.EqualFunc(kinds, want, slices.Equal) {
				t.Errorf("waiting advice %v, want %v", kinds, want)
			}
		})
	}
}
