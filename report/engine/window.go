package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// Every window the report asks for is the half-open interval (t−w, t] at each
// evaluation time t, so that consecutive buckets share no sample and every
// engine reads the same samples into each: last_over_time, min, max and
// avg_over_time and resets then mean the same on every engine.
//
// Prometheus 3 and VictoriaMetrics bound a range selector [w] so; Prometheus 2
// (and the Thanos, Cortex and Mimir releases built on it) include its start,
// [t−w, t]. Scrapes aligned to whole seconds (a simulated history, an exporter
// scraped on the minute) then put one sample in two buckets, or 11 samples into
// a 5-minute average of 30 s scrapes where the others read 10. The report asks
// the engine once which it does (windowProbe) and, on an engine that includes
// the start, asks for w − 1 ms: samples carry millisecond timestamps, so
// [t−w+1ms, t] holds exactly the samples of (t−w, t].

// windowProbe tells how the engine bounds a range: the subquery [2s:1s],
// evaluated at a whole second t, holds the inner evaluations at t−1s and t
// where the range excludes its start (count 2), and also the one at t−2s where
// it includes it (count 3). It reads no series.
const windowProbe = "count_over_time(vector(1)[2s:1s])"

// Windows is how the engine bounds a range selector (ProbeWindows). The zero
// value reads windows as (t−w, t].
type Windows struct {
	closedStart bool // [t−w, t]: the engine includes the range's start
}

// Of returns the PromQL range that selects the samples in (t−w, t].
func (w Windows) Of(d time.Duration) string {
	if w.closedStart {
		d -= time.Millisecond
	}
	return pmodel.Duration(d).String()
}

// ProbeWindows asks the engine how it bounds a range selector (windowProbe) at
// the whole second at or before at. An engine that cannot answer the probe
// (an error other than ctx's: a 400 from an engine without subqueries, a
// proxy's page), or answers neither 2 nor 3, may still answer the report's
// queries: the windows are then read as (t−w, t], as Prometheus 3 and
// VictoriaMetrics bound them, and note says so and why. No data is missing
// for it: note is for the report's notes, not a partial report's reasons.
func ProbeWindows(ctx context.Context, run *Runner, at time.Time) (_ Windows, note string, _ error) {
	at = at.Truncate(time.Second)
	got := math.NaN()
	err := run.RunAside(ctx, "range selectors", windowProbe, at, at, time.Second, func(m pmodel.Matrix) {
		if len(m) == 1 && len(m[0].Values) == 1 {
			got = float64(m[0].Values[0].Value)
		}
	})
	w := Windows{closedStart: err == nil && got == 3}
	switch {
	case err != nil && ctx.Err() != nil:
		return w, "", err
	case err != nil:
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // without the runner's name of the query: the note names the probe
		}
		return w, fmt.Sprintf("the window probe %s failed (%v): windows are read as (t−w, t]; %s", windowProbe, err, halfOpenRisk), nil
	case got != 2 && got != 3:
		return w, fmt.Sprintf("the engine answered the window probe %s with %v, neither 2 (a range excludes its start) nor 3 (it includes it): "+
			"windows are read as (t−w, t]; %s", windowProbe, got, halfOpenRisk), nil
	}
	return w, "", nil
}

// halfOpenRisk is what reading windows as (t−w, t] risks on an engine that
// includes a range's start.
const halfOpenRisk = "on an engine that includes a range's start (Prometheus 2, and Thanos, Cortex and Mimir built on it) " +
	"a sample exactly at a bucket's start then counts in two buckets"
