package engine

import (
	"context"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// InclusiveEnd returns q asking for every range query to 1 ms past its end and keeps the
// points up to the end. VictoriaMetrics 1.79 does not find a series whose only
// sample lies exactly at a range's end when that end is a midnight UTC (tried:
// a pod whose single sample is at 00:00:00, the end of a daily range; the same
// query ending 1 ms later finds it), so the report lost pods that started with
// its last scrape. Prometheus and VictoriaMetrics evaluate the same points
// either way (start, start+step, … up to the end); an engine that rounds the
// end up to a whole step (VictoriaMetrics' response cache) returns one more
// point, which is dropped.
func InclusiveEnd(q Querier) Querier { return inclusiveEnd{q} }

type inclusiveEnd struct{ q Querier }

// QueryRange implements Querier.
func (e inclusiveEnd) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	m, warnings, err := e.q.QueryRange(ctx, query, start, end.Add(time.Millisecond), step)
	if err != nil {
		return nil, nil, err
	}
	last := pmodel.TimeFromUnixNano(end.UnixNano())
	out := m[:0]
	for _, s := range m {
		kept := s.Values[:0]
		for _, p := range s.Values { // in any order: the answer is checked later (checkAnswer)
			if !p.Timestamp.After(last) {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			s.Values = kept
			out = append(out, s)
		}
	}
	return out, warnings, nil
}
