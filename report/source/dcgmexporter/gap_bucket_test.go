package dcgmexporter

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestDCGMGapFromABucketsLastPoint: GPU-0 (an H100 at 300 W, no pod on it:
// 1.55 EUR/h by dcgmTestBook) has no sample at grid points 120–125 of two
// hours of 30 s points (240), 1 h buckets. Point 120 (at 1 h) is bucket 0's
// last: the gap's first point is charged to bucket 0, its other five to
// bucket 1 — not all six a bucket late. By hand:
//
//	bucket 0: unallocated 119 × 30 = 3,570 s, unknown 1 × 30 =  30 s
//	bucket 1: unallocated 115 × 30 = 3,450 s, unknown 5 × 30 = 150 s
//	unallocated 7,020 s × 1.55/3600 = 3.0225 EUR; unknown 180 s, 0.0775 EUR
//	the gap from 59 min 30 s (the end of point 119) to 62 min 30 s, 180 s
func TestDCGMGapFromABucketsLastPoint(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	outside := func(v float64) func(int) float64 {
		return func(j int) float64 {
			if j >= 120 && j <= 125 {
				return math.NaN()
			}
			return v
		}
	}
	g := gpuLabels("n1", "Hostname", "0", "GPU-0", "NVIDIA H100 80GB HBM3")
	h := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", g, outside(0)},
		{"DCGM_FI_DEV_POWER_USAGE", g, outside(300)},
		{"DCGM_FI_DEV_FB_USED", g, outside(0)},
		ksmSeries("kube_node_status_capacity", always(1), "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"),
	}}
	d := collectHistoryWith(t, h, 2*time.Hour, Options{})
	checkEntries(t, d, []want{
		{"GPU-0", "", "", "", model.StateUnallocated, 7020, 3.0225, model.Sampled},
		{"GPU-0", "", "", "", model.StateUnknown, 180, 0.0775, model.Sampled},
	})
	for b, want := range []struct{ unalloc, unknown float64 }{{3570, 30}, {3450, 150}} {
		if got := d.Timeline[b]; math.Abs(got[model.StateUnallocated]-want.unalloc) > 1e-6 || math.Abs(got[model.StateUnknown]-want.unknown) > 1e-6 {
			t.Errorf("bucket %d: %.3f s unallocated, %.3f s unknown; want %.0f, %.0f", b, got[model.StateUnallocated], got[model.StateUnknown], want.unalloc, want.unknown)
		}
	}
	wantFrom, wantTo := start.Add(59*time.Minute+30*time.Second), start.Add(62*time.Minute+30*time.Second)
	if len(d.Gaps) != 1 || !d.Gaps[0].From.Equal(wantFrom) || !d.Gaps[0].To.Equal(wantTo) || d.Gaps[0].Seconds != 180 {
		t.Errorf("gaps %+v, want one from %s to %s, 180 s", d.Gaps, wantFrom, wantTo)
	}
}
