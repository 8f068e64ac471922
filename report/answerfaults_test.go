package report

import (
	"context"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/faultengine"
)

// The answers issue 30 found the report trusting, each served by a
// fault-injecting engine (report/internal/faultengine) in front of
// Prometheus' own PromQL engine holding restartedNode: the report refuses
// them, naming the series, the time and the value, in every format — or,
// where it can read them right, gives the ledger's figures.

// restartedNode is six hours of one node, (faultStart, faultStart+6h], and
// the hour before: GPU-0 held busy by ml/train at 1.50 EUR/h and GPU-1
// unallocated at 2.50 EUR/h, scraped every 30 s on the minute, whose exporter
// restarts at 2h30m10s: its counters, from 0 at −1h, reach their last scrape
// at 2h30m00s, and the new process counts from 0 again, 20 s at its first
// scrape (2h30m30s).
//
// Hand-computed, per GPU within the range: the old process from 0h (3,600 s)
// to 2h30m00s, 9,000 s; the new one from 2h30m10s to 6h, 12,590 s; the 10 s
// between the last scrape and the restart are lost to every reader. So
// 21,590 device-seconds each, 21,590 × 1.5 / 3,600 = 8.9958333 EUR for GPU-0
// and 21,590 × 2.5 / 3,600 = 14.9930556 EUR for GPU-1: 23.9888889 EUR in all.
func restartedNode(t *testing.T) *engine.Store {
	t.Helper()
	b := engine.NewStoreBuilder()
	restart := faultStart.Add(2*time.Hour + 30*time.Minute + 10*time.Second)
	gpus := []struct {
		labels []string
		rate   float64 // EUR per hour
	}{
		{[]string{"UUID", "GPU-0", "gpu", "0", "namespace", "ml", "pod", "train", "container", "main", "state", "busy"}, 1.5},
		{[]string{"UUID", "GPU-1", "gpu", "1", "namespace", "", "pod", "", "container", "", "state", "unallocated"}, 2.5},
	}
	for ts := faultStart.Add(-time.Hour); !ts.After(faultStart.Add(6 * time.Hour)); ts = ts.Add(30 * time.Second) {
		from := faultStart.Add(-time.Hour)
		if ts.After(restart) {
			from = restart
		}
		secs := ts.Sub(from).Seconds()
		for _, g := range gpus {
			base := append([]string{"Hostname", "node-a", "modelName", "NVIDIA H100 80GB HBM3"}, g.labels...)
			for name, v := range map[string]float64{"gputally_gpu_seconds_total": secs, "gputally_cost_eur_total": secs * g.rate / 3600} {
				if err := b.Append(labels.FromStrings(append([]string{"__name__", name}, base...)...), ts.UnixMilli(), v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return b.Store()
}

// faultStart is the start of restartedNode's range; it ends at testEnd.
var faultStart = testEnd.Add(-6 * time.Hour)

// restartedEUR is restartedNode's EUR in the range (hand-computed above).
const restartedEUR = 21590 * (1.5 + 2.5) / 3600

// faultyEngine serves restartedNode with faults.
func faultyEngine(t *testing.T, faults ...faultengine.Fault) *faultengine.Server {
	t.Helper()
	srv := faultengine.New(engine.NewEmbeddedQuerier(restartedNode(t), time.Minute, discard()), faults...)
	t.Cleanup(srv.Close)
	return srv
}

// faultConfig is a 6-hour report on url in format, written to a new file.
func faultConfig(t *testing.T, url, format string) Config {
	cfg := httpConfig(t, url, format)
	cfg.Range = 6 * time.Hour
	return cfg
}

// TestUnfaultedEngineGivesTheLedger: without a fault the report gives the
// hand-computed EUR of restartedNode, complete, with no note: the ground
// the faults below stand on.
func TestUnfaultedEngineGivesTheLedger(t *testing.T) {
	cfg := faultConfig(t, faultyEngine(t).URL, FormatJSON)
	if err := Run(context.Background(), cfg, discard()); err != nil {
		t.Fatal(err)
	}
	r := readReportJSON(t, cfg.Out)
	if !near(r.Fleet.Totals.CostEUR, restartedEUR) || !near(r.Fleet.Totals.GPUHours, 2*21590/3600.0) || r.Partial || len(r.Warnings) > 0 {
		t.Errorf("%.7f EUR, %.6f device-hours, partial %v, warnings %q; want %.7f EUR, %.6f, complete, none",
			r.Fleet.Totals.CostEUR, r.Fleet.Totals.GPUHours, r.Partial, r.Warnings, restartedEUR, 2*21590/3600.0)
	}
}

// TestBadCounterValuesRefusedInEveryFormat: a NaN, a negative value or +Inf
// where the engine had GPU-0's EUR counter at 3h is refused in every format,
// the error naming the series, the time and the value (and, for +Inf, never a
// Go encoding error), and no file is written. Before: NaN read as a gap
// (−4.2 % EUR, exit 0), −5 subtracted (3.24×), +Inf a JSON encoding error or
// "+Inf EUR".
func TestBadCounterValuesRefusedInEveryFormat(t *testing.T) {
	at := faultStart.Add(3 * time.Hour)
	for _, tc := range []struct {
		name  string
		value float64
		want  string
	}{
		{"NaN", math.NaN(), "the engine answered NaN for gputally_cost_eur_total{"},
		{"negative", -5, "the engine answered -5 for gputally_cost_eur_total{"},
		{"+Inf", math.Inf(1), "the engine answered +Inf for {"},
	} {
		srv := faultyEngine(t, faultengine.Fault{Match: "last_over_time(gputally_cost_eur_total[1h])", Answer: faultengine.SetAt("UUID", "GPU-0", at, tc.value)})
		for _, format := range []string{FormatJSON, FormatMarkdown, FormatHTML, FormatCSV} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				cfg := faultConfig(t, srv.URL, format)
				err := Run(context.Background(), cfg, discard())
				for _, want := range []string{tc.want, `UUID="GPU-0"`, "at 2026-01-11T21:00:00Z"} {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("error %v, want one naming %q", err, want)
					}
				}
				if err != nil && strings.Contains(err.Error(), "json: unsupported value") {
					t.Errorf("a Go encoding error: %v", err)
				}
				if _, statErr := os.Stat(cfg.Out); !os.IsNotExist(statErr) {
					t.Errorf("a refused answer left %s behind (stat: %v)", cfg.Out, statErr)
				}
			})
		}
	}
}

