package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report"
)

// runDemo simulates the nodes (one, or a fleet: history.RunFleet) over
// cfg.Range — ending at cfg.End when it is set, else now — priced by book
// and scraped every scrape, straight into the
// report's compressed in-memory store (no exposition text in between), and
// writes the report over it. The simulation shows its progress on
// cfg.Progress, as the queries do.
func runDemo(ctx context.Context, cfg report.Config, nodes []*sim.Scenario, book *cost.Book, scrape time.Duration, logger *slog.Logger) error {
	store, err := simulateIntoStore(ctx, cfg, nodes, book, scrape, logger)
	if err != nil {
		return err
	}
	return report.RunDemoStore(ctx, cfg, store, logger)
}

// simulateIntoStore runs the simulation of runDemo.
//
// While the node is simulated the live heap is the compact store (about 2 MiB
// per GPU-week) and nearly all that is allocated is short-lived scrapes:
// collecting at demoGCPercent growth instead of 100 % saves about a fifth of
// the CPU for a few tens of MiB. A soft limit of demoMemoryLimit keeps that
// growth from multiplying a big fleet's store. The queries then run without
// the limit, so that their working memory, which grows with the range, is
// not held to it, at the report's reportGCPercent: the store is most of
// their live heap. GOGC or GOMEMLIMIT in the environment win
// (docs/performance.md).
func simulateIntoStore(ctx context.Context, cfg report.Config, nodes []*sim.Scenario, book *cost.Book, scrape time.Duration, logger *slog.Logger) (*report.Store, error) {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(demoMemoryLimit))
		defer debug.SetGCPercent(debug.SetGCPercent(demoGCPercent))
	}
	store := report.NewStoreBuilder()
	progress := report.NewProgress(cfg.Progress)
	opts := history.Options{
		Duration: cfg.Range, ScrapeInterval: scrape, Book: book,
		SampleInterval: min(10*time.Second, scrape), Logger: logger,
		Progress: simulationProgress(progress),
	}
	if !cfg.End.IsZero() { // --end: the simulated range ends there
		opts.Start = cfg.End.Add(-cfg.Range)
	}
	_, err := history.RunFleet(ctx, opts, nodes, store)
	progress.End()
	if err != nil {
		return nil, fmt.Errorf("demo: simulate the nodes: %w", err)
	}
	logger.Debug("demo simulated", "samples", store.Samples())
	return store.Store(), nil
}

// The garbage collector's growth target (%) and soft memory limit (bytes)
// while a demo simulates its node.
const (
	demoGCPercent   = 400
	demoMemoryLimit = 192 << 20
)

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
