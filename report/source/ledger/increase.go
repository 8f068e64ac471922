package ledger

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// How the report reads the ledger counters.
//
// The engines' counter functions do not agree. Prometheus' increase()
// extrapolates to the window's edges: a series that starts inside its window
// is counted from its first sample, not from 0, and a job shorter than a
// scrape vanishes. VictoriaMetrics' increase() counts from the last sample
// before the window, however old: a scrape gap's growth lands in the bucket
// after it. So the report uses no counter function. It reads the raw samples'
// values through functions of the samples inside a window, which every engine
// evaluates alike once the windows are alike (report/engine/window.go), and takes the
// differences itself. The exporter makes the exact answer reachable: an ended
// holder's series stays exported with its final value for a retention window
// (so its last increment is scraped), and a new holder's series, and every
// series of a restarted exporter, starts from 0.
//
// Per series and step bucket (t−w, t], from the bucket that ends at the
// range's start on, the report asks for X = last_over_time(c[w]) (the last
// value in the bucket; NaN: no sample) and R = resets(c[2w]), the decreases
// over the bucket and the one before it (so the step from the previous
// bucket's last sample to this one's first is inside it). R only tells the
// report where to look closer: VictoriaMetrics also counts the step from the
// sample before the window, and a decrease in the bucket before makes this
// one look closer too; neither changes a figure. With P the previous bucket's
// X, a bucket's increase is
//
//	X − P   when P is there, X ≥ P and R = 0: the counter went on (exact);
//	X       when the series has no X in any earlier bucket from the one
//	        ending at the range's start on, R = 0 and its seconds counter is
//	        at most w + newSeriesSlack: a new series, counted from 0 (exact);
//
// and every other bucket with a sample — a reset (R > 0 or X < P: the
// exporter restarted, or an ended series came back from 0), the first bucket
// after a gap, a first bucket that is not plainly new — is read again, sample
// by sample: the report asks for last_over_time(c[fineStep]) at every
// fineStep of the bucket, for the series of its GPUs only, and adds up the
// steps between consecutive samples v after u:
//
//	v − u   when v ≥ u;
//	v       when v < u: a reset, the counter started again from 0, whatever
//	        values it climbs to afterwards.
//
// The first sample of the bucket steps from P. Without P it is counted from 0
// when the series is new (its seconds counter's first sample is at most
// w + newSeriesSlack), and when it lies below the last value seen before the
// gap (the counter restarted from 0 in the gap: what it holds was accrued
// since, and is read); otherwise it counts nothing, and the growth over the gap
// is not read: the gap stays a gap, on every engine, and coverage names it.
//
// A series seen before the gap is never counted from 0 again unless its
// counter went down: many counters grow slower than 1 s/s (a pod busy 5 % of
// the time, a time-sliced share, a small MIG instance, EUR), so a small
// counter does not make a series new.
//
// Consecutive buckets telescope: the sum over the range is the growth from the
// last sample before the range to the last sample in it, plus the value before
// each reset, exact whatever the scrape interval, and a job shorter than a
// scrape still counts. The second read is exact for scrape intervals of at
// least fineStep (one sample in each step); at shorter intervals a reset
// between two samples of one step loses what the first of them added. A
// restart whose new counter climbs past the old one before the first scrape
// after it (a series younger than one scrape interval at the restart) shows no
// decrease and is read as going on. What a stopping exporter accrued after its
// last scrape is lost to every reader. Two range queries per counter and
// stretch of the range (stretch.go), as with increase() before (resets over
// two buckets scans each sample twice: about 1.5 times the samples); a restart
// or a gap adds one read of the affected GPUs' raw samples over one or two
// buckets.

// newSeriesSlack is added to the bucket length when deciding whether a series
// without a previous value is new: its seconds counter cannot have grown more
// than the bucket since it was created; the slack absorbs ledger ticks that
// straddle the creation.
const newSeriesSlack = 5 * time.Minute

// fineStep is the step of the second read of a bucket: with scrapes at least
// this far apart each step holds at most one sample, so the read returns every
// sample of the bucket.
const fineStep = 5 * time.Second

