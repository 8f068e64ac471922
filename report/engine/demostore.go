package engine

import (
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// AddScrape appends one scrape — metric families as a registry gathers them,
// every sample taken at t — to the store, as Prometheus would have stored that
// scrape. It is how `report --demo` fills its store straight from the simulated
// nodes (history.Run and RunFleet take the builder as their Sink): no
// exposition text is written or parsed. A sample's value is its counter's,
// gauge's or untyped value; other metric types and NaN values are skipped.
// Label pairs are read, never kept. The samples of each series must come in
// increasing time order; scrapes of different series (different nodes'
// scrapes, each with its own instance label) may come in any order. Not safe
// for concurrent use.
//
// A series is found by its name and label pairs, rendered into a key that is
// reused from scrape to scrape, so a scrape of known series allocates nothing
// but the samples' chunk space.
func (b *StoreBuilder) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	ms := t.UnixMilli()
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Untyped != nil:
				v = m.Untyped.GetValue()
			default:
				continue
			}
			if v != v { // NaN: an absent reading, never stored
				continue
			}
			s := b.scraped(name, m.GetLabel())
			if err := b.appendTo(s, ms, v); err != nil {
				return fmt.Errorf("scrape at %s: %w", t.UTC().Format(time.RFC3339), err)
			}
		}
	}
	return nil
}

// scraped returns the series of the metric name with the label pairs,
// created if it is new.
func (b *StoreBuilder) scraped(name string, pairs []*dto.LabelPair) *memSeries {
	key := append(b.key[:0], name...)
	for _, p := range pairs {
		key = append(key, 0xff)
		key = append(key, p.GetName()...)
		key = append(key, 0xfe)
		key = append(key, p.GetValue()...)
	}
	b.key = key
	if s, ok := b.byKey[string(key)]; ok { // no allocation: the compiler looks up without copying
		return s
	}
	sb := labels.NewScratchBuilder(len(pairs) + 1)
	sb.Add(pmodel.MetricNameLabel, name)
	for _, p := range pairs {
		if p.GetValue() != "" { // a label with an empty value is no label (Append)
			sb.Add(p.GetName(), p.GetValue())
		}
	}
	sb.Sort()
	s := b.seriesOf(sb.Labels())
	if b.byKey == nil {
		b.byKey = map[string]*memSeries{}
	}
	b.byKey[string(key)] = s
	return s
}
