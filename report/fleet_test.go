package report

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/applyspec"
)

// TestDemoFleetHeadline runs the demo fleet (testdata/scenarios/fleet/, four
// nodes, flat prices from testdata/prices/fleet.yaml) through the simulator,
// the store report --demo fills and the embedded engine, and checks the report against the hand
// computation of docs/report.md ("The demo fleet"): freed = (1.80 + 1.80 +
// 2 × 1.80 + 0.60) EUR/h × 730.5 h = 5697.90 EUR/month. A flat-priced GPU
// costs its rate × the hours measured, whatever the range, so one simulated
// day gives the same monthly figures as a week. The report reads the ledger
// exactly (docs/report.md, "Exact EUR for short jobs": a new series counts
// from 0), so the figures must agree to rounding (1e-9 relative).
func TestDemoFleetHeadline(t *testing.T) {
	files, err := filepath.Glob("../testdata/scenarios/fleet/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("fleet scenarios %v (%v), want at least 3", files, err)
	}
	var nodes []*sim.Scenario
	for _, f := range files {
		sc, err := sim.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	book, err := cost.Load("../testdata/prices/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// As report --demo does: the nodes' scrapes straight into the store.
	store := NewStoreBuilder()
	if _, err := history.RunFleet(context.Background(), history.Options{
		Start: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Duration: 24 * time.Hour,
		SampleInterval: 10 * time.Second, ScrapeInterval: 60 * time.Second, Book: book,
	}, nodes, store); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Range = 24 * time.Hour
	cfg.Format = FormatJSON
	cfg.Out = filepath.Join(t.TempDir(), "fleet.json")
	cfg.ApplyDir = filepath.Join(t.TempDir(), "apply")
	cfg.MIGWeight = book.MIGWeight
	if err := RunDemoStore(context.Background(), cfg, store.Store(), discard()); err != nil {
		t.Fatal(err)
	}
	r := readReportJSON(t, cfg.Out)
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*want }
	const month = 730.5
	want := []struct {
		kind, target string
		freedGPUs    int
		freed, recl  float64
	}{
		{"drain", "fleet-spare", 2, 2 * 1.80 * month, 0},
		{"release", "research/forgotten-0/main", 1, 1.80 * month, 0},
		{"mig", "A100-80GB", 1, 1.80 * month, 1.80 * month * 5 / 7},
		{"time-slicing", "dev", 1, 0.60 * month, 0},
		{"mig", "H100-80GB", 0, 0, 3.00 * month * 6 / 7},
	}
	if len(r.Recommendations) != len(want) {
		t.Fatalf("%d recommendations, want %d: %+v", len(r.Recommendations), len(want), r.Recommendations)
	}
	for i, w := range want {
		g := r.Recommendations[i]
		if g.Kind != w.kind || g.Target != w.target || len(g.FreedGPUs) != w.freedGPUs ||
			!close(g.FreedEURPerMonth, w.freed) && w.freed > 0 || g.FreedEURPerMonth > 0 && w.freed == 0 ||
			!close(g.ReclaimableEURPerMonth, w.recl) && w.recl > 0 {
			t.Errorf("recommendation %d: %s %s frees %d GPUs, %.2f EUR/month, reclaimable %.2f; want %s %s, %d, %.2f, %.2f",
				i, g.Kind, g.Target, len(g.FreedGPUs), g.FreedEURPerMonth, g.ReclaimableEURPerMonth, w.kind, w.target, w.freedGPUs, w.freed, w.recl)
		}
	}
	if !close(r.FreedEURPerMonth, 7.80*month) || !close(r.ReclaimableEURPerMonth, 1.80*month*5/7+3.00*month*6/7) || r.HoursPerMonth != 730.5 {
		t.Errorf("headline %.2f EUR/month freed, %.2f reclaimable, month %g h; want 5697.90, 2817.64, 730.5",
			r.FreedEURPerMonth, r.ReclaimableEURPerMonth, r.HoursPerMonth)
	}
	checkNoGPUTwice(t, &r)

	// The configuration: strict formats, and the H100 node's config keeps the
	// training GPU (0) as it is while it repartitions the embedder's (1).
	models := map[string]string{}
	for _, h := range r.Holdings {
		models[h.Node] = h.Model
	}
	byNode := applyspec.CheckMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(n string) string { return models[n] })
	if h := byNode["fleet-h100-training"]; len(h) != 2 || h[0] != nil || !slices.Equal(h[1], []string{"1g.10gb"}) {
		t.Errorf("fleet-h100-training config %v, want GPU 0 MIG off (training) and GPU 1 1g.10gb", h)
	}
	if a := byNode["fleet-a100-serving"]; len(a) != 3 {
		t.Errorf("fleet-a100-serving config %v, want its three GPUs listed", a)
	}
	applyspec.CheckDevicePlugin(t, r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels)
	if q := applyspec.CheckKueue(t, r.Apply.Kueue); q["ml nvidia.com/gpu"] != 2 {
		t.Errorf("Kueue quotas %v, want ml nvidia.com/gpu 2 (1 busy × 1.2, rounded up)", q)
	}
	if got := readFile(t, cfg.ApplyDir, advice.ApplyKueueFile); got != r.Apply.Kueue {
		t.Errorf("--apply-dir %s differs from the report's Kueue objects", advice.ApplyKueueFile)
	}
}
