package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/memlimit"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/render"
	"github.com/gputally/gputally/report/source"
	"github.com/gputally/gputally/report/source/ledger"
	"github.com/gputally/gputally/team"
)

// The report's types that its callers use, from the packages that own them:
// the Report as the renderers read it (its JSON is the JSON format), the
// Source Generate reads (source.Ledger over the Prometheus API or the
// embedded engine), and for --demo the in-memory Store a simulation fills
// through a StoreBuilder (safe for concurrent use once built; a builder is
// not).
type (
	Report       = render.Report
	Source       = source.Source
	Store        = engine.Store
	StoreBuilder = engine.StoreBuilder
)

// NewStoreBuilder returns an empty builder of a Store (engine.NewStoreBuilder).
func NewStoreBuilder() *StoreBuilder { return engine.NewStoreBuilder() }

// Formats the report renders (render.Format*).
const (
	FormatHTML     = render.FormatHTML
	FormatMarkdown = render.FormatMarkdown
	FormatCSV      = render.FormatCSV
	FormatJSON     = render.FormatJSON
)

// Run queries the Prometheus API at cfg.PrometheusURL, writes the report to
// cfg.Out and, when configured, posts it to the webhook. Any failure returns
// an error that says what failed: a *ConfigError, before any query, for bad
// settings or files; any other error for a failure of the engine, the network
// or the data. A report with gaps is written only with AllowPartial, and is
// then marked partial.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if cfg.PrometheusURL == "" {
		return badConfig(errors.New("no Prometheus to query: set --prometheus.url (or try --demo)"))
	}
	if err := cfg.Validate(); err != nil {
		return badConfig(err)
	}
	limit := memlimit.Find()
	opts := engine.HTTPOptions{Timeout: cfg.Timeout, MaxAnswerBytes: AnswerCap(cfg.MaxAnswerBytes, limit, cfg.QueriesInFlight)}
	if cfg.MaxAnswerBytes == 0 {
		logger.Info("answers read up to a share of the memory limit", "max_answer_bytes", opts.MaxAnswerBytes, "limit", limit.String(), "query_concurrency", cfg.QueriesInFlight)
	}
	if cfg.HTTPConfigFile != "" {
		client, err := engine.LoadHTTPClient(cfg.HTTPConfigFile)
		if err != nil {
			return badConfig(err)
		}
		opts.Client = client
	}
	q, err := engine.NewHTTPQuerier(cfg.PrometheusURL, opts)
	if err != nil {
		return badConfig(err)
	}
	if cfg.TotalTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cfg.TotalTimeout,
			fmt.Errorf("the report's queries took longer than --query.total-timeout=%s", pmodel.Duration(cfg.TotalTimeout)))
		defer cancel()
	}
	given := !cfg.End.IsZero()
	if !given {
		cfg.End = cfg.now()
	}
	// Requests at step-aligned times are the ones query frontends cache.
	if end := cfg.End.Truncate(cfg.Step); !end.Equal(cfg.End) {
		if given {
			logger.Info("report range ends at a whole step", "end", end.UTC().Format(time.RFC3339), "step", pmodel.Duration(cfg.Step))
		}
		cfg.End = end
	}
	return generateAndWrite(ctx, cfg, cfg.source(q), cfg.sourceName(q.String()), logger)
}

// RunDemoStore is Run over the samples of st (filled through a StoreBuilder,
// e.g. straight from a simulation) evaluated by the embedded PromQL engine.
// When cfg.End is zero the period ends at the last sample; when the data spans
// less than cfg.Range the range shrinks to the steps it spans, rounded. A demo
// is there to be looked at: a partial one is written, marked partial.
func RunDemoStore(ctx context.Context, cfg Config, st *Store, logger *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return badConfig(err)
	}
	cfg.AllowPartial = true
	first, last, ok := st.TimeRange()
	if !ok {
		return errors.New("no GPU data: the simulated history holds no samples")
	}
	if cfg.End.IsZero() {
		cfg.End = last
	}
	// The first sample already counts one scrape interval: a span a little
	// short of whole steps covers them.
	if span := cfg.End.Sub(first).Round(cfg.Step); span < cfg.Range {
		if span <= 0 {
			return fmt.Errorf("no GPU data: the simulated history spans %s, less than one step of %s", last.Sub(first), cfg.Step)
		}
		cfg.Range = span
	}
	return generateAndWrite(ctx, cfg, cfg.source(engine.NewEmbeddedQuerier(st, cfg.Timeout, logger)), cfg.sourceName("simulated history (embedded PromQL engine)"), logger)
}

