package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// Runner splits range queries into requests of at most Limits.MaxPoints
// steps each, and of at most about Limits.MaxSamples samples each, so that no
// single request asks the server for an unbounded answer; it has at most
// Limits.InFlight requests of a query in flight at once, checks every answer
// (checkAnswer), and reports progress to a Progress (nil: none). Its Querier
// must be safe for concurrent use when InFlight is more than 1. A Runner is
// not safe for concurrent use: the calling goroutine folds every answer, in
// time order.
type Runner struct {
	q          Querier
	maxPoints  int
	maxSamples int // samples (series × steps) one answer should hold; 0: no limit
	inFlight   int // requests of one query in flight at once; 0 or 1: one at a time
	progress   Progress
	total      int // requests planned
	done       int
	samples    int // samples in the answers read
	warnings   []string
	series     int // series in the last answer (the most of the last wave); 0: none yet
	// read (optional) is the series the engine reads for each point of the
	// query being run when that is more than its answer holds (an
	// aggregation): requests are sized by the larger.
	read int
	// refused is the first value a fold found that its answer must not hold
	// (Refuse); Run returns it after that fold.
	refused error
}

// Limits bound the requests of a Runner.
type Limits struct {
	// MaxPoints is the most steps one request asks for (at least 2); longer
	// ranges are split into several requests.
	MaxPoints int
	// MaxSamples bounds the samples (series × steps) one answer should hold:
	// requests are sized by the series of the previous answer. 0: no bound.
	MaxSamples int
	// InFlight bounds the requests of one query sent at once; the answers
	// are folded in time order whatever it is. 0 or 1: one at a time.
	InFlight int
}

// NewRunner returns a Runner of requests to q within lim, reporting to
// progress (nil: none).
func NewRunner(q Querier, lim Limits, progress Progress) *Runner {
	return &Runner{q: q, maxPoints: lim.MaxPoints, maxSamples: lim.MaxSamples, inFlight: lim.InFlight, progress: progress}
}

// MaxPoints is the most steps one request asks for.
func (r *Runner) MaxPoints() int { return r.maxPoints }

// Plan adds n (negative: takes) to the requests the progress line counts as
// planned; a reading plans its requests before it runs them (Requests).
func (r *Runner) Plan(n int) { r.total += n }

// Done is the number of requests answered.
func (r *Runner) Done() int { return r.done }

// Warnings are the annotations the answers carried, in the order read.
func (r *Runner) Warnings() []string { return r.warnings }

// ReadPerPoint sizes the requests of the queries run until it is called
// again with 0 by n series a point, when that is more than an answer holds:
// the series the engine reads for each point of an aggregation.
func (r *Runner) ReadPerPoint(n int) { r.read = n }

// Refuse records err, a value an answer must not hold, for Run to return
// once the fold that found it ends: a fold cannot return an error itself.
func (r *Runner) Refuse(err error) {
	if r.refused == nil {
		r.refused = err
	}
}

// ProbeSteps is the size, in steps, of a Runner's first request when
// answers are bounded by samples (Limits.MaxSamples): the series it returns
// size the requests that follow.
const ProbeSteps = 10

