package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// EmbeddedQuerier evaluates PromQL with Prometheus' own engine over a local
// storage.Queryable (for --demo, tests and benchmarks). It is safe for
// concurrent use.
type EmbeddedQuerier struct {
	engine *promql.Engine
	store  storage.Queryable
}

// NewEmbeddedQuerier returns a querier over store. timeout bounds each query.
func NewEmbeddedQuerier(store storage.Queryable, timeout time.Duration, logger *slog.Logger) *EmbeddedQuerier {
	return &EmbeddedQuerier{
		engine: promql.NewEngine(promql.EngineOpts{
			Logger:               logger,
			MaxSamples:           50_000_000,
			Timeout:              timeout,
			LookbackDelta:        5 * time.Minute,
			EnableAtModifier:     true,
			EnableNegativeOffset: true,
		}),
		store: store,
	}
}

// QueryRange implements Querier.
func (e *EmbeddedQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	q, err := e.engine.NewRangeQuery(ctx, e.store, nil, query, start, end, step)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded engine: query %s: %w", query, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, nil, fmt.Errorf("embedded engine: query %s: %w", query, res.Err)
	}
	var warnings []string
	for _, w := range res.Warnings {
		warnings = append(warnings, w.Error())
	}
	pm, err := res.Matrix()
	if err != nil {
		return nil, nil, fmt.Errorf("embedded engine: query %s: %w", query, err)
	}
	out := make(pmodel.Matrix, 0, len(pm))
	for _, s := range pm {
		m := make(pmodel.Metric, s.Metric.Len())
		s.Metric.Range(func(l labels.Label) { m[pmodel.LabelName(l.Name)] = pmodel.LabelValue(l.Value) })
		vals := make([]pmodel.SamplePair, len(s.Floats))
		for i, p := range s.Floats {
			vals[i] = pmodel.SamplePair{Timestamp: pmodel.Time(p.T), Value: pmodel.SampleValue(p.F)}
		}
		out = append(out, &pmodel.SampleStream{Metric: m, Values: vals})
	}
	return out, warnings, nil
}
