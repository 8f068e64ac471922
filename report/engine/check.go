package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// checkAnswer checks one answer, in place: each series' samples are put in
// time order (engines return them so; a proxy may not), and an answer that
// holds two samples of one series at the same time, an infinite value, or
// one series twice is refused, naming it.
func checkAnswer(m pmodel.Matrix) error {
	seen := make(map[pmodel.Fingerprint]pmodel.Metric, len(m))
	for _, s := range m {
		fp := s.Metric.FastFingerprint() // no allocation; a collision is told apart by Equal
		if other, ok := seen[fp]; ok && other.Equal(s.Metric) {
			return fmt.Errorf("the answer holds the series %s twice", s.Metric)
		}
		seen[fp] = s.Metric
		byTime := func(a, b pmodel.SamplePair) int { return cmp.Compare(a.Timestamp, b.Timestamp) }
		if !slices.IsSortedFunc(s.Values, byTime) {
			slices.SortStableFunc(s.Values, byTime)
		}
		for i, p := range s.Values {
			if i > 0 && p.Timestamp == s.Values[i-1].Timestamp {
				return fmt.Errorf("the answer holds two samples of %s at %s: %s and %s", s.Metric, TimeOf(p), s.Values[i-1].Value, p.Value)
			}
			if math.IsInf(float64(p.Value), 0) {
				return ValueError(s.Metric, p, "no gauge or counter the report reads is infinite")
			}
		}
	}
	return nil
}

// ValueError names a value an answer must not hold: the series, the time and
// the value, and why.
func ValueError(m fmt.Stringer, p pmodel.SamplePair, why string) error {
	return fmt.Errorf("the engine answered %s for %s at %s: %s", strconv.FormatFloat(float64(p.Value), 'g', -1, 64), m, TimeOf(p), why)
}

// TimeOf writes p's time for messages: UTC, RFC 3339 with nanoseconds.
func TimeOf(p pmodel.SamplePair) string { return p.Timestamp.Time().UTC().Format(time.RFC3339Nano) }
