package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/applyspec"
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
	book, err := cost.Load(filepath.Join("..", "testdata", "prices", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*sim.Scenario
	for _, n := range []string{"fleet-a", "fleet-b", "fleet-c"} {
		sc, err := sim.Load(filepath.Join("..", "testdata", "scenarios", "waiting", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	for _, c := range []struct {
		flavor, source string
		eurWithin      float64 // the sampled source reads the grid's 30 s at a holder's change as the next holder's
	}{{history.FlavorGputally, SourceLedger, 1e-6}, {history.FlavorDCGMExporter, SourceDCGMExporter, 0.1}} {
		t.Run(c.source, func(t *testing.T) {
			b := NewStoreBuilder()
			o := history.Options{Start: dayOneStart, Duration: 48 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second,
				Flavor: c.flavor, Book: book}
			if _, err := history.RunFleet(context.Background(), o, nodes, b); err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Source, cfg.PriceBook, cfg.Out, cfg.AllowPartial = c.source, book, "-", true
			cfg.Range, cfg.End = 48*time.Hour, dayOneStart.Add(48*time.Hour)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			r, err := Generate(context.Background(), cfg, cfg.source(engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())), discard())
			if err != nil {
				t.Fatal(err)
			}
			checkWaitingStory(t, r, c.eurWithin)
		})
	}
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
