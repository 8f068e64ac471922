package faultengine

import (
	"time"

	"github.com/prometheus/common/model"
)

// Faults in an answer's series (Fault.Answer).

// SetAt sets the value at t of the series whose label name is value: a NaN,
// an infinity or a negative number where the engine had a counter's value.
func SetAt(name, value string, t time.Time, v float64) func(model.Matrix) model.Matrix {
	at := model.TimeFromUnixNano(t.UnixNano())
	return func(m model.Matrix) model.Matrix {
		for _, s := range m {
			if string(s.Metric[model.LabelName(name)]) != value {
				continue
			}
			for i := range s.Values {
				if s.Values[i].Timestamp == at {
					s.Values[i].Value = model.SampleValue(v)
				}
			}
		}
		return m
	}
}

// SwapAtDrop swaps, in each series, the two samples around its first
// decrease (a counter's reset): one pair out of time order, where the order
// decides what a reading after a reset counts.
func SwapAtDrop(m model.Matrix) model.Matrix {
	for _, s := range m {
		for i := 1; i < len(s.Values); i++ {
			if s.Values[i].Value < s.Values[i-1].Value {
				s.Values[i-1], s.Values[i] = s.Values[i], s.Values[i-1]
				break
			}
		}
	}
	return m
}

// CopyWith adds a copy of every series with the label name set to value: the
// copies an HA pair, a second scrape job or a proxy that ignores the query's
// aggregation delivers.
func CopyWith(name, value string) func(model.Matrix) model.Matrix {
	return func(m model.Matrix) model.Matrix {
		out := m
		for _, s := range m {
			c := &model.SampleStream{Metric: s.Metric.Clone(), Values: append([]model.SamplePair(nil), s.Values...)}
			c.Metric[model.LabelName(name)] = model.LabelValue(value)
			out = append(out, c)
		}
		return out
	}
}