// Requests returns how many requests a query over (start, end] at step needs
// at maxPoints steps per request; run corrects the count when
// maxSamples makes it split finer.
func (r *Runner) Requests(start, end time.Time, step time.Duration) int {
	return ceilDiv(int(end.Sub(start)/step)+1, r.maxPoints)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// span is the evaluation times from, from+step, …, to of one request.
type span struct{ from, to time.Time }

// answer is what one request returned.
type answer struct {
	m        pmodel.Matrix
	warnings []string
}

// Run evaluates query at start, start+step, …, end and calls each with the
// series of every request in time order, on the calling goroutine. With
// maxSamples set, the runner's first request asks for ProbeSteps steps and
// every later one for as many steps as keep series × steps within
// maxSamples, counting the series of the previous answer (of this query or
// the one before), between 1 and maxPoints.
//
// The first request of a query is alone in flight; then the runner sends
// waves of up to inFlight requests at once, sized by the most series an
// answer of the wave before had, and folds their answers in time order, so
// that the figures do not depend on inFlight or on which answer came first,
// and at most inFlight answers are held at once. No request spans two UTC
// days, so that query frontends (Thanos, Mimir) which split and cache by day
// get requests they need not split. An answer too large to read is asked
// again in halves, down to one step, and the query's later requests are no
// longer than the half that was read.
func (r *Runner) Run(ctx context.Context, name, query string, start, end time.Time, step time.Duration, each func(pmodel.Matrix)) error {
	planned, done := r.Requests(start, end, step), 0
	steps := r.sized()
	if r.maxSamples > 0 && r.series == 0 {
		steps = min(ProbeSteps, r.maxPoints)
	}
	limit := r.maxPoints // lowered when an answer was too large to read
	wave := 1
	for from := start; !from.After(end); {
		spans := make([]span, 0, wave)
		for f := from; len(spans) < wave && !f.After(end); {
			to := slices.MinFunc([]time.Time{f.Add(time.Duration(steps-1) * step), end, lastStepOfDay(f, step)}, time.Time.Compare)
			spans = append(spans, span{f, to})
			f = to.Add(step)
		}
		from = spans[len(spans)-1].to.Add(step)
		// The plan: this wave, and the rest at its requests' size.
		planned = r.replan(planned, done+len(spans), from, end, step, steps)
		answers, limits, err := r.fetchAll(ctx, query, spans, step, limit)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		series := 0
		for i, as := range answers {
			limit = min(limit, limits[i])
			for _, a := range as {
				series = max(series, len(a.m))
				r.fold(name, a, each)
				done++
				if r.refused != nil {
					return fmt.Errorf("%s: %w", name, r.refused)
				}
			}
		}
		r.series = max(1, series)
		steps = min(r.sized(), limit)
		planned = r.replan(planned, done, from, end, step, steps)
		wave = max(1, r.inFlight)
	}
	return nil
}

// replan corrects the requests total counts for a query: planned is what
// it counts now; made is the requests the query made or is making; the steps
// from from to end are left, at steps a request. It returns the new count.
func (r *Runner) replan(planned, made int, from, end time.Time, step time.Duration, steps int) int {
	left := 0
	if !from.After(end) {
		left = ceilDiv(int(end.Sub(from)/step)+1, steps)
	}
	r.total += made + left - planned
	return made + left
}

// fold hands one answer to each and counts it.
func (r *Runner) fold(name string, a answer, each func(pmodel.Matrix)) {
	r.warnings = append(r.warnings, a.warnings...)
	for _, s := range a.m {
		r.samples += len(s.Values)
	}
	each(a.m)
	r.done++
	if r.progress != nil {
		// An answer asked again in halves is more requests than planned.
		r.progress.Update(fmt.Sprintf("report: %d/%d queries, %s samples read (%s)", r.done, max(r.total, r.done), countString(r.samples), name))
	}
}

// fetchAll reads the spans, each on a goroutine of its own when there are
// several, and returns their answers in the spans' order and the request
// size each had to come down to; the error is the first span's that failed.
func (r *Runner) fetchAll(ctx context.Context, query string, spans []span, step time.Duration, limit int) ([][]answer, []int, error) {
	answers, limits, errs := make([][]answer, len(spans)), make([]int, len(spans)), make([]error, len(spans))
	if len(spans) == 1 {
		limits[0] = limit
		answers[0], errs[0] = r.fetch(ctx, query, spans[0], step, &limits[0])
	} else {
		var wg sync.WaitGroup
		for i, s := range spans {
			limits[i] = limit
			wg.Go(func() { answers[i], errs[i] = r.fetch(ctx, query, s, step, &limits[i]) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return answers, limits, nil
}

// fetch reads one span in requests of at most *limit steps, halving *limit
// each time an answer is too large to read, down to one step.
func (r *Runner) fetch(ctx context.Context, query string, s span, step time.Duration, limit *int) ([]answer, error) {
	var out []answer
	for from := s.from; !from.After(s.to); {
		to := s.to
		if n := int(to.Sub(from)/step) + 1; n > *limit {
			to = from.Add(time.Duration(*limit-1) * step)
		}
		m, warnings, err := r.q.QueryRange(ctx, query, from, to, step)
		var tooLarge *AnswerTooLargeError
		switch {
		case errors.As(err, &tooLarge) && to.After(from):
			*limit = max(1, int(to.Sub(from)/step+1)/2)
			continue
		case tooLarge != nil:
			return nil, fmt.Errorf("%w, even for the one step at %s: the report cannot read it in less; give it more memory, or raise the cap", err, from.UTC().Format(time.RFC3339))
		}
		if err == nil {
			err = checkAnswer(m)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, answer{m, warnings})
		from = to.Add(step)
	}
	return out, nil
}

// countString writes n with a unit prefix: 950, 12.3k, 4.56M, 1.23G.
func countString(n int) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.3gk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// RunAside is Run for a query whose answer must not size the requests of
// the queries that follow it: a probe's single series, a few GPUs' series
// read again.
func (r *Runner) RunAside(ctx context.Context, name, query string, start, end time.Time, step time.Duration, each func(pmodel.Matrix)) error {
	series := r.series
	defer func() { r.series = series }()
	return r.Run(ctx, name, query, start, end, step, each)
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
func (r *Runner) sized() int {
	if r.maxSamples == 0 || r.series == 0 {
		return r.maxPoints
	}
	return max(1, min(r.maxPoints, r.maxSamples/max(r.series, r.read)))
}

// Finish ends the progress line.
func (r *Runner) Finish() {
	if r.progress != nil {
		r.progress.End()
	}
}
