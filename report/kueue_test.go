package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/internal/applyspec"
)

// TestKueueQuotaFromBusyAtOnce simulates two hours of the job mix
// testdata/scenarios/kueue-mix.yaml (scraped every 30 s) and reads it
// through the embedded engine. A team's nominal quota is the most devices it
// kept busy at the same time, per 30 s scrape interval, × headroom, rounded
// up. By hand (the scenario's comment): team ml (train + tune) has at most 2
// busy at once — train's peak of 2 and tune's 1 never coincide, so 3 would be
// the sum of the namespaces' peaks, and the first hour sees 5 of its GPUs
// busy; team ci has 1 busy at once, and 7 of its pods busy in one hour (the
// job starting at 1:00 counts there too). With headroom 1.2: ml ⌈2 × 1.2⌉ =
// 3, ci ⌈1 × 1.2⌉ = 2; with 1.5: ml exactly 2 × 1.5 = 3 (not 4), ci ⌈1.5⌉ =
// 2. Counted per step bucket they were 6 and 9 (the test fails so); summing
// the namespaces' own peaks, ml got 4 and 5.
func TestKueueQuotaFromBusyAtOnce(t *testing.T) {
	sc, err := sim.Load("testdata/scenarios/kueue-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := NewStoreBuilder()
	if _, err := history.Run(context.Background(), history.Options{Scenario: sc, Start: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		Duration: 2 * time.Hour, SampleInterval: 5 * time.Second, ScrapeInterval: 30 * time.Second}, store); err != nil {
		t.Fatal(err)
	}
	st := store.Store()
	dir := t.TempDir()
	teams := filepath.Join(dir, "teams.yaml")
	if err := os.WriteFile(teams, []byte("teams:\n  ml: [train, tune]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		headroom float64
		ml, ci   int
	}{{1.2, 3, 2}, {1.5, 3, 2}} {
		cfg := DefaultConfig()
		cfg.Range = 2 * time.Hour
		cfg.Format = FormatJSON
		cfg.Out = filepath.Join(dir, "kueue.json")
		cfg.TeamMapFile = teams
		cfg.Headroom = tc.headroom
		if err := RunDemoStore(context.Background(), cfg, st, discard()); err != nil {
			t.Fatal(err)
		}
		r := readReportJSON(t, cfg.Out)
		q := applyspec.CheckKueue(t, r.Apply.Kueue)
		if q["ml nvidia.com/gpu"] != tc.ml || q["ci nvidia.com/gpu"] != tc.ci {
			t.Errorf("headroom %g: quotas %v, want ml %d and ci %d\n%s", tc.headroom, q, tc.ml, tc.ci, r.Apply.Kueue)
		}
		for _, s := range []string{"(in one 30s scrape interval)", "#   nvidia.com/gpu: at most 2 busy at once ×", "#   nvidia.com/gpu: at most 1 busy at once ×"} {
			if !strings.Contains(r.Apply.Kueue, s) {
				t.Errorf("headroom %g: the Kueue comments lack %q:\n%s", tc.headroom, s, r.Apply.Kueue)
			}
		}
	}
}
