package history

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// recordingSink keeps the time and sample count of every scrape it is handed.
type recordingSink struct {
	times   []time.Time
	samples int
	nan     int
	fail    error
}

func (s *recordingSink) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	s.times = append(s.times, t)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if math.IsNaN(value(mf.GetType(), m)) {
				s.nan++
			}
			s.samples++
		}
	}
	return s.fail
}

// TestRunHandsScrapesToSink: every scrape reaches the sink in time order, at
// the scrape interval, without NaN samples, and the result counts what the
// sink got; progress is told each whole virtual hour and once at the end.
func TestRunHandsScrapesToSink(t *testing.T) {
	var sink recordingSink
	var progress []time.Duration
	res, err := Run(context.Background(), Options{Start: start, Duration: 3 * time.Hour,
		ScrapeInterval: time.Minute, Progress: func(done, total time.Duration) {
			if total != 3*time.Hour {
				t.Errorf("progress total %s, want 3h", total)
			}
			progress = append(progress, done)
		}}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.times) != 3*60+1 {
		t.Fatalf("sink got %d scrapes, want 181 (every minute, both ends)", len(sink.times))
	}
	for i, at := range sink.times {
		if want := start.Add(time.Duration(i) * time.Minute); !at.Equal(want) {
			t.Fatalf("scrape %d at %s, want %s", i, at, want)
		}
	}
	if sink.nan != 0 || sink.samples != res.Samples || res.Samples == 0 {
		t.Errorf("sink got %d samples (%d NaN), result says %d", sink.samples, sink.nan, res.Samples)
	}
	if want := []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
}

// TestRunReturnsSinkError: a sink's failure fails the run.
func TestRunReturnsSinkError(t *testing.T) {
	boom := errors.New("disk full")
	if _, err := Run(context.Background(), Options{Start: start, Duration: 10 * time.Minute}, &recordingSink{fail: boom}); !errors.Is(err, boom) {
		t.Errorf("Run returned %v, want the sink's error", err)
	}
}

// TestDropNaN: NaN samples leave their family, the others stay in order.
func TestDropNaN(t *testing.T) {
	g := func(v float64) *dto.Metric { return &dto.Metric{Gauge: &dto.Gauge{Value: &v}} }
	nan := g(math.NaN())
	a, b := g(1), g(2)
	typ := dto.MetricType_GAUGE
	mfs := []*dto.MetricFamily{{Type: &typ, Metric: []*dto.Metric{a, nan, b}}, {Type: &typ, Metric: []*dto.Metric{nan}}}
	if n := dropNaN(mfs); n != 2 {
		t.Errorf("dropNaN left %d samples, want 2", n)
	}
	if !reflect.DeepEqual(mfs[0].Metric, []*dto.Metric{a, b}) || len(mfs[1].Metric) != 0 {
		t.Errorf("families after dropNaN: %v, %v", mfs[0].Metric, mfs[1].Metric)
	}
}
