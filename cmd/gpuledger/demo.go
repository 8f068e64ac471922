package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuledger/gpuledger/collector/sim"
	"github.com/gpuledger/gpuledger/history"
	"github.com/gpuledger/gpuledger/report"
)

// runDemo simulates sc over cfg.Range, scraped every scrape, straight into the
// report's compressed in-memory store (no exposition text in between), and
// writes the report over it. The simulation shows its progress on
// cfg.Progress, as the queries do.
func runDemo(ctx context.Context, cfg report.Config, sc *sim.Scenario, scrape time.Duration, logger *slog.Logger) error {
	// The demo's live heap is small (the store of a week of the built-in node
	// is a few tens of MiB) and nearly all it allocates is short-lived
	// scrapes: collecting at 400 % growth instead of 100 % costs about 30 MiB
	// of peak memory and saves about a fifth of the CPU (docs/performance.md).
	// GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(demoGCPercent))
	}
	store := report.NewStoreBuilder()
	progress := report.NewProgress(cfg.Progress)
	_, err := history.Run(ctx, history.Options{
		Scenario: sc, Duration: cfg.Range, ScrapeInterval: scrape,
		SampleInterval: min(10*time.Second, scrape), Logger: logger,
		Progress: simulationProgress(progress),
	}, store)
	progress.End()
	if err != nil {
		return fmt.Errorf("demo: simulate the node: %w", err)
	}
	logger.Debug("demo simulated", "samples", store.Samples())
	return report.RunDemoStore(ctx, cfg, store.Store(), logger)
}

// demoGCPercent is the garbage collector's growth target during a demo.
const demoGCPercent = 400

// simulationProgress returns a history progress callback that shows every
// simulated hour on a terminal, and every simulated day (and the end)
// elsewhere.
func simulationProgress(p *report.Progress) func(done, total time.Duration) {
	return func(done, total time.Duration) {
		if p.Redraws() || done%(24*time.Hour) == 0 || done == total {
			p.Update(fmt.Sprintf("demo: simulated %s of %s (%d%%)",
				model.Duration(done), model.Duration(total), int(100*done/total)))
		}
	}
}
