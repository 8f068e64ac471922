package ledger

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/model/sketch"
	"github.com/gputally/gputally/report/source"
)

func pair(sec int64, v float64) pmodel.SamplePair {
	return pmodel.SamplePair{Timestamp: pmodel.TimeFromUnix(sec), Value: pmodel.SampleValue(v)}
}

// TestCheckValueBounds: each bound of check.go at its edge. A century is
// 100 × 365.25 × 86,400 = 3,155,760,000 s; at the highest rate a book allows
// (1e9 / 87.6 + 1e5 + 1e6 = 12,515,525.114 EUR/h) it is 876,600 h ×
// 12,515,525.114 = 1.0971e13 EUR.
func TestCheckValueBounds(t *testing.T) {
	m := pmodel.Metric{"UUID": "GPU-0"}
	const century = 3_155_760_000.0
	const centuryEUR = 876_600 * (1e9/87.6 + 1e5 + 1e6)
	for _, tc := range []struct {
		name string
		err  error
		bad  bool
	}{
		{"seconds 0", checkCounter(secondsCounter, m, pair(0, 0)), false},
		{"seconds a century", checkCounter(secondsCounter, m, pair(0, century)), false},
		{"seconds past a century", checkCounter(secondsCounter, m, pair(0, century*(1+1e-12))), true},
		{"seconds slightly negative", checkCounter(secondsCounter, m, pair(0, -1e-9)), true},
		{"seconds NaN", checkCounter(secondsCounter, m, pair(0, math.NaN())), true},
		{"EUR a century at the highest rate", checkCounter(eurCounter, m, pair(0, centuryEUR*(1-1e-12))), false},
		{"EUR past it", checkCounter(eurCounter, m, pair(0, centuryEUR*(1+1e-12))), true},
		{"joules a century at 100 kW", checkCounter(energyCounter, m, pair(0, century*1e5*(1-1e-12))), false},
		{"joules past it", checkCounter(energyCounter, m, pair(0, century*1e5*(1+1e-12))), true},
		{"joules negative", checkCounter(energyCounter, m, pair(0, -1)), true},
		{"resets 0", checkCount(m, pair(0, 0)), false},
		{"resets negative", checkCount(m, pair(0, -1)), true},
		{"resets NaN", checkCount(m, pair(0, math.NaN())), true},
		{"activity 1.01", checkGauge(m, pair(0, 101), 1.01, true), false},
		{"activity past 1.01", checkGauge(m, pair(0, 101.00001), 1.0100001, true), true},
		{"activity negative", checkGauge(m, pair(0, -0.001), -0.001, true), true},
		{"activity NaN: no sample", checkGauge(m, pair(0, math.NaN()), math.NaN(), true), false},
		{"framebuffer 1 PiB", checkGauge(m, pair(0, 1<<30), 1<<30, false), false},
		{"framebuffer past 1 PiB", checkGauge(m, pair(0, 1<<30+1), 1<<30+1, false), true},
		{"framebuffer negative", checkGauge(m, pair(0, -1), -1, false), true},
		{"share 1", checkShare(m, pair(0, 1)), false},
		{"share past 1", checkShare(m, pair(0, 1.000001)), true},
		{"share 0", checkShare(m, pair(0, 0)), true},
	} {
		if (tc.err != nil) != tc.bad {
			t.Errorf("%s: error %v, want refused %v", tc.name, tc.err, tc.bad)
		}
		if tc.bad && tc.err != nil && !strings.Contains(tc.err.Error(), `{UUID="GPU-0"} at 1970-01-01T00:00:00Z`) {
			t.Errorf("%s: %v does not name the series and the time", tc.name, tc.err)
		}
	}
}

// TestConserved: a device's seconds in a bucket may exceed its length by the
// scrape timing, a third of the step and at most 5 minutes — 1h: 3,600 + 300
// = 3,900 s; 5m: 300 + 100 = 400 s — and no more.
func TestConserved(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	a := &counterSeries{metric: pmodel.Metric{"UUID": "GPU-0", "hostname": "node-a", "namespace": "ml", "pod": "p", "state": "busy", "job": "a"}}
	b := &counterSeries{metric: pmodel.Metric{"UUID": "GPU-0", "hostname": "node-a", "namespace": "ml", "pod": "p", "state": "busy", "job": "b"}}
	for _, tc := range []struct {
		step time.Duration
		sum  float64
		bad  bool
	}{
		{time.Hour, 3900, false},
		{time.Hour, 3900.001, true},
		{5 * time.Minute, 400, false},
		{5 * time.Minute, 400.001, true},
	} {
		incs := [][]float64{{0, tc.sum / 2}, {0, tc.sum / 2}}
		err := conserved(source.Identity{}, []*counterSeries{a, b}, incs, []float64{0, tc.sum}, start, tc.step)
		if (err != nil) != tc.bad {
			t.Errorf("step %s, %.3f s: error %v, want refused %v", tc.step, tc.sum, err, tc.bad)
		}
		want := "GPU GPU-0 on node node-a: " + trimFloat(tc.sum) + " device-seconds in the step bucket ending " + start.Add(2*tc.step).Format(time.RFC3339)
		if tc.bad && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "differ only in job")) {
			t.Errorf("step %s: %v, want %q and the copies", tc.step, err, want)
		}
	}
}

