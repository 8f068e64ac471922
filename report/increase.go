package report

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// How the report reads the ledger counters.
//
// increase() extrapolates: a series that starts inside its window is not
// counted from 0 but from its first sample, stretched by at most half a scrape
// interval, and a series that ends inside the window is stretched the same way.
// A 90 s job scraped every 30 s loses a third of its seconds; one shorter than a
// scrape vanishes. The exporter makes the exact answer reachable instead: an
// ended holder's series stays exported with its final value for a retention
// window (so its last increment is scraped), and a new holder's series starts
// from 0. So the report sums per-point increases itself, with functions that
// mean the same on Prometheus 2 and 3 and on VictoriaMetrics
// (last_over_time, max_over_time, clamp_min, comparison filters, or/and and
// subqueries aligned to their step):
//
// At the points τ = multiples of r (the report's resolution), let
//
//	X = last_over_time(c[r])            the last value in (τ−r, τ]
//	P = last_over_time(c[G] offset r)   the last value before, looking back G
//	M = max_over_time(c[r])             the highest value in (τ−r, τ]
//
// and the increase at τ is
//
//	X − P                when X ≥ P: a counter going on;
//	max(M − P, 0) + X    when X < P: a reset (exporter restart) inside the
//	                     window: what it grew up to the reset, then from 0;
//	X                    when there is no P: a new series, counted from 0 —
//	                     but only if its seconds counter is at most r + G, so a
//	                     series seen again after a scrape gap longer than G
//	                     (its counter went on while nobody scraped) adds its
//	                     whole history to nothing; that time is a gap.
//
// A step bucket (t−step, t] sums the step/r points in it with a subquery over
// step − 1s (the same points whether ranges are closed, as in Prometheus 2, or
// left-open, as in Prometheus 3 and VictoriaMetrics). Consecutive points
// telescope: the sum over any run of points is the counter's growth between
// the sample before the run and the last sample in it, so the result is exact
// up to a second reset inside one resolution step, and does not depend on the
// scrape interval (r smaller than it only costs more evaluation).

// minLookback is the least G: scrapes missing for less than this are bridged.
const minLookback = 5 * time.Minute

// lookback returns G for resolution r.
func lookback(r time.Duration) time.Duration { return max(r, minLookback) }

// increaseExpr returns the per-point exact increase of the counter selected by
// sel at resolution r (see the comment above). seconds selects the matching
// gpuledger_gpu_seconds_total series, which gates new series.
func increaseExpr(sel, seconds string, r time.Duration) string {
	g := lookback(r)
	x := fmt.Sprintf("last_over_time(%s[%s])", sel, model.Duration(r))
	p := fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, model.Duration(g), model.Duration(r))
	m := fmt.Sprintf("max_over_time(%s[%s])", sel, model.Duration(r))
	// "+ 0" drops the metric name, which Prometheus 2 keeps on last_over_time:
	// every branch must yield the same label sets.
	gate := fmt.Sprintf("(last_over_time(%s[%s]) + 0 <= %g)", seconds, model.Duration(r), (r + g).Seconds())
	if sel == seconds {
		return fmt.Sprintf("((%[1]s - %[2]s) >= 0) or (clamp_min(%[3]s - %[2]s, 0) + %[1]s) or %[4]s", x, p, m, gate)
	}
	return fmt.Sprintf("((%[1]s - %[2]s) >= 0) or (clamp_min(%[3]s - %[2]s, 0) + %[1]s) or (%[1]s + 0 and %[4]s)", x, p, m, gate)
}

// bucketIncreaseExpr returns the exact increase of the counter sel over each
// step bucket (t−step, t], summed by the labels in by. step must be a multiple
// of r.
func bucketIncreaseExpr(sel, seconds, by string, step, r time.Duration) string {
	return fmt.Sprintf("sum by (%s) (sum_over_time((%s)[%s:%s]))",
		by, increaseExpr(sel, seconds, r), model.Duration(step-time.Second), model.Duration(r))
}