// maxFineUUIDs is the most GPUs whose series a second read selects by name;
// a read of more selects every series of the counter.
const maxFineUUIDs = 100

// counterSeries is one ledger counter series over a stretch of the range
// (stretch.go): X and R per bucket, index 0 being the bucket that ends at the
// stretch's base; NaN where absent.
type counterSeries struct {
	metric pmodel.Metric // without __name__
	last   []float64
	// seen and lastSeen are whether the series had a value in a bucket
	// before bucket 1, and the last such value (NaN: none); isNew whether
	// its first bucket counted from 0 (seconds series, set once read).
	seen     bool
	lastSeen float64
	isNew    bool
	// noResets are the buckets whose R, the resets over the bucket and the
	// one before it, is 0: all R is read for (a bit per bucket, where the
	// values are 8 bytes).
	noResets model.BucketSet
	// fine holds, for the buckets read again (planned in want), the series'
	// samples in the bucket, in time order.
	want map[int]bool
	fine map[int][]float64
}

// counterSet holds the series of one counter by label set (without __name__).
type counterSet map[pmodel.Fingerprint]*counterSeries

// The ledger counters (and energyCounter), and how many there are.
const (
	secondsCounter = "gputally_gpu_seconds_total"
	eurCounter     = "gputally_cost_eur_total"
	ledgerCounters = 3
)

