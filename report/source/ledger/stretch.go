package ledger

import (
	"context"
	"fmt"
	"math"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// The ledger is read a stretch of the range at a time, so that what the
// report holds of its counters grows with a stretch, not with the range: a
// counter's values and resets per series and bucket (increase.go) are kept
// for one stretch of at most a week of buckets, then added to the ledger and
// dropped. What a series carries into the next stretch is a few numbers
// (seriesPast): its last bucket's value (the base of the next stretch's
// first bucket), whether and what it was seen at before, and whether its
// first bucket counted from 0. Each stretch's first bucket is read from the
// engine as its own, so the figures are those of one read over the range: a
// restart or a gap across a stretch's edge is read sample by sample as
// anywhere else. One exception, of series the exporter does not write: an
// EUR series whose first bucket has no sample of its seconds series is
// judged by what the seconds series showed in that stretch and before it —
// read over the whole range at once, a seconds series sampled only later
// would decide.

// defaultStretch is the most time a stretch of the ledger spans.
const defaultStretch = 7 * 24 * time.Hour

// stretchBuckets is the most step buckets one stretch of the ledger holds:
// c.stretch when set (tests), else a week's, at least one.
func (c *collector) stretchBuckets(step time.Duration) int {
	if c.stretch > 0 {
		return c.stretch
	}
	return max(1, int(defaultStretch/step))
}

// seriesPast is what one counter series carries from the stretches read so
// far into the next one.
type seriesPast struct {
	last     float64 // the value of the last bucket read; NaN: no sample there
	lastSeen float64 // the last value in any bucket so far; NaN: none
	seen     bool    // it had a value in a bucket so far
	isNew    bool    // its first bucket counted from 0 (seconds series)
}

// counterPast is what the stretches read so far left of one counter's
// series.
type counterPast struct {
	read   bool // a stretch was read: the next one's bucket 0 is its last
	series map[pmodel.Fingerprint]*seriesPast
}

// begin sets up the series of set, read over a stretch (index
// 0: the bucket before the stretch), from what the stretches before left:
// bucket 0's value and what the series was seen at before it. Before the
// first stretch, bucket 0 is read from the engine.
func (p *counterPast) begin(set counterSet) {
	for fp, s := range set {
		if !p.read {
			s.seen, s.lastSeen = !math.IsNaN(s.last[0]), s.last[0]
			continue
		}
		s.lastSeen = math.NaN()
		if sp := p.series[fp]; sp != nil {
			s.last[0], s.lastSeen, s.seen, s.isNew = sp.last, sp.lastSeen, sp.seen, sp.isNew
		}
	}
}

// end records what the series of set carry past the stretch just read.
func (p *counterPast) end(set counterSet) {
	if p.series == nil {
		p.series = map[pmodel.Fingerprint]*seriesPast{}
	}
	for fp, sp := range p.series {
		if set[fp] == nil {
			sp.last = math.NaN() // no sample in the stretch, nor in its last bucket
		}
	}
	for fp, s := range set {
		sp := p.series[fp]
		if sp == nil {
			sp = &seriesPast{}
			p.series[fp] = sp
		}
		sp.last, sp.lastSeen, sp.seen, sp.isNew = s.last[len(s.last)-1], s.lastSeen, s.seen, s.isNew
		for i := len(s.last) - 1; i >= 1; i-- {
			if !math.IsNaN(s.last[i]) {
				sp.lastSeen, sp.seen = s.last[i], true
				break
			}
		}
	}
	p.read = true
}

// isNew tells whether the seconds series fp counted its first bucket from 0,
// and whether it was seen in set (this stretch) or before it.
func (p *counterPast) isNew(set counterSet, fp pmodel.Fingerprint) (isNew, seen bool) {
	if s := set[fp]; s != nil {
		return s.isNew, true
	}
	if sp := p.series[fp]; sp != nil {
		return sp.isNew, true
	}
	return false, false
}

// pasts is what the stretches read so far left of each ledger counter.
type pasts struct{ secs, eurs, joules counterPast }

// follower is a ledger counter read like the EUR: bucket by bucket as its
// seconds series, which tells whether its first bucket counts from 0.
type follower struct {
	metric string
	past   *counterPast
	add    func(s *counterSeries, isNew bool) error
}

// ledgerStretch reads the ledger counters — seconds, EUR and energy — over
// the buckets ending in (base, to] into l, from what the stretches before
// left in p, which it updates.
func (c *collector) ledgerStretch(ctx context.Context, l *ledgerReading, p *pasts, base, to time.Time, suffix string) error {
	step := l.d.Step
	secs, err := c.counters(ctx, secondsCounter+suffix, secondsCounter, base, to, step, &p.secs)
	if err != nil {
		return err
	}
	followers := []follower{{eurCounter, &p.eurs, l.addEUR}, {energyCounter, &p.joules, l.addEnergy}}
	sets := make([]counterSet, len(followers))
	for i, f := range followers {
		if sets[i], err = c.counters(ctx, f.metric+suffix, f.metric, base, to, step, f.past); err != nil {
			return err
		}
	}
	// Which buckets to read again, sample by sample: a seconds series' first
	// bucket is plainly new when its counter is small; an EUR or energy
	// series' when its seconds series' is, and that one is not read again
	// there.
	limit := (step + newSeriesSlack).Seconds()
	for _, s := range secs {
		s.plan(func(i int) bool { return s.last[i] <= limit })
	}
	for _, set := range sets {
		for fp, s := range set {
			sec := secs[fp]
			s.plan(func(i int) bool { return sec == nil || !sec.want[i] && sec.last[i] <= limit })
		}
	}
	if err := c.refine(ctx, secondsCounter+suffix, secondsCounter, secs, base, step); err != nil {
		return err
	}
	for i, f := range followers {
		if err := c.refine(ctx, f.metric+suffix, f.metric, sets[i], base, step); err != nil {
			return err
		}
	}
	// A series is new when its seconds counter's first sample in its first
	// bucket is small: it started from 0 in the bucket.
	for _, s := range secs {
		if i := s.firstBucket(); i > 0 {
			first := s.last[i]
			if v := s.fine[i]; len(v) > 0 {
				first = v[0]
			}
			s.isNew = first <= limit
		}
	}
	l.start = base
	for _, dev := range secs.byDevice(c.id) {
		if err := l.addDevice(dev); err != nil {
			return err
		}
	}
	for i, f := range followers {
		for _, s := range sets[i].sorted() {
			isNew, seen := p.secs.isNew(secs, s.metric.Fingerprint())
			if !seen {
				isNew = true // no seconds series to tell: counted from 0, as a new series
			}
			if err := f.add(s, isNew); err != nil {
				return err
			}
		}
	}
	p.secs.end(secs)
	for i, f := range followers {
		f.past.end(sets[i])
	}
	return nil
}

// counters reads X and R of metric per series over buckets of step ending at
// start, start+step, …, end: the stretch after past (stretch.go), whose
// bucket 0, the one ending at start, is read only before the first stretch.
func (c *collector) counters(ctx context.Context, name, metric string, start, end time.Time, step time.Duration, past *counterPast) (counterSet, error) {
	n := int(end.Sub(start)/step) + 1
	from := start
	if past.read {
		from = start.Add(step)
	}
	set := counterSet{}
	fill := func(resets bool) func(pmodel.Matrix) {
		return func(m pmodel.Matrix) {
			for _, s := range m {
				delete(s.Metric, pmodel.MetricNameLabel)
				if err := c.checkCounterSeries(metric, s, resets); err != nil {
					c.run.Refuse(err)
					return
				}
				fp := s.Metric.Fingerprint()
				cs := set[fp]
				if cs == nil {
					cs = &counterSeries{metric: s.Metric, last: nans(n)}
					set[fp] = cs
				}
				for _, p := range s.Values {
					i := int(p.Timestamp.Time().Sub(start) / step)
					switch {
					case i < 0 || i >= n:
					case !resets:
						cs.last[i] = float64(p.Value)
					case p.Value == 0:
						cs.noResets.Add(i)
					default:
						cs.noResets.Remove(i)
					}
				}
			}
		}
	}
	if err := c.run.Run(ctx, name, c.dedupe.read(fmt.Sprintf("last_over_time(%s[%s])", metric, c.win.Of(step))), from, end, step, fill(false)); err != nil {
		return nil, err
	}
	if err := c.run.Run(ctx, name+" (resets)", c.dedupe.read(fmt.Sprintf("resets(%s[%s])", metric, c.win.Of(2*step))), from, end, step, fill(true)); err != nil {
		return nil, err
	}
	past.begin(set)
	return set, nil
}
