package report

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
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
	st, err := engine.LoadOpenMetrics(&om)
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

// TestDemoOnEmptyHistory: the demo over history without samples fails with
// no GPU data.
func TestDemoOnEmptyHistory(t *testing.T) {
	st, err := engine.LoadOpenMetrics(strings.NewReader("# EOF\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Out = filepath.Join(t.TempDir(), "x.html")
	if err := RunDemoStore(context.Background(), cfg, st, discard()); err == nil || !strings.Contains(err.Error(), "no GPU data") {
		t.Errorf("demo on empty history: error %v, want no GPU data", err)
	}
}