// TestUnsortedSamplesSorted: the sample-by-sample reading of the bucket with
// the restart (2h–3h) gets every series with the two samples around the
// reset swapped; the report sorts them and gives the ledger's EUR. Read in
// answer order, the old counter's last value (9,000 s + the hour before)
// would count again after the reset: 1.36× and more before.
func TestUnsortedSamplesSorted(t *testing.T) {
	srv := faultyEngine(t, faultengine.Fault{Match: "[5s]", Answer: faultengine.SwapAtDrop})
	cfg := faultConfig(t, srv.URL, FormatJSON)
	if err := Run(context.Background(), cfg, discard()); err != nil {
		t.Fatal(err)
	}
	if r := readReportJSON(t, cfg.Out); !near(r.Fleet.Totals.CostEUR, restartedEUR) {
		t.Errorf("%.7f EUR from shuffled samples, want the ledger's %.7f", r.Fleet.Totals.CostEUR, restartedEUR)
	}
	if !strings.Contains(strings.Join(srv.Queries(), "\n"), "[5s]") {
		t.Error("no sample-by-sample reading: the fault was not tried")
	}
}

// TestCopiesRefused: copies of the ledger's series inside an answer are an
// error naming them, never a figure (before: 2.000× EUR, 768 of 384
// device-hours shown as 100 % coverage). Copies that carry a label the query
// aggregates away (replica) are an answer no engine gives; copies the user
// asked to count (no dedupe labels, two scrape jobs) make GPU-0 count
// 2 × 3,600 = 7,200 device-seconds in the hour ending 19:00, more than the
// hour's 3,600 and the 300 s of scrape timing.
func TestCopiesRefused(t *testing.T) {
	t.Run("a label the query aggregates away", func(t *testing.T) {
		srv := faultyEngine(t, faultengine.Fault{Match: "gputally_gpu_seconds_total[", Answer: faultengine.CopyWith("replica", "b")})
		err := Run(context.Background(), faultConfig(t, srv.URL, FormatJSON), discard())
		for _, want := range []string{"aggregates replica away", `replica="b"`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one saying %q", err, want)
			}
		}
	})
	t.Run("device-hours beyond the range", func(t *testing.T) {
		srv := faultyEngine(t, faultengine.Fault{Match: "gputally_", Answer: faultengine.CopyWith("job", "b")})
		cfg := faultConfig(t, srv.URL, FormatJSON)
		cfg.DedupeLabels = nil
		err := Run(context.Background(), cfg, discard())
		for _, want := range []string{"GPU GPU-0 on node node-a: 7200 device-seconds in the step bucket ending 2026-01-11T19:00:00Z, more than the bucket's 3600 (and 300 of scrape timing)",
			`job="b"`, "differ only in job"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one saying %q", err, want)
			}
		}
	})
	t.Run("one series twice", func(t *testing.T) {
		twice := func(m model.Matrix) model.Matrix { return append(m, m...) }
		srv := faultyEngine(t, faultengine.Fault{Match: "gputally_gpu_seconds_total[", Answer: twice})
		err := Run(context.Background(), faultConfig(t, srv.URL, FormatJSON), discard())
		if err == nil || !strings.Contains(err.Error(), "the answer holds the series {") || !strings.Contains(err.Error(), "twice") {
			t.Errorf("error %v, want one naming the series twice", err)
		}
	})
}

