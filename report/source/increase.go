package source

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// How the report reads the ledger counters.
//
// increase() extrapolates: a series that starts inside its window is not
// counted from 0 but from its first sample, stretched by at most half a scrape
// interval, and a series that ends inside the window is stretched the same way.
// A 90 s job scraped every 30 s loses a fifth of its seconds; one shorter than
// a scrape vanishes. The exporter makes the exact answer reachable instead: an
// ended holder's series stays exported with its final value for a retention
// window (so its last increment is scraped), and a new holder's series starts
// from 0.
//
// So the report asks, per series and step bucket (t−w, t], for two things every
// Prometheus-compatible engine means the same by, X = last_over_time(c[w]) (the
// last value in the bucket) and I = increase(c[w]), from the bucket that ends
// at the range's start on, and takes the differences itself. With P the
// previous bucket's X, the bucket's increase is
//
//	X − P   when X ≥ P: the counter went on (exact);
//	X       when the series has no X in any earlier bucket from the one
//	        ending at the range's start on, and its seconds counter is at
//	        most w + newSeriesSlack: a new series, counted from 0 (exact);
//	I       when X < P (a reset: the exporter restarted in the bucket), or
//	        when there is no P and the series is not new: it has an X in an
//	        earlier bucket, or its seconds counter is older (a series seen
//	        again after a scrape gap: its counter went on while nobody
//	        scraped; the gap stays a gap). increase() handles the reset and
//	        only extrapolates over the edges of the bucket.
//
// A series seen before the gap is never counted from 0 again, whatever its
// counter holds: many counters grow slower than 1 s/s (a pod busy 5 % of the
// time, a time-sliced share, a small MIG instance, EUR), so a small counter
// does not make a series new.
//
// Consecutive buckets telescope: for a series scraped without resets the sum
// over the range is its growth from the last sample before the range to the
// last sample in it, exact whatever the scrape interval, and a job shorter
// than a scrape still counts. What a stopping exporter accrued after its last
// scrape is lost to every reader. Two queries cost about twice increase()
// alone, and no more PromQL than Prometheus 2 and VictoriaMetrics share.

// newSeriesSlack is added to the bucket length when deciding whether a series
// without a previous value is new: its seconds counter cannot have grown more
// than the bucket since it was created; the slack absorbs ledger ticks that
// straddle the creation.
const newSeriesSlack = 5 * time.Minute

// counterSeries is one ledger counter series over the range: X and I per bucket,
// index 0 being the bucket that ends at the range's start; NaN where absent.
type counterSeries struct {
	metric  pmodel.Metric // without __name__
	last    []float64
	changed []float64 // increase() per bucket
}

// counterSet holds the series of one counter by label set (without __name__).
type counterSet map[pmodel.Fingerprint]*counterSeries

// counters reads X and I of metric per series over buckets of step ending at
// start, start+step, …, end.
func (c *collector) counters(ctx context.Context, name, metric string, start, end time.Time, step time.Duration) (counterSet, error) {
	n := int(end.Sub(start)/step) + 1
	set := counterSet{}
	fill := func(inc bool) func(pmodel.Matrix) {
		return func(m pmodel.Matrix) {
			for _, s := range m {
				delete(s.Metric, pmodel.MetricNameLabel)
				fp := s.Metric.Fingerprint()
				cs := set[fp]
				if cs == nil {
					cs = &counterSeries{metric: s.Metric, last: nans(n), changed: nans(n)}
					set[fp] = cs
				}
				dst := cs.last
				if inc {
					dst = cs.changed
				}
				for _, p := range s.Values {
					if i := int(p.Timestamp.Time().Sub(start) / step); i >= 0 && i < n {
						dst[i] = float64(p.Value)
					}
				}
			}
		}
	}
	w := pmodel.Duration(step)
	if err := c.run.run(ctx, name, c.dedupe.read(fmt.Sprintf("last_over_time(%s[%s])", metric, w)), start, end, step, fill(false)); err != nil {
		return nil, err
	}
	if err := c.run.run(ctx, name+" (resets and gaps)", c.dedupe.read(fmt.Sprintf("increase(%s[%s])", metric, w)), start, end, step, fill(true)); err != nil {
		return nil, err
	}
	return set, nil
}

func nans(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// sorted returns the series in a fixed order, so that sums come out the same
// in every run.
func (s counterSet) sorted() []*counterSeries {
	out := make([]*counterSeries, 0, len(s))
	for _, cs := range s {
		out = append(out, cs)
	}
	slices.SortFunc(out, func(a, b *counterSeries) int { return cmp.Compare(a.metric.String(), b.metric.String()) })
	return out
}

// increases returns the series' increase in buckets 1…n−1 (see the comment
// at the top); NaN where the bucket had no sample. seconds is the X of the
// matching gputally_gpu_seconds_total series (nil: none), which tells a new
// series from one seen again after a gap that began before the range; step is
// the bucket length.
func (s *counterSeries) increases(seconds []float64, step time.Duration) []float64 {
	limit := (step + newSeriesSlack).Seconds()
	out := make([]float64, len(s.last)-1)
	seen := !math.IsNaN(s.last[0]) // an X in an earlier bucket
	for i := 1; i < len(s.last); i++ {
		x, p := s.last[i], s.last[i-1]
		switch {
		case math.IsNaN(x):
			out[i-1] = math.NaN()
		case x >= p: // false when p is NaN
			out[i-1] = x - p
		case !seen && (seconds == nil || !(seconds[i] > limit)): // p is NaN
			out[i-1] = x
		case math.IsNaN(s.changed[i]):
			out[i-1] = 0
		default:
			out[i-1] = s.changed[i]
		}
		seen = seen || !math.IsNaN(x)
	}
	return out
}
