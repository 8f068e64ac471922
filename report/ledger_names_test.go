package report

import (
	"context"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/engine"
)

// TestLedgerReadsEitherNaming: the ledger source's activity and framebuffer
// come from gputally's DCGM_* series, which the exporter writes under
// dcgm-exporter 4.10's names by default and 4.8's by flag. The demo-store
// node's 5 h under 4.10's names, and with its exporter switched from 4.8's
// to 4.10's 2 h in, report what it reports under 4.8's (to the last bits):
// the same usage figures, which are there (the trainer's activity and its
// framebuffer, near its workload's 60,000 MiB).
func TestLedgerReadsEitherNaming(t *testing.T) {
	sc, err := sim.Load(demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	report := func(names history.Names) *Report {
		b := NewStoreBuilder()
		if _, err := history.Run(context.Background(), history.Options{Scenario: sc, Start: start, Duration: 5 * time.Hour,
			SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second, Names: names}, b); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Range, cfg.Now, cfg.End, cfg.AllowPartial = 5*time.Hour, func() time.Time { return start }, start.Add(5*time.Hour), true
		r, err := generateFrom(context.Background(), cfg, engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard()), discard())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	old := report(history.Names{})
	trained := false
	for _, h := range old.Holdings {
		if h.Pod == "train" {
			trained = h.Usage.HasActivity && h.Usage.P95Activity > 0.5 && h.Usage.PeakFBMiB > 50000
		}
	}
	if !trained {
		t.Fatalf("the trainer's usage under 4.8's names: %+v; want its activity and framebuffer", old.Holdings)
	}
	for name, names := range map[string]history.Names{
		"4.10":    {Mode: history.NamesCurrent},
		"rolling": {Mode: history.NamesRolling, UpgradeAfter: 2 * time.Hour},
	} {
		if diff := differ("report", asJSON(t, report(names)), asJSON(t, old)); diff != "" {
			t.Errorf("%s: the report differs from 4.8's: %s", name, diff)
		}
	}
}