// TestCheckEUR: one series' EUR in a bucket of 1h may reach 1h05m at the
// highest rate, 65/60 × 12,515,525.114 = 13,558,485.54 EUR, and no more.
func TestCheckEUR(t *testing.T) {
	s := &counterSeries{metric: pmodel.Metric{"UUID": "GPU-0"}}
	limit := 65.0 / 60 * (1e9/87.6 + 1e5 + 1e6)
	end := time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC)
	if err := checkEUR(s, limit*(1-1e-12), end, time.Hour); err != nil { // 0.01 × 8,760 is not exactly 87.6 in floats
		t.Errorf("at the limit: %v", err)
	}
	err := checkEUR(s, limit*(1+1e-12), end, time.Hour)
	if err == nil || !strings.Contains(err.Error(), `gputally_cost_eur_total{UUID="GPU-0"}`) || !strings.Contains(err.Error(), "ending 2026-01-05T01:00:00Z") {
		t.Errorf("past the limit: %v", err)
	}
}

// TestCheckEnergy: one series' joules in a bucket of 1h may reach 1h05m at
// the highest facility power, 10 kW × PUE 10 = 100 kW: 3,900 s × 1e5 W =
// 3.9e8 J, and no more.
func TestCheckEnergy(t *testing.T) {
	s := &counterSeries{metric: pmodel.Metric{"UUID": "GPU-0"}}
	end := time.Date(2026, 1, 5, 1, 0, 0, 0, time.UTC)
	if err := checkEnergy(s, 3.9e8, end, time.Hour); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	err := checkEnergy(s, 3.9e8*(1+1e-12), end, time.Hour)
	if err == nil || !strings.Contains(err.Error(), `gputally_energy_joules_total{UUID="GPU-0"}`) || !strings.Contains(err.Error(), "ending 2026-01-05T01:00:00Z") {
		t.Errorf("past the limit: %v", err)
	}
}

// TestGaugeOutOfRangeLeftOut: DCGM's GPU utilization reads 4294967295 now and
// then (go-dcgm issue 75). GPU-0's, 50 % at every 30 s scrape but that one
// at 00:32:00, averages (9 × 50 + 4,294,967,295) / 10 = 429,496,774.5 % in
// the 5-minute step ending 00:35, read as the ratio 4,294,967.745: that
// step is no sample, the other 11 read 0.5, and a note names it; the report
// goes on.
func TestGaugeOutOfRangeLeftOut(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	b := engine.NewStoreBuilder()
	id := []string{"UUID", "GPU-0", "gpu", "0", "hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3", "namespace", "ml", "pod", "p", "container", "c"}
	for ts := start.Add(-time.Hour); !ts.After(start.Add(time.Hour)); ts = ts.Add(30 * time.Second) {
		appendLedger(t, b, append(id, "state", "busy"), ts, ts.Sub(start.Add(-time.Hour)).Seconds())
		v := 50.0
		if ts.Equal(start.Add(32 * time.Minute)) {
			v = 4294967295
		}
		if err := b.Append(labels.FromStrings(append([]string{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, id...)...), ts.UnixMilli(), v); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard()), Options{MaxPointsPerQuery: 1000}).Collect(context.Background(),
		model.Range{Start: start, End: start.Add(time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var act sketch.Sketch
	for _, a := range d.Activity {
		act.Merge(a)
	}
	want := `DCGM_FI_DEV_GPU_UTIL_RATIO (DCGM_FI_DEV_GPU_UTIL up to 4.8): 1 samples out of range left out, as no sample; the first: the engine answered 4.294967745e+06 for {UUID="GPU-0"`
	if act.Count() != 11 || act.Quantile(0) != 0.5 || act.Max() != 0.5 || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], want) ||
		!strings.Contains(d.Notes[0], "at 2026-01-05T00:35:00Z: an activity is a ratio between 0 and 1") {
		t.Errorf("activity %d values from %g to %g, notes %q; want 11 × 0.5 and a note saying %q", act.Count(), act.Quantile(0), act.Max(), d.Notes, want)
	}
}
