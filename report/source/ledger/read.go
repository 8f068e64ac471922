package ledger

import (
	"context"
	"maps"
	"math"
	"slices"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
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

// ledger reads seconds, EUR and energy per holding and state over (start, end], a
// stretch at a time (stretch.go); with fill it also fills d's per-bucket
// timeline and presence. Its queries are named with suffix in the progress
// line.
func (c *collector) ledger(ctx context.Context, d *model.Dataset, start, end time.Time, fill bool, suffix string) (map[model.HoldingKey]*model.LedgerEntry, error) {
	l := &ledgerReading{d: d, id: c.id, fill: fill, first: start, out: map[model.HoldingKey]*model.LedgerEntry{}}
	var p pasts
	stretch := time.Duration(c.stretchBuckets(d.Step)) * d.Step
	for base := start; base.Before(end); base = base.Add(stretch) {
		if err := ctx.Err(); err != nil {
			return nil, err // checked per stretch: one that sends no query would not see ctx end
		}
		to := base.Add(stretch)
		if to.After(end) {
			to = end
		}
		if err := c.ledgerStretch(ctx, l, &p, base, to, suffix); err != nil {
			return nil, err
		}
	}
	return l.out, nil
}

// byDevice returns the series grouped by the device they are of (a whole
// GPU or a MIG instance), in holdings' order, each device's series in
// sorted's order.
func (s counterSet) byDevice(id source.Identity) [][]*counterSeries {
	groups := map[model.DeviceKey][]*counterSeries{}
	for _, cs := range s.sorted() {
		k := id.HoldingOf(cs.metric).Dev
		groups[k] = append(groups[k], cs)
	}
	out := make([][]*counterSeries, 0, len(groups))
	for _, k := range slices.SortedFunc(maps.Keys(groups), func(a, b model.DeviceKey) int {
		return model.CompareHoldingKeys(model.HoldingKey{Dev: a}, model.HoldingKey{Dev: b})
	}) {
		out = append(out, groups[k])
	}
	return out
}

// ledgerReading is the ledger being read over buckets of d.Step from the one
// ending at first, a stretch at a time: the entries by holding and, with
// fill, the dataset's per-bucket figures.
type ledgerReading struct {
	d     *model.Dataset
	id    source.Identity
	fill  bool
	first time.Time // the range's start: the end of its bucket 0
	start time.Time // the stretch's base: the end of the bucket before its first
	out   map[model.HoldingKey]*model.LedgerEntry
}

// addDevice adds the seconds series of one device (each one's isNew tells
// whether its first bucket counts from 0) and checks that together they
// count no more time than passed in any bucket (conserved).
func (l *ledgerReading) addDevice(series []*counterSeries) error {
	incs := make([][]float64, len(series))
	var sums []float64
	for j, s := range series {
		incs[j] = s.increases(s.isNew)
		l.addSeconds(s, incs[j])
		if sums == nil {
			sums = make([]float64, len(incs[j]))
		}
		for i, v := range incs[j] {
			if !math.IsNaN(v) {
				sums[i] += v
			}
		}
	}
	return conserved(l.id, series, incs, sums, l.start, l.d.Step)
}

// entry returns the entry of series m, created if new, and its state; false
// for a state the ledger does not write.
func (l *ledgerReading) entry(m pmodel.Metric) (*model.LedgerEntry, int, bool) {
	st, ok := model.StateIndex(string(m["state"]))
	if !ok {
		return nil, 0, false
	}
	k := l.id.HoldingOf(m)
	e := l.out[k]
	if e == nil {
		e = &model.LedgerEntry{Model: string(m["modelName"]), Host: hostOf(m), Profile: string(m["GPU_I_PROFILE"]), GPU: string(m["gpu"]), Last: -1}
		l.out[k] = e
	}
	return e, st, true
}

// addSeconds adds the device-seconds of one gputally_gpu_seconds_total
// series, its increases per bucket.
func (l *ledgerReading) addSeconds(s *counterSeries, increases []float64) {
	d := l.d
	e, st, ok := l.entry(s.metric)
	if !ok {
		return
	}
	var g *model.GPUSeen
	if l.fill {
		g = d.GPU(l.id.GPUOf(s.metric), e)
	}
	off := int(l.start.Sub(l.first) / d.Step) // the stretch's first bucket in the range
	for i, v := range increases {
		if math.IsNaN(v) {
			continue
		}
		e.Seconds[st] += v
		if b := off + i; l.fill && b < d.Buckets {
			d.AddSeconds(e, g, b, st, v)
		}
	}
}

// addEUR adds the EUR of one gputally_cost_eur_total series; isNew tells
// whether its first bucket counts from 0 (its seconds series says so). An
// increase beyond any price book's rate is an error (checkEUR).
func (l *ledgerReading) addEUR(s *counterSeries, isNew bool) error {
	e, st, ok := l.entry(s.metric)
	if !ok {
		return nil
	}
	off := int(l.start.Sub(l.first) / l.d.Step) // the stretch's first bucket in the range
	for i, v := range s.increases(isNew) {
		if math.IsNaN(v) {
			continue
		}
		if err := checkEUR(s, v, l.start.Add(time.Duration(i+1)*l.d.Step), l.d.Step); err != nil {
			return err
		}
		if b := off + i; l.fill && b < l.d.Buckets {
			// Per bucket too: the cluster's idle EUR of each bucket.
			l.d.AddEUR(e, l.id.ClusterOf(s.metric), b, st, v)
		} else {
			e.EUR[st] += v
		}
	}
	return nil
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
