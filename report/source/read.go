package source

import (
	"context"
	"math"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// thisPeriod fills d.Ledger, and d's per-bucket timeline, presence and GPUs,
// from the ledger counters over the range.
func (c *collector) thisPeriod(ctx context.Context, d *model.Dataset) error {
	ledger, err := c.ledger(ctx, d, d.Start, d.End, true, "")
	if err != nil {
		return err
	}
	d.Ledger = ledger
	return nil
}

// ledger reads seconds and EUR per holding and state over (start, end]; with
// fill it also fills d's per-bucket timeline and presence. Its queries are
// named with suffix in the progress line.
func (c *collector) ledger(ctx context.Context, d *model.Dataset, start, end time.Time, fill bool, suffix string) (map[model.HoldingKey]*model.LedgerEntry, error) {
	// Buckets from the one ending at start: its values are the base of the first.
	secs, err := c.counters(ctx, "gputally_gpu_seconds_total"+suffix, "gputally_gpu_seconds_total", start, end, d.Step)
	if err != nil {
		return nil, err
	}
	eurs, err := c.counters(ctx, "gputally_cost_eur_total"+suffix, "gputally_cost_eur_total", start, end, d.Step)
	if err != nil {
		return nil, err
	}
	// Which buckets to read again, sample by sample: a seconds series' first
	// bucket is plainly new when its counter is small; an EUR series' when its
	// seconds series' is, and that one is not read again there.
	limit := (d.Step + newSeriesSlack).Seconds()
	for _, s := range secs {
		s.plan(func(i int) bool { return s.last[i] <= limit })
	}
	for fp, s := range eurs {
		sec := secs[fp]
		s.plan(func(i int) bool { return sec == nil || !sec.want[i] && sec.last[i] <= limit })
	}
	if err := c.refine(ctx, "gputally_gpu_seconds_total"+suffix, "gputally_gpu_seconds_total", secs, start, d.Step); err != nil {
		return nil, err
	}
	if err := c.refine(ctx, "gputally_cost_eur_total"+suffix, "gputally_cost_eur_total", eurs, start, d.Step); err != nil {
		return nil, err
	}
	// A series is new when its seconds counter's first sample in its first
	// bucket is small: it started from 0 in the bucket.
	isNew := map[pmodel.Fingerprint]bool{}
	for fp, s := range secs {
		if i := s.firstBucket(); i > 0 {
			first := s.last[i]
			if v := s.fine[i]; len(v) > 0 {
				first = v[0]
			}
			isNew[fp] = first <= limit
		}
	}
	l := &ledgerReading{d: d, id: c.id, fill: fill, out: map[model.HoldingKey]*model.LedgerEntry{}}
	for _, s := range secs.sorted() {
		l.addSeconds(s, isNew[s.metric.Fingerprint()])
	}
	for _, s := range eurs.sorted() {
		fp := s.metric.Fingerprint()
		n := true // no seconds series to tell: counted from 0, as a new series
		if _, has := secs[fp]; has {
			n = isNew[fp]
		}
		l.addEUR(s, n)
	}
	return l.out, nil
}

// ledgerReading is the ledger being read: the entries by holding and, with
// fill, the dataset's per-bucket figures.
type ledgerReading struct {
	d    *model.Dataset
	id   identity
	fill bool
	out  map[model.HoldingKey]*model.LedgerEntry
}

// entry returns the entry of series m, created if new, and its state; false
// for a state the ledger does not write.
func (l *ledgerReading) entry(m pmodel.Metric) (*model.LedgerEntry, int, bool) {
	st, ok := model.StateIndex(string(m["state"]))
	if !ok {
		return nil, 0, false
	}
	k := l.id.holdingOf(m)
	e := l.out[k]
	if e == nil {
		e = &model.LedgerEntry{Model: string(m["modelName"]), Host: hostOf(m), Profile: string(m["GPU_I_PROFILE"]), GPU: string(m["gpu"]), Last: -1}
		if l.fill {
			e.BusyPerBucket = make([]float32, l.d.Buckets)
		}
		l.out[k] = e
	}
	return e, st, true
}

// addSeconds adds the device-seconds of one gputally_gpu_seconds_total series;
// isNew tells whether its first bucket counts from 0.
func (l *ledgerReading) addSeconds(s *counterSeries, isNew bool) {
	d := l.d
	e, st, ok := l.entry(s.metric)
	if !ok {
		return
	}
	var g *model.GPUSeen
	if l.fill {
		g = d.GPU(l.id.gpuOf(s.metric), e)
	}
	for b, v := range s.increases(isNew) {
		if math.IsNaN(v) {
			continue
		}
		e.Seconds[st] += v
		if l.fill && b < d.Buckets {
			d.AddSeconds(e, g, b, st, v)
		}
	}
}

// addEUR adds the EUR of one gputally_cost_eur_total series; isNew tells
// whether its first bucket counts from 0 (its seconds series says so).
func (l *ledgerReading) addEUR(s *counterSeries, isNew bool) {
	e, st, ok := l.entry(s.metric)
	if !ok {
		return
	}
	for _, v := range s.increases(isNew) {
		if !math.IsNaN(v) {
			e.EUR[st] += v
		}
	}
}

// previous fills d.Previous from the ledger counters over the period of the
// same length before the range, when that period holds enough to compare with.
func (c *collector) previous(ctx context.Context, d *model.Dataset) error {
	span := d.End.Sub(d.Start)
	prev, err := c.ledger(ctx, d, d.Start.Add(-span), d.Start, false, " (previous period)")
	if err != nil {
		return err
	}
	// A history that begins at the range's start leaves the previous period
	// the seconds up to its first sample: that is no period to compare with.
	if secondsOf(prev) >= previousAtLeast*secondsOf(d.Ledger) && len(prev) > 0 {
		d.Previous = prev
	}
	return nil
}

// previousAtLeast is the share of this period's device-seconds the previous
// period must hold to be compared with.
const previousAtLeast = 0.01

func secondsOf(l map[model.HoldingKey]*model.LedgerEntry) float64 {
	var sum float64
	for _, e := range l {
		for _, v := range e.Seconds {
			sum += v
		}
	}
	return sum
}
