package dcgmexporter

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// TestMeasureIntervalsMedian: a scrape interval is the step over the median
// of the per-bucket sample counts — the middle of the counts sorted, not of
// the buckets in time order. One GPU scraped every 30 s (7 s past each half
// minute, off the buckets' edges) for five hours, but only every minute in
// the third (its exporter missed every other scrape). By hand, per 1 h
// bucket: 120, 120, 60, 120, 120 samples; sorted 60, 120, 120, 120, 120, the
// median 120: 3,600 s / 120 = 30 s. The middle bucket in time order, 60,
// would make it 60 s — and the grid, and every lookback, twice too long.
func TestMeasureIntervalsMedian(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	r := model.Range{Start: start, End: start.Add(5 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute}
	ls := labels.FromMap(gpuLabels("n1", "Hostname", "0", "GPU-0", "NVIDIA H100 80GB HBM3", "__name__", "DCGM_FI_DEV_FB_USED"))
	b := engine.NewStoreBuilder()
	for ts := start.Add(7 * time.Second); ts.Before(r.End); ts = ts.Add(30 * time.Second) {
		if hour := int(ts.Sub(start) / time.Hour); hour == 2 && ts.Sub(start)%time.Minute >= 30*time.Second {
			continue // the third hour: every other scrape missed
		}
		if err := b.Append(ls, ts.UnixMilli(), 1000); err != nil {
			t.Fatal(err)
		}
	}
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
	s := New(q, Options{})
	got, err := s.measureIntervals(context.Background(), engine.NewRunner(q, engine.Limits{MaxPoints: 1000}, nil), r, source.Identity{}, []string{"DCGM_FI_DEV_FB_USED"}, "UUID, GPU_I_ID")
	if err != nil {
		t.Fatal(err)
	}
	if want := (intervals{"": {30 * time.Second, 30 * time.Second}}); !reflect.DeepEqual(got, want) {
		t.Errorf("intervals %v, want %v", got, want)
	}
}
