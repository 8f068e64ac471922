package collector

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gather returns the metrics of the latest Snapshot as the metric families a
// prometheus.Registry holding only c gathers: sorted by name, each family's
// metrics sorted by their label values. It skips the registry's checks of
// every series (label names valid, values UTF-8, no series twice), which cost
// more than the collecting itself; TestCollectorGolden compares the two on
// every golden snapshot. It serves the simulation of many scrapes
// (history.Run); /metrics keeps the registry, which also gathers the other
// collectors. The families share their names, HELP texts and label pairs with
// the collector: callers must not modify them. Safe for concurrent use.
func (c *Collector) Gather() []*dto.MetricFamily {
	ch := make(chan prometheus.Metric, 256)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	byName := map[string]*dto.MetricFamily{}
	for m := range ch {
		s := m.(*series)
		mf, ok := byName[s.family.name]
		if !ok {
			mf = &dto.MetricFamily{Name: &s.family.name, Help: &s.family.help, Type: s.dtoType()}
			byName[s.family.name] = mf
		}
		out := &dto.Metric{}
		_ = s.Write(out) // never fails
		mf.Metric = append(mf.Metric, out)
	}
	mfs := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		slices.SortFunc(mf.Metric, compareLabelValues)
		mfs = append(mfs, mf)
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return mfs
}

// dtoType is the family type of s's value type.
func (s *series) dtoType() *dto.MetricType {
	if s.typ == prometheus.CounterValue {
		return dto.MetricType_COUNTER.Enum()
	}
	return dto.MetricType_GAUGE.Enum()
}

// compareLabelValues orders metrics of one family as the registry does: fewer
// labels first, then by label values in label-name order.
func compareLabelValues(a, b *dto.Metric) int {
	if len(a.Label) != len(b.Label) {
		return cmp.Compare(len(a.Label), len(b.Label))
	}
	for i, l := range a.Label {
		if c := strings.Compare(l.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}
