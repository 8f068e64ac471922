package dcgmexporter

import (
	"reflect"
	"testing"
	"time"

	"github.com/gputally/gputally/report/source"
)

// TestGridFor: a cluster's grid is its fastest job's scrape interval when
// that divides the resolution (5 min here), else the largest whole second
// below it that does; 30 s when nothing was measured; never below 1 s.
func TestGridFor(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{30 * time.Second, 30 * time.Second},
		{time.Minute, time.Minute},
		{15 * time.Second, 15 * time.Second},
		{45 * time.Second, 30 * time.Second},                      // 300 s ÷ 45 s is no whole number; 30 s is the largest divisor below
		{30*time.Second + 250*time.Millisecond, 30 * time.Second}, // a measured 30.25 s: the whole second below
		{7 * time.Minute, 5 * time.Minute},                        // no longer than the resolution
		{0, DefaultGrid},
		{500 * time.Millisecond, time.Second},
	} {
		if got := gridFor(tc.interval, 5*time.Minute); got != tc.want {
			t.Errorf("gridFor(%s) = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

// TestLookback: a point looks back the longer of the grid and the slowest
// job's interval, and a tenth of it more: 30 s → 33 s; a 30 s grid over a
// 1 min job → 66 s; a 1 min grid over a 30 s job → 66 s.
func TestLookback(t *testing.T) {
	for _, tc := range []struct{ grid, interval, want time.Duration }{
		{30 * time.Second, 30 * time.Second, 33 * time.Second},
		{30 * time.Second, time.Minute, 66 * time.Second},
		{time.Minute, 30 * time.Second, 66 * time.Second},
		{30 * time.Second, 0, 33 * time.Second},
	} {
		if got := lookback(tc.grid, tc.interval); got != tc.want {
			t.Errorf("lookback(%s, %s) = %s, want %s", tc.grid, tc.interval, got, tc.want)
		}
	}
}

// TestPlanGroupsClusters: clusters read alike share a plan; with several
// plans each selects its clusters — the first also those nothing was
// measured of (cluster!~ the others) — and a cluster name is matched as
// text, not as a pattern. Without a cluster label there is one plan over
// every series.
func TestPlanGroupsClusters(t *testing.T) {
	s := New(nil, Options{})
	id := source.NewIdentity("cluster")
	dcgm := intervals{"east": {30 * time.Second, 30 * time.Second}, "us.west": {30 * time.Second, time.Minute}, "north": {30 * time.Second, 30 * time.Second}}
	ksm := intervals{"east": {30 * time.Second, 30 * time.Second}, "north": {30 * time.Second, 30 * time.Second}}
	got := s.plan(dcgm, ksm, 5*time.Minute, id)
	want := []gridPlan{
		{grid: 30 * time.Second, dcgmWindow: 33 * time.Second, ksmWindow: 33 * time.Second, dcgmScrape: 30 * time.Second, ksmScrape: 30 * time.Second,
			dcgmFastest: 30 * time.Second, clusters: []string{"east", "north"}, selector: `cluster!~"us\\.west"`},
		// us.west: no kube-state-metrics measured, its lookback a minute's.
		{grid: 30 * time.Second, dcgmWindow: 66 * time.Second, ksmWindow: 66 * time.Second, dcgmScrape: time.Minute,
			dcgmFastest: 30 * time.Second, clusters: []string{"us.west"}, selector: `cluster=~"us\\.west"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plans\n%+v\nwant\n%+v", got, want)
	}
	one := s.plan(intervals{"": {time.Minute, time.Minute}}, nil, 5*time.Minute, source.Identity{})
	if len(one) != 1 || one[0].selector != "" || one[0].grid != time.Minute {
		t.Errorf("plans without a cluster label %+v, want one 1m0s plan over every series", one)
	}
	set := New(nil, Options{Grid: 15 * time.Second}).plan(dcgm, ksm, 5*time.Minute, id)
	if len(set) == 0 {
		t.Error("no plans with a grid set")
	}
	for _, p := range set {
		if p.grid != 15*time.Second {
			t.Errorf("plan %+v: grid %s, want the 15s set", p, p.grid)
		}
	}
}
