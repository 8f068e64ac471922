package report

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/prometheus/prometheus/model/labels"
)

// TestNoPreviousPeriodFromOneSample: history whose first scrape falls on the
// range's start leaves the previous period only that sample's seconds; the
// report has no previous period then, and this period's totals are whole.
// The history is one holding, busy from 30 s before the range's start to an
// hour after its end, scraped every 30 s on the minute from the range's start
// (as source's exact-increase tests play it): the ledger counts the 24 h of
// the range.
func TestNoPreviousPeriodFromOneSample(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	b := NewStoreBuilder()
	from := start.Add(-30 * time.Second)
	base := []string{"UUID", "GPU-p", "gpu", "0", "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
		"namespace", "ml", "pod", "p", "container", "main", "state", "busy"}
	const eurPerSecond = 2.7 / 3600
	for ts := start; ts.Before(end.Add(time.Hour)); ts = ts.Add(30 * time.Second) {
		secs := ts.Sub(from).Seconds()
		for _, m := range []struct {
			name string
			v    float64
		}{{"gputally_gpu_seconds_total", secs}, {"gputally_cost_eur_total", secs * eurPerSecond}} {
			if err := b.Append(labels.FromStrings(append([]string{"__name__", m.name}, base...)...), ts.UnixMilli(), m.v); err != nil {
				t.Fatal(err)
			}
		}
	}
	truth := end.Sub(start).Seconds()
	cfg := DefaultConfig()
	cfg.Range, cfg.End = 24*time.Hour, end
	r, err := generateFrom(context.Background(), cfg, engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard()), discard())
	if err != nil {
		t.Fatal(err)
	}
	if r.Fleet.Previous != nil {
		t.Errorf("previous period %+v from one sample at the start", r.Fleet.Previous)
	}
	if got := r.Fleet.Totals.GPUHours * 3600; math.Abs(got-truth) > 1e-6 {
		t.Errorf("%.3f device-seconds, the ledger counted %.3f", got, truth)
	}
}
