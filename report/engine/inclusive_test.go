package engine

import (
	"context"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// endRecorder answers every query with one series with a point at each step
// from start to end rounded up to a whole step, as VictoriaMetrics' response
// cache does, and records the ends it was asked for.
type endRecorder struct{ ends []time.Time }

func (r *endRecorder) QueryRange(_ context.Context, _ string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	r.ends = append(r.ends, end)
	s := &pmodel.SampleStream{Metric: pmodel.Metric{"a": "b"}}
	for t := start; t.Before(end.Add(step)); t = t.Add(step) {
		s.Values = append(s.Values, pmodel.SamplePair{Timestamp: pmodel.TimeFromUnixNano(t.UnixNano()), Value: 1})
	}
	return pmodel.Matrix{s}, nil, nil
}

// TestInclusiveEnd: every request asks for 1 ms past its end (so that
// VictoriaMetrics finds a series whose only sample lies exactly at a midnight
// end; test/e2e holds it to the real one), and a point past the end, which an
// engine that rounds the end up to a step returns, is dropped.
func TestInclusiveEnd(t *testing.T) {
	end := time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)
	r := &endRecorder{}
	m, _, err := InclusiveEnd(r).QueryRange(context.Background(), "q", end.Add(-2*time.Hour), end, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ends) != 1 || !r.ends[0].Equal(end.Add(time.Millisecond)) {
		t.Errorf("asked for ends %v, want %s", r.ends, end.Add(time.Millisecond))
	}
	if len(m) != 1 || len(m[0].Values) != 3 || !m[0].Values[2].Timestamp.Time().Equal(end) {
		t.Errorf("answer %v, want the points at −2h, −1h and the end", m)
	}
}