// TestWindowProbeFailureNamed: when only the window probe fails — a 400 from
// an engine without subqueries, a proxy's HTML page — the report reads the
// windows as (t−w, t] and gives the ledger's EUR, complete, with a note naming
// the failure as what it is (before: "the engine answered 1 requests with
// data missing", a partial report).
func TestWindowProbeFailureNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(http.ResponseWriter, *http.Request, []byte)
		want  string
	}{
		{"400", faultengine.Status(http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"subqueries are not supported"}`),
			"rejected count_over_time(vector(1)[2s:1s]): HTTP 400, bad_data: subqueries are not supported"},
		{"HTML page", faultengine.Status(http.StatusOK, faultengine.HTMLPage("Sign in")),
			`answered count_over_time(vector(1)[2s:1s]) with an HTML page ("Sign in"), not the Prometheus API's JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := faultyEngine(t, faultengine.Fault{Match: "vector(1)", Write: tc.write})
			cfg := faultConfig(t, srv.URL, FormatJSON)
			if err := Run(context.Background(), cfg, discard()); err != nil {
				t.Fatal(err)
			}
			r := readReportJSON(t, cfg.Out)
			words := strings.Join(r.Warnings, "\n")
			if !near(r.Fleet.Totals.CostEUR, restartedEUR) || r.Partial || !strings.Contains(words, "the window probe") || !strings.Contains(words, tc.want) ||
				strings.Contains(words, "data missing") {
				t.Errorf("%.7f EUR, partial %v, words %q; want %.7f, complete, a note saying %q", r.Fleet.Totals.CostEUR, r.Partial, words, restartedEUR, tc.want)
			}
		})
	}
}

// TestTotalTimeoutBoundsATrickle: an engine that trickles its answers (a byte
// every 50 ms) under a --query.timeout of a minute is cut off by
// --query.total-timeout (300 ms here), and the error names it; nothing is
// written.
func TestTotalTimeoutBoundsATrickle(t *testing.T) {
	srv := faultyEngine(t, faultengine.Fault{Write: faultengine.Trickle(50 * time.Millisecond)})
	cfg := faultConfig(t, srv.URL, FormatJSON)
	cfg.Timeout, cfg.TotalTimeout = time.Minute, 300*time.Millisecond
	err := Run(context.Background(), cfg, discard())
	if err == nil || !strings.Contains(err.Error(), "--query.total-timeout=300ms") {
		t.Errorf("error %v, want one naming --query.total-timeout", err)
	}
	if _, statErr := os.Stat(cfg.Out); !os.IsNotExist(statErr) {
		t.Errorf("a run cut off left %s behind (stat: %v)", cfg.Out, statErr)
	}
}
