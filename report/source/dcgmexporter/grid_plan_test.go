package dcgmexporter

import (
	"reflect"
	"testing"
	"time"

	"github.com/gputally/gputally/report/source"
)

// TestPlanSeparatesKSMIntervals: clusters a and b have the same
// dcgm-exporter jobs (30 s) and differ only in how often kube-state-metrics
// is scraped there — every minute in a, every 15 s in b — so their pods'
// series are read with different lookbacks and they get a plan each. By
// hand, on the 30 s grid: a's kube-state-metrics lookback is the minute and
// a tenth, 66 s; b's the grid and a tenth, 33 s. One shared plan would read b
// with a's 66 s (or a with b's 33 s: its pods unknown between scrapes).
func TestPlanSeparatesKSMIntervals(t *testing.T) {
	s := New(nil, Options{})
	dcgm := intervals{"a": {30 * time.Second, 30 * time.Second}, "b": {30 * time.Second, 30 * time.Second}}
	ksm := intervals{"a": {time.Minute, time.Minute}, "b": {15 * time.Second, 15 * time.Second}}
	got := s.plan(dcgm, ksm, 5*time.Minute, source.NewIdentity("cluster"))
	want := []gridPlan{
		{grid: 30 * time.Second, dcgmWindow: 33 * time.Second, ksmWindow: 66 * time.Second, dcgmScrape: 30 * time.Second, ksmScrape: time.Minute,
			dcgmFastest: 30 * time.Second, clusters: []string{"a"}, selector: `cluster!~"b"`},
		{grid: 30 * time.Second, dcgmWindow: 33 * time.Second, ksmWindow: 33 * time.Second, dcgmScrape: 30 * time.Second, ksmScrape: 15 * time.Second,
			dcgmFastest: 30 * time.Second, clusters: []string{"b"}, selector: `cluster=~"b"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plans\n%+v\nwant\n%+v", got, want)
	}
}
