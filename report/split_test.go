package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/prometheus/common/model"
)

// seriesRecorder records each request and how many series its answer held.
type seriesRecorder struct {
	engine.Querier
	calls  []rangeCall
	series []int
}

func (r *seriesRecorder) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	m, w, err := r.Querier.QueryRange(ctx, q, start, end, step)
	// The ledger asks for 1 ms past the end of each request it plans
	// (source's InclusiveEnd); the calls record the requests as planned.
	r.calls = append(r.calls, rangeCall{q, start, end.Add(-time.Millisecond), step})
	r.series = append(r.series, len(m))
	return m, w, err
}

// TestRequestsSizedBySamples checks that with MaxSamplesPerQuery the first
// request is a probe of engine.ProbeSteps steps, that every later request keeps the
// previous answer's series × its steps within the bound (or asks for one
// step), that the split still covers the range exactly once, and that the
// progress count ends at the requests made.
func TestRequestsSizedBySamples(t *testing.T) {
	for _, maxSamples := range []int{0, 40, 400} {
		t.Run(fmt.Sprint(maxSamples), func(t *testing.T) {
			cfg := testConfig()
			// One request at a time: each is sized by the answer before it.
			cfg.QueriesInFlight = 1
			cfg.MaxPointsPerQuery = 50
			cfg.MaxSamplesPerQuery = maxSamples
			var progress bytes.Buffer
			cfg.Progress = &progress
			rec := &seriesRecorder{Querier: fleetQuerier(testFleet(), time.Hour)}
			if _, err := generateFrom(context.Background(), cfg, rec, discard()); err != nil {
				t.Fatal(err)
			}
			points := map[string]int{}
			finer := 0 // requests the sample bound made shorter than 50 steps, not the last of a query
			for i, c := range rec.calls {
				n := int(c.end.Sub(c.start)/c.step) + 1
				points[c.query] += n
				first := i == 0 || rec.calls[i-1].query != c.query || !rec.calls[i-1].end.Add(c.step).Equal(c.start)
				last := i == len(rec.calls)-1 || rec.calls[i+1].query != c.query || !c.end.Add(c.step).Equal(rec.calls[i+1].start)
				switch {
				case n > 50:
					t.Errorf("request %s from %s asks for %d steps, more than 50", c.query, c.start, n)
				case maxSamples == 0 && first && !last && n != 50 && !endsDay(c.end, c.step):
					t.Errorf("request %s from %s asks for %d steps without a sample bound, want 50 or up to the day's end", c.query, c.start, n)
				case c.start.UTC().Truncate(24*time.Hour) != c.end.UTC().Truncate(24*time.Hour):
					t.Errorf("request %s from %s to %s spans two UTC days", c.query, c.start, c.end)
				case maxSamples > 0 && i == 0 && n > engine.ProbeSteps:
					t.Errorf("first request asks for %d steps, want a probe of at most %d", n, engine.ProbeSteps)
				case maxSamples > 0 && i > 0 && n > 1 && rec.series[i-1]*n > maxSamples:
					t.Errorf("request %s from %s asks for %d steps after an answer of %d series: over %d samples",
						c.query, c.start, n, rec.series[i-1], maxSamples)
				}
				if maxSamples > 0 && !first && !last && n < 50 && !endsDay(c.end, c.step) {
					finer++
				}
			}
			for q, n := range points {
				if want := fleetPoints(q); n != want {
					t.Errorf("%s: %d points in all, want %d", q, n, want)
				}
			}
			if maxSamples > 0 && finer == 0 {
				t.Errorf("no request was shortened by the bound of %d samples", maxSamples)
			}
			lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, fmt.Sprintf("report: %d/%d queries", len(rec.calls), len(rec.calls))) {
				t.Errorf("last progress line %q, want %d/%d queries", last, len(rec.calls), len(rec.calls))
			}
		})
	}
}

// endsDay reports whether a request ending at end is cut at the end of its
// UTC day: its next step lies in the next day.
func endsDay(end time.Time, step time.Duration) bool {
	return end.Add(step).UTC().Truncate(24*time.Hour) != end.UTC().Truncate(24*time.Hour)
}