// Generate collects cfg's range, (cfg.End − cfg.Range, cfg.End], from src,
// analyses it and makes the advice: the report, its Source left to the
// caller. cfg must be valid and cfg.End set. A team map that cannot be read
// is a *ConfigError.
func Generate(ctx context.Context, cfg Config, src Source, logger *slog.Logger) (*Report, error) {
	var teams team.Map
	if cfg.TeamMapFile != "" {
		var err error
		if teams, err = team.LoadMap(cfg.TeamMapFile); err != nil {
			return nil, badConfig(err)
		}
	}
	base, err := cfg.openBaseline()
	if err != nil {
		return nil, err
	}
	began := cfg.now()
	d, err := src.Collect(ctx, model.Range{Start: cfg.End.Add(-cfg.Range), End: cfg.End, Step: cfg.Step, Resolution: cfg.Resolution})
	if err != nil {
		return nil, err
	}
	logger.Debug("report queries done", "requests", d.Requests, "duration", cfg.now().Sub(began), "holdings", len(d.Ledger))
	res, err := analysis.Analyze(d, teams, cfg.AllowPartial, analysis.WithBook(cfg.priceBook()))
	if err != nil {
		return nil, err
	}
	adv := advice.Advise(res, d, advice.Settings{Teams: teams, Headroom: cfg.Headroom, ReleaseBelow: cfg.ReleaseBelow,
		LowDutyBelow: cfg.LowDutyBelow, DrainAbove: cfg.DrainAbove, MIGWeight: cfg.MIGWeight, Scheduler: cfg.Scheduler})
	r := render.NewReport(res, adv)
	if err := followUp(base, r, res, adv, d, logger); err != nil {
		return nil, err
	}
	return r, nil
}

// ledger returns the Source that reads gputally's metrics through q with
// cfg's team label, request bounds and progress writer.
func (c *Config) ledger(q engine.Querier) Source {
	return ledger.New(q, ledger.Options{TeamLabel: c.TeamLabel, MaxPointsPerQuery: c.MaxPointsPerQuery,
		MaxSamplesPerQuery: c.MaxSamplesPerQuery, QueriesInFlight: c.QueriesInFlight, DedupeLabels: c.DedupeLabels, ClusterLabel: c.ClusterLabel, Progress: NewProgress(c.Progress)})
}

// generateAndWrite generates the report from src, named name, writes it to
// cfg.Out (and ApplyDir) and posts it to the webhook. The output file and the
// webhook's URL are made and read before any query.
func generateAndWrite(ctx context.Context, cfg Config, src Source, name string, logger *slog.Logger) error {
	var hook *render.Webhook
	if cfg.WebhookURLFile != "" {
		var err error
		if hook, err = render.LoadWebhook(cfg.WebhookURLFile); err != nil {
			return badConfig(err)
		}
	}
	out, err := createOutput(cfg.Out)
	if err != nil {
		return err
	}
	defer out.discard()
	r, err := Generate(ctx, cfg, src, logger)
	if err != nil {
		return err
	}
	r.Source = name
	if err := out.write(r, cfg.Format); err != nil {
		return err
	}
	if cfg.ApplyDir != "" {
		if err := advice.WriteApply(cfg.ApplyDir, &r.Apply); err != nil {
			return err
		}
	}
	if err := cfg.pruneReports(logger); err != nil {
		return fmt.Errorf("report written to %s, but %w", cfg.Out, err)
	}
	logger.Info("report written", "out", cfg.Out, "format", cfg.Format, "partial", r.Partial,
		"recommendations", len(r.Recommendations), "freed_eur_per_month", fmt.Sprintf("%.2f", r.FreedEURPerMonth))
	if hook != nil {
		if err := hook.Post(ctx, r, cfg.Timeout); err != nil {
			return fmt.Errorf("report written to %s, but %w", cfg.Out, err)
		}
		logger.Info("report posted to webhook")
	}
	return nil
}
