package report

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoTotalsMatchLedger runs the report through the embedded engine over
// OpenMetrics history and checks its totals against what the exporters' ledger
// counted, within 1 %.
func TestDemoTotalsMatchLedger(t *testing.T) {
	const gpus, ticks = 12, 24 * 120 // one day at 30 s
	interval := 30 * time.Second
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	fams, want := synthFleet(gpus, interval, ticks)
	var om bytes.Buffer
	if err := writeOpenMetrics(&om, fams, start, interval, ticks); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Format = FormatJSON
	cfg.Out = filepath.Join(t.TempDir(), "demo.json")
	st, err := LoadOpenMetrics(&om)
	if err != nil {
		t.Fatal(err)
	}
	if err := RunDemoStore(context.Background(), cfg, st, discard()); err != nil {
		t.Fatal(err)
	}
	r := readReportJSON(t, cfg.Out)
	if r.End.Sub(r.Start) != 24*time.Hour || r.Partial {
		t.Errorf("range %s – %s partial %v, want the day of history, complete", r.Start, r.End, r.Partial)
	}
	f := r.Fleet.Totals
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"device-hours", f.GPUHours, want.seconds / 3600},
		{"cost EUR", f.CostEUR, want.eur},
		{"idle EUR", f.IdleEUR, want.idleEUR},
		{"unallocated EUR", f.UnallocatedEUR, want.unallocatedEUR},
	} {
		if math.Abs(c.got-c.want) > 0.01*c.want {
			t.Errorf("%s = %.3f, ledger counted %.3f (more than 1 %% apart)", c.name, c.got, c.want)
		}
	}
	if r.GPUs != gpus || len(r.Namespaces) != 7 {
		t.Errorf("%d GPUs, %d namespaces, want %d and 7", r.GPUs, len(r.Namespaces), gpus)
	}
	if u := r.Fleet.Usage; !u.HasActivity || u.P95Activity != 0.7 || u.PeakFBMiB != 20000+100*11 {
		t.Errorf("fleet usage %+v, want p95 activity 0.7 and peak 21100 MiB", u)
	}
}

func TestLoadOpenMetricsErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no timestamp", "# TYPE a gauge\na 1\n# EOF\n", "has no timestamp"},
		{"out of order", "# TYPE a gauge\na 1 20\na 2 10\n# EOF\n", "is not after"},
		{"garbage", "# TYPE a gauge\na{ 1 10\n# EOF\n", "parse openmetrics"},
	} {
		if _, err := LoadOpenMetrics(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	st, err := LoadOpenMetrics(strings.NewReader("# EOF\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := st.TimeRange(); ok {
		t.Error("empty history has a time range")
	}
	cfg := DefaultConfig()
	cfg.Out = filepath.Join(t.TempDir(), "x.html")
	if err := RunDemoStore(context.Background(), cfg, st, discard()); err == nil || !strings.Contains(err.Error(), "no GPU data") {
		t.Errorf("demo on empty history: error %v, want no GPU data", err)
	}
}

func FuzzLoadOpenMetrics(f *testing.F) {
	f.Add("# TYPE a gauge\na{x=\"1\"} 1 10\na{x=\"1\"} 2 20\n# EOF\n")
	f.Add("# TYPE c counter\nc_total 1 1.5\n# EOF\n")
	f.Add("a 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := LoadOpenMetrics(strings.NewReader(in))
		if err != nil {
			return
		}
		first, last, ok := st.TimeRange()
		if ok && first.After(last) {
			t.Errorf("time range %s after %s", first, last)
		}
		// Whatever loaded must be queryable.
		q := NewEngineQuerier(st, time.Second, discard())
		if ok {
			if _, _, err := q.QueryRange(context.Background(), `count({__name__=~".+"})`, first, last.Add(time.Second), time.Second); err != nil {
				t.Errorf("query loaded history: %v", err)
			}
		}
	})
}
