// Package engineplay plays, for the report's unit tests, the semantics of
// engines that differ from the embedded one (Prometheus 3: a range (t−w, t],
// increase() extrapolated) on it by rewriting the queries: Prometheus 2's
// ranges that include their start and VictoriaMetrics' counter functions.
// The end-to-end tests hold the report to the real Prometheus 2 and
// VictoriaMetrics; these let a unit test show a reading that depends on them.
// The queriers are safe for concurrent use.
package engineplay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
)

// rangeRe matches a range [d] or a subquery's range [d:s] of a query.
var rangeRe = regexp.MustCompile(`\[([0-9a-z]+)(:[0-9a-z]*)?\]`)

// Prometheus2 reads ranges as Prometheus 2 does, including their start
// [t−w, t]: every range is asked 1 ms longer of the embedded engine, whose
// ranges exclude their start.
type Prometheus2 struct{ engine.Querier }

// QueryRange implements engine.Querier.
func (p Prometheus2) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	var bad error
	q = rangeRe.ReplaceAllStringFunc(q, func(r string) string {
		m := rangeRe.FindStringSubmatch(r)
		d, err := pmodel.ParseDuration(m[1])
		if err != nil {
			bad = err
			return r
		}
		return "[" + (d + pmodel.Duration(time.Millisecond)).String() + m[2] + "]"
	})
	if bad != nil {
		return nil, nil, bad
	}
	return p.Querier.QueryRange(ctx, q, start, end, step)
}

// increaseRe and resetsRe match increase(SELECTOR[RANGE]) and resets(…).
var (
	increaseRe = regexp.MustCompile(`increase\(([^\[]+)\[([0-9a-z]+)\]\)`)
	resetsRe   = regexp.MustCompile(`resets\(([^\[]+)\[([0-9a-z]+)\]\)`)
)

// VictoriaMetrics reads counters as VictoriaMetrics does: increase() counts
// from the last sample before the window, however old, without
// extrapolating (and, without one, from the window's first sample), and
// resets() also counts the step into the window from the sample before it
// (played as resets over a window half as long again, which counts that step
// and more). Its ranges exclude their start, as the embedded engine's.
type VictoriaMetrics struct{ engine.Querier }

// QueryRange implements engine.Querier.
func (v VictoriaMetrics) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	q = increaseRe.ReplaceAllString(q, `((last_over_time($1[$2]) - last_over_time($1[1w] offset $2)) or (last_over_time($1[$2]) - min_over_time($1[$2])))`)
	q = resetsRe.ReplaceAllStringFunc(q, func(r string) string {
		m := resetsRe.FindStringSubmatch(r)
		d, err := pmodel.ParseDuration(m[2])
		if err != nil {
			return r
		}
		return fmt.Sprintf("resets(%s[%s])", m[1], d+d/2)
	})
	return v.Querier.QueryRange(ctx, q, start, end, step)
}

// Engine is a querier and the engine it plays.
type Engine struct {
	Name string
	Q    engine.Querier
}

// All returns the embedded engine over st (as "prometheus 3") and its plays
// of Prometheus 2 and VictoriaMetrics.
func All(st *engine.Store) []Engine {
	q := engine.NewEmbeddedQuerier(st, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return []Engine{{"prometheus 3", q}, {"prometheus 2", Prometheus2{q}}, {"victoria-metrics", VictoriaMetrics{q}}}
}
