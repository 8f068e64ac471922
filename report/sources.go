package report

import (
	"fmt"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/source/dcgmexporter"
)

// The sources a report reads (Config.Source).
const (
	// SourceLedger reads gputally's own ledger counters, exactly (the default).
	SourceLedger = "ledger"
	// SourceDCGMExporter reads the history a cluster already has:
	// dcgm-exporter's device series and kube-state-metrics, sampled on a
	// grid that follows their scrape interval, or Config.Grid
	// (docs/report.md, "Report from existing dcgm-exporter data").
	SourceDCGMExporter = "dcgm-exporter"
)

// validateSource checks Source and, for the dcgm-exporter source, Grid.
func (c *Config) validateSource() error {
	switch c.Source {
	case "", SourceLedger:
		return nil
	case SourceDCGMExporter:
		if g := c.Grid; g != 0 && (g < time.Second || c.Step%g != 0 || c.Resolution%g != 0) {
			return fmt.Errorf("grid %s must be at least 1s and divide the step %s and the resolution %s", g, c.Step, c.Resolution)
		}
		return nil
	}
	return fmt.Errorf("source %q: want %s or %s", c.Source, SourceLedger, SourceDCGMExporter)
}

// source returns the Source cfg names, reading through q with cfg's team
// label, request bounds and progress writer: the same Querier, so the same
// HTTP client, for every source.
func (c *Config) source(q engine.Querier) Source {
	if c.Source == SourceDCGMExporter {
		return dcgmexporter.New(q, dcgmexporter.Options{Book: c.PriceBook, Grid: c.Grid, TeamLabel: c.TeamLabel,
			MaxPointsPerQuery: c.MaxPointsPerQuery, MaxSamplesPerQuery: c.MaxSamplesPerQuery, QueriesInFlight: c.QueriesInFlight, DedupeLabels: c.DedupeLabels, ClusterLabel: c.ClusterLabel, Progress: NewProgress(c.Progress)})
	}
	return c.ledger(q)
}

// sourceName is what the report names as its source: where, and through
// which source when it is not the ledger.
func (c *Config) sourceName(where string) string {
	switch {
	case c.Source == SourceDCGMExporter && c.Grid > 0:
		return where + " (dcgm-exporter and kube-state-metrics series, sampled every " + c.Grid.String() + ")"
	case c.Source == SourceDCGMExporter:
		return where + " (dcgm-exporter and kube-state-metrics series, sampled at their scrape interval)"
	}
	return where
}