// checkCounterSeries checks one series of an answer to a ledger counter's
// query: it carries none of the labels the query aggregates away, and its
// values are counter values (checkCounter), or counts for resets().
func (c *collector) checkCounterSeries(metric string, s *pmodel.SampleStream, resets bool) error {
	if l := c.dedupe.kept(s.Metric); l != "" {
		return fmt.Errorf("the engine answered a query that aggregates %s away with the series %s, which has it: "+
			"an engine or proxy that copies series past the aggregation", l, named(metric, s.Metric))
	}
	for _, p := range s.Values {
		err := checkCounter(metric, s.Metric, p)
		if resets {
			err = checkCount(s.Metric, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	type keyed struct {
		key string
		cs  *counterSeries
	}
	// Each series' label text once, not twice per comparison.
	list := make([]keyed, 0, len(s))
	for _, cs := range s {
		list = append(list, keyed{cs.metric.String(), cs})
	}
	slices.SortFunc(list, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	out := make([]*counterSeries, len(list))
	for i, k := range list {
		out[i] = k.cs
	}
	return out
}

// plan marks the buckets 1…n−1 that the bulk read cannot tell (see the
// comment at the top). plainNew reports whether bucket i, the series' first,
// is plainly new by its seconds counter.
func (s *counterSeries) plan(plainNew func(i int) bool) {
	seen := s.seen
	for i := 1; i < len(s.last); i++ {
		x, p, r0 := s.last[i], s.last[i-1], s.noResets.Has(i)
		if math.IsNaN(x) {
			continue
		}
		var plain bool
		switch {
		case !math.IsNaN(p):
			plain = r0 && x >= p
		case !seen:
			plain = r0 && plainNew(i)
		}
		if !plain {
			if s.want == nil {
				s.want = map[int]bool{}
			}
			s.want[i] = true
		}
		seen = true
	}
}

// firstBucket returns the first bucket 1…n−1 with a sample when the series has
// none in an earlier bucket (from the one ending at the range's start on, in
// this stretch or one before: seen), or −1.
func (s *counterSeries) firstBucket() int {
	if s.seen {
		return -1
	}
	for i := 1; i < len(s.last); i++ {
		if !math.IsNaN(s.last[i]) {
			return i
		}
	}
	return -1
}

// refine reads again, sample by sample, the buckets the series of set want
// (plan): per run of consecutive buckets, last_over_time(metric[fineStep]) at
// every fineStep of them, for the series of their GPUs. start is the end of
// bucket 0.
func (c *collector) refine(ctx context.Context, name, metric string, set counterSet, start time.Time, step time.Duration) error {
	wanted := map[int]map[string]bool{} // bucket → UUIDs
	for _, s := range set {
		for i := range s.want {
			if wanted[i] == nil {
				wanted[i] = map[string]bool{}
			}
			wanted[i][string(s.metric["UUID"])] = true
		}
	}
	buckets := make([]int, 0, len(wanted))
	for i := range wanted {
		buckets = append(buckets, i)
	}
	slices.Sort(buckets)
	for len(buckets) > 0 {
		j := 1
		for j < len(buckets) && buckets[j] == buckets[j-1]+1 {
			j++
		}
		first, last := buckets[0], buckets[j-1]
		uuids := map[string]bool{}
		for _, i := range buckets[:j] {
			for u := range wanted[i] {
				uuids[u] = true
			}
		}
		buckets = buckets[j:]
		// Points from the end of the last bucket back, every fineStep, the
		// earliest one's window reaching the start of the first bucket.
		to := start.Add(time.Duration(last) * step)
		span := time.Duration(last-first+1) * step
		from := to.Add(-(span + fineStep - 1) / fineStep * fineStep).Add(fineStep)
		query := c.dedupe.read(fmt.Sprintf("last_over_time(%s%s[%s])", metric, uuidMatcher(uuids), c.win.Of(fineStep)))
		c.run.Plan(c.run.Requests(from, to, fineStep))
		err := c.run.RunAside(ctx, fmt.Sprintf("%s (buckets %d–%d sample by sample)", name, first, last), query, from, to, fineStep, func(m pmodel.Matrix) {
			for _, ss := range m {
				delete(ss.Metric, pmodel.MetricNameLabel)
				if err := c.checkCounterSeries(metric, ss, false); err != nil {
					c.run.Refuse(err)
					return
				}
				s := set[ss.Metric.Fingerprint()]
				if s == nil || s.want == nil {
					continue
				}
				for _, p := range ss.Values {
					off := p.Timestamp.Time().Sub(start)
					i := int(off / step)
					if off%step != 0 {
						i++ // (t−w, t] is the bucket ending at t
					}
					if s.want[i] {
						if s.fine == nil {
							s.fine = map[int][]float64{}
						}
						s.fine[i] = append(s.fine[i], float64(p.Value))
					}
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// uuidMatcher selects the series of the GPUs uuids, or every series when there
// are more than maxFineUUIDs.
func uuidMatcher(uuids map[string]bool) string {
	if len(uuids) > maxFineUUIDs {
		return ""
	}
	list := make([]string, 0, len(uuids))
	for u := range uuids {
		list = append(list, regexp.QuoteMeta(u))
	}
	slices.Sort(list)
	return "{UUID=~" + strconv.Quote(strings.Join(list, "|")) + "}"
}

// increases returns the series' increase in buckets 1…n−1 (see the comment
// at the top); NaN where the bucket had no sample. isNew tells whether the
// series' first bucket counts from 0 (its seconds counter says it is new).
func (s *counterSeries) increases(isNew bool) []float64 {
	out := make([]float64, len(s.last)-1)
	seen, lastSeen := s.seen, s.lastSeen // an X in an earlier bucket
	for i := 1; i < len(s.last); i++ {
		x, p := s.last[i], s.last[i-1]
		fine, read := s.fine[i]
		switch {
		case math.IsNaN(x):
			out[i-1] = math.NaN()
			continue
		case read:
			out[i-1] = sampleSteps(p, lastSeen, fine, isNew && !seen)
		case !math.IsNaN(p) && x >= p:
			out[i-1] = x - p
		case !math.IsNaN(p): // a reset the second read did not return
			out[i-1] = x
		case !seen && isNew:
			out[i-1] = x
		default: // seen again after a gap, without a second read: the gap stays a gap
			out[i-1] = 0
		}
		seen, lastSeen = true, x
	}
	return out
}

// sampleSteps adds up the steps between the consecutive samples vals of one
// bucket (see the comment at the top): from prev, the previous bucket's last
// value; without it, the first sample counts from 0 when the series is new or
// the value is below lastSeen, the last value before the gap.
func sampleSteps(prev, lastSeen float64, vals []float64, isNew bool) float64 {
	var sum float64
	u := prev
	for _, v := range vals {
		switch {
		case math.IsNaN(u):
			if isNew || v < lastSeen {
				sum += v
			}
		case v >= u:
			sum += v - u
		default:
			sum += v
		}
		u = v
	}
	return sum
}
