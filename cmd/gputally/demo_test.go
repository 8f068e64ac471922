package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/report"
)

// TestSimulationProgress: off a terminal the simulation shows a line per
// simulated day and one at the end, not one per hour.
func TestSimulationProgress(t *testing.T) {
	var out bytes.Buffer
	show := simulationProgress(report.NewProgress(&out))
	total := 50 * time.Hour
	for h := time.Hour; h < total; h += time.Hour {
		show(h, total)
	}
	show(total, total)
	want := "demo: simulated 1d of 2d2h (48%)\ndemo: simulated 2d of 2d2h (96%)\ndemo: simulated 2d2h of 2d2h (100%)\n"
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestRunDemo runs the demo on the built-in node for a short range and checks
// that the report covers its GPUs and that the simulation showed its progress.
func TestRunDemo(t *testing.T) {
	sc := sim.Default()
	r, progress := runDemoJSON(t, nil, sc)
	gpus := 0
	for _, g := range sc.GPUs {
		gpus += max(g.Count, 1) // 0 means 1
	}
	if r.GPUs != gpus || r.GPUs == 0 {
		t.Errorf("report covers %d GPUs, the scenario has %d", r.GPUs, gpus)
	}
	if !strings.Contains(progress, "demo: simulated 3h of 3h (100%)\n") || !strings.Contains(progress, "report: ") {
		t.Errorf("progress lines:\n%s", progress)
	}
}

// TestRunDemoFleet runs the demo on two nodes through the store: the report
// covers both nodes' GPUs, and the progress counts the fleet's virtual time
// (two nodes × 3 h).
func TestRunDemoFleet(t *testing.T) {
	a, b := sim.Default(), sim.Default()
	b.Seed++
	b.Node.Hostname = "sim-node-1"
	r, progress := runDemoJSON(t, nil, a, b)
	nodes := map[string]bool{}
	for _, n := range r.Nodes {
		nodes[n.Name] = true
	}
	if r.GPUs != 16 || len(nodes) != 2 || !nodes[a.Node.Hostname] || !nodes[b.Node.Hostname] {
		t.Errorf("report covers %d GPUs on nodes %v, want 16 on %s and %s", r.GPUs, nodes, a.Node.Hostname, b.Node.Hostname)
	}
	if !strings.Contains(progress, "demo: simulated 6h of 6h (100%)\n") {
		t.Errorf("progress lines:\n%s", progress)
	}
}

// TestRunDemoEndsAtEnd: with --end the demo simulates the range that ends
// there, complete, so that two demos can be weeks apart (a baseline and its
// follow-up).
func TestRunDemoEndsAtEnd(t *testing.T) {
	end := time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)
	r, _ := runDemoJSON(t, func(cfg *report.Config) { cfg.End = end }, sim.Default())
	if !r.End.Equal(end) || !r.Start.Equal(end.Add(-3*time.Hour)) || r.Partial || r.Coverage.Ratio < 0.999 {
		t.Errorf("report of %s – %s, partial %v, coverage %g; want the 3 h to %s, complete", r.Start, r.End, r.Partial, r.Coverage.Ratio, end)
	}
}

// runDemoJSON runs the demo on nodes for 3 hours of 1-minute scrapes and
// returns its JSON report and what it showed as progress; set (optional)
// changes the configuration first.
func runDemoJSON(t *testing.T, set func(*report.Config), nodes ...*sim.Scenario) (report.Report, string) {
	t.Helper()
	var progress bytes.Buffer
	cfg := report.DefaultConfig()
	cfg.Range, cfg.Format = 3*time.Hour, report.FormatJSON
	if set != nil {
		set(&cfg)
	}
	cfg.Out = filepath.Join(t.TempDir(), "demo.json")
	cfg.Progress = &progress
	if err := runDemo(context.Background(), cfg, nodes, nil, time.Minute, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r, progress.String()
}

// TestRunDemoFractional runs the demo on testdata/scenarios/fractional (a
// HAMi node, a KAI node, a whole-GPU node) through gputally's metrics: every
// GPU-hour is attributed (none unknown), and the shares are those of the
// scenario, held for the 3 h: KAI's 0.5 and 0.3 of the fleet-kai H100 0 (1.5
// and 0.9 GPU-hours), HAMi's four quarters of the fleet-hami A100 0 (0.75
// each), the three thirds of fleet-kai's GPU 1 (1 each).
func TestRunDemoFractional(t *testing.T) {
	nodes, err := loadFleet([]string{"../../testdata/scenarios/fractional"})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runDemoJSON(t, nil, nodes...)
	if r.GPUs != 10 || len(r.Nodes) != 3 || r.Coverage.UnknownHours != 0 {
		t.Errorf("%d GPUs on %d nodes, %g unknown device-hours; want 10 on 3, none unknown", r.GPUs, len(r.Nodes), r.Coverage.UnknownHours)
	}
	want := map[string]float64{
		"team-a/notebook-0/main kai": 1.5, "team-b/infer-0/main kai": 0.9,
		"search/ranker-0/server hami": 0.75, "search/ranker-1/server hami": 0.75, "search/ranker-2/server hami": 0.75, "ads/scorer-0/server hami": 0.75,
		"eval/eval-0/main kai": 1, "eval/eval-1/main kai": 1, "eval/eval-2/main kai": 1,
		"research/trainer-1/main exclusive": 3,
	}
	for _, h := range r.Holdings {
		k := h.Namespace + "/" + h.Pod + "/" + h.Container + " " + h.Sharing
		if w, ok := want[k]; ok {
			if math.Abs(h.Totals.GPUHours-w) > 1e-6 {
				t.Errorf("%s held %g GPU-hours, want %g", k, h.Totals.GPUHours, w)
			}
			delete(want, k)
		}
	}
	if len(want) != 0 {
		t.Errorf("holdings missing: %v", want)
	}
}
