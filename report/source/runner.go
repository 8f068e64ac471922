package source

import (
	"context"
	"fmt"
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
func (r *rangeRunner) run(ctx context.Context, name, query string, start, end time.Time, step time.Duration, each func(pmodel.Matrix)) error {
	planned, done := r.requests(start, end, step), 0
	steps := r.sized()
	if r.maxSamples > 0 && r.series == 0 {
		steps = min(ProbeSteps, r.maxPoints)
	}
	for from := start; !from.After(end); {
		to := from.Add(time.Duration(steps-1) * step)
		if to.After(end) {
			to = end
		}
		m, warnings, err := r.q.QueryRange(ctx, query, from, to, step)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.warnings = append(r.warnings, warnings...)
		each(m)
		from = to.Add(step)
		r.series = max(1, len(m))
		steps = r.sized()
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
