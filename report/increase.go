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
// At each step t of the range query, with w the step, let
//
//	X = last_over_time(c[w])            the last value in the bucket (t−w, t]
//	P = last_over_time(c[G] offset w)   the last value before it, looking back G
//	M = max_over_time(c[w])             the highest value in the bucket
//	N = min_over_time(c[w])             the lowest (the first, without a reset)
//
// and the bucket's increase is
//
//	X − P                when X ≥ P: a counter going on;
//	max(M − P, 0) + X    when X < P: a reset (exporter restart) in the bucket:
//	                     what it grew up to the reset, then from 0;
//	X                    when there is no P and its seconds counter is at most
//	                     w + G: a new series, counted from 0;
//	X − N                when there is no P and the counter is older: a series
//	                     seen again after a scrape gap longer than G (its
//	                     counter went on while nobody scraped) counts from its
//	                     first sample after the gap; the gap stays a gap.
//
// Consecutive buckets telescope: the sum over any run of them is the counter's
// growth from the last sample before the run to the last sample in it, so the
// result is exact up to a second reset inside one bucket, whatever the scrape
// interval, and a job shorter than a scrape still counts. A sample exactly on
// a bucket boundary gives the same answer whether ranges are closed
// (Prometheus 2) or left-open (Prometheus 3, VictoriaMetrics).

// minLookback is the least G: scrapes missing for less than this are bridged.
const minLookback = 5 * time.Minute

// lookback returns G for buckets of w.
func lookback(w time.Duration) time.Duration { return max(w, minLookback) }

// increaseExpr returns the exact increase of the counter selected by sel in
// each bucket of w (see the comment above). seconds selects the matching
// gpuledger_gpu_seconds_total series, which gates new series.
func increaseExpr(sel, seconds string, w time.Duration) string {
	g := lookback(w)
	x := fmt.Sprintf("last_over_time(%s[%s])", sel, model.Duration(w))
	p := fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, model.Duration(g), model.Duration(w))
	m := fmt.Sprintf("max_over_time(%s[%s])", sel, model.Duration(w))
	n := fmt.Sprintf("min_over_time(%s[%s])", sel, model.Duration(w))
	// "+ 0" drops the metric name, which Prometheus 2 keeps on last_over_time:
	// every branch must yield the same label sets.
	gate := fmt.Sprintf("(last_over_time(%s[%s]) + 0 <= %g)", seconds, model.Duration(w), (w + g).Seconds())
	return fmt.Sprintf("((%[1]s - %[2]s) >= 0) or (clamp_min(%[3]s - %[2]s, 0) + %[1]s) or (%[1]s + 0 and %[4]s) or (%[1]s - %[5]s)", x, p, m, gate, n)
}
