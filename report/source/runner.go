package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// rangeRunner splits range queries into requests of at most maxPoints steps
// each, and of at most about maxSamples samples each, so that no single
// request asks the server for an unbounded answer, and reports progress to a
// Progress (nil: none). It is not safe for concurrent use.
type rangeRunner struct {
	q          Querier
	maxPoints  int
	maxSamples int // samples (series × steps) one answer should hold; 0: no limit
	progress   Progress
	total      int // requests planned
	done       int
	warnings   []string
	series     int // series in the last answer; 0: none yet
}

// ProbeSteps is the size, in steps, of a Ledger's first request when
// answers are bounded by samples (LedgerOptions.MaxSamplesPerQuery): the
// series it returns size the requests that follow.
const ProbeSteps = 10

// requests returns how many requests a query over (start, end] at step needs
// at maxPoints steps per request; run corrects the count in total when
// maxSamples makes it split finer.
func (r *rangeRunner) requests(start, end time.Time, step time.Duration) int {
	return ceilDiv(int(end.Sub(start)/step)+1, r.maxPoints)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// run evaluates query at start, start+step, …, end and calls each with the
// series of every request in time order. With maxSamples set, the runner's
// first request asks for ProbeSteps steps and every later one for as many
// steps as keep series × steps within maxSamples, counting the series of the
// previous answer (of this query or the one before), between 1 and maxPoints.
// No request spans two UTC days, so that query frontends (Thanos, Mimir)
// which split and cache by day get requests they need not split. An answer
// too large to read is asked again in halves, down to one step, and the
// query's later requests are no longer than the half that was read.
func (r *rangeRunner) run(ctx context.Context, name, query string, start, end time.Time, step time.Duration, each func(pmodel.Matrix)) error {
	planned, done := r.requests(start, end, step), 0
	steps := r.sized()
	if r.maxSamples > 0 && r.series == 0 {
		steps = min(ProbeSteps, r.maxPoints)
	}
	limit := r.maxPoints // lowered when an answer was too large to read
	for from := start; !from.After(end); {
		to := slices.MinFunc([]time.Time{from.Add(time.Duration(steps-1) * step), end, lastStepOfDay(from, step)}, time.Time.Compare)
		m, warnings, err := r.q.QueryRange(ctx, query, from, to, step)
		var tooLarge *AnswerTooLargeError
		if errors.As(err, &tooLarge) && to.After(from) {
			limit = max(1, int(to.Sub(from)/step+1)/2)
			steps = limit
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.warnings = append(r.warnings, warnings...)
		each(m)
		from = to.Add(step)
		r.series = max(1, len(m))
		steps = min(r.sized(), limit)
		done++
		left := 0
		if !from.After(end) {
			left = ceilDiv(int(end.Sub(from)/step)+1, steps)
		}
		r.total += done + left - planned
		planned = done + left
		r.done++
		if r.progress != nil {
			r.progress.Update(fmt.Sprintf("report: %d/%d queries (%s)", r.done, r.total, name))
		}
	}
	return nil
}

// lastStepOfDay is the last of from, from+step, … before the UTC midnight
// that follows from: the end of a request that starts at from and stays
// within from's day.
func lastStepOfDay(from time.Time, step time.Duration) time.Time {
	midnight := from.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return from.Add((midnight.Sub(from) - 1) / step * step)
}

// sized is the steps of the next request: maxPoints, or fewer when
// maxSamples bounds the samples of an answer as large as the last.
func (r *rangeRunner) sized() int {
	if r.maxSamples == 0 || r.series == 0 {
		return r.maxPoints
	}
	return max(1, min(r.maxPoints, r.maxSamples/r.series))
}

// finish ends the progress line.
func (r *rangeRunner) finish() {
	if r.progress != nil {
		r.progress.End()
	}
}
