//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// exactFixture writes six hours of ledger counters as an exporter following
// the contract would have them scraped every 30 s (series from 0, ended series
// kept 5 minutes, an exporter restart) to an OpenMetrics file, and returns the
// device-seconds the ledger counted per namespace. EUR are seconds × rate.
func exactFixture(t *testing.T, path string, start time.Time) map[string]float64 {
	t.Helper()
	const scrape, retention = 30 * time.Second, 5 * time.Minute
	end := start.Add(6 * time.Hour)
	type run struct {
		ns, pod  string
		from, to time.Time
	}
	var runs []run
	for i := 0; i < 36; i++ {
		s := start.Add(time.Duration(i)*10*time.Minute + 7*time.Second)
		runs = append(runs,
			run{"ci-2m", fmt.Sprintf("build-%d", i), s, s.Add(2 * time.Minute)},
			run{"ci-90s", fmt.Sprintf("lint-%d", i), s.Add(time.Minute), s.Add(time.Minute + 90*time.Second)})
	}
	runs = append(runs,
		run{"short", "blip", start.Add(2*time.Hour + 40*time.Minute + 3*time.Second), start.Add(2*time.Hour + 40*time.Minute + 23*time.Second)},
		run{"long", "trainer", start.Add(-2 * time.Hour), end.Add(time.Hour)})
	// The exporter restarts between jobs: down from 3h15m12s to 3h16m.
	procs := [][2]time.Time{{start.Add(-3 * time.Hour), start.Add(3*time.Hour + 15*time.Minute + 12*time.Second)}, {start.Add(3*time.Hour + 16*time.Minute), end.Add(time.Hour)}}
	truth := map[string]float64{}
	type sample struct {
		ts   time.Time
		secs float64
	}
	series := map[string][]sample{} // by pod
	for _, r := range runs {
		for _, p := range procs {
			from, to := maxTime(r.from, p[0]), minTime(r.to, p[1])
			if !from.Before(to) {
				continue
			}
			truth[r.ns] += minTime(to, end).Sub(maxTime(from, start)).Seconds()
			for ts := from.Truncate(scrape).Add(scrape); ts.Before(minTime(to.Add(retention), p[1])) && !ts.After(end); ts = ts.Add(scrape) {
				series[r.ns+"/"+r.pod] = append(series[r.ns+"/"+r.pod], sample{ts, minTime(ts, to).Sub(from).Seconds()})
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, m := range []struct {
		family string
		scale  float64
	}{{"gputally_gpu_seconds", 1}, {"gputally_cost_eur", exactRate / 3600}} {
		fmt.Fprintf(w, "# TYPE %s counter\n", m.family)
		for _, k := range keys {
			ns, pod, _ := strings.Cut(k, "/")
			for _, s := range series[k] {
				fmt.Fprintf(w, "%s_total{UUID=\"GPU-%s\",gpu=\"0\",Hostname=\"node-0\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=%q,pod=%q,container=\"main\",state=\"busy\"} %g %d\n",
					m.family, pod, ns, pod, s.secs*m.scale, s.ts.Unix())
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return truth
}

const exactRate = 2.7 // EUR per hour

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestExactLedgerReadingOnPrometheusAndVictoriaMetrics backfills 2-minute,
// 90 s and 20 s jobs and an exporter restart into a real Prometheus 2 (promtool)
// and imports them into a real VictoriaMetrics, and checks that the report's
// EUR per namespace are the ledger's on both: exact for the jobs, within one
// scrape interval for the holding through the restart (what it accrued after
// the last scrape before the restart is lost to every reader).
func TestExactLedgerReadingOnPrometheusAndVictoriaMetrics(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	victoria := promLookPath(t, "victoria-metrics")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	om := filepath.Join(dir, "ledger.om")
	truth := exactFixture(t, om, start)

	prom := promBackfilled(t, promtool, prometheus, om, dir)
	vm := vmStarted(t, victoria, dir)
	vmImport(t, vm, om)

	for _, engine := range []struct{ name, base string }{{"prometheus", prom}, {"victoria-metrics", vm}} {
		t.Run(engine.name, func(t *testing.T) {
			out := filepath.Join(dir, engine.name+".json")
			runTool(t, gputally, "report", "--prometheus.url="+engine.base, "--range=6h", "--step=1h",
				"--end="+start.Add(6*time.Hour).Format(time.RFC3339), "--allow-partial", "--format=json", "--out="+out)
			var r faultsReport
			readJSON(t, out, &r)
			got := map[string]float64{}
			for _, ns := range r.Namespaces {
				got[ns.Name] = ns.Totals.CostEUR
			}
			for ns, secs := range truth {
				want := secs * exactRate / 3600
				tol := 1e-6 * want
				if ns == "long" {
					tol = 30 * exactRate / 3600
				}
				if math.Abs(got[ns]-want) > tol {
					t.Errorf("%s: %.6f EUR, the ledger counted %.6f", ns, got[ns], want)
				}
			}
			blip := false
			for _, h := range r.Holdings {
				blip = blip || h.Pod == "blip" && h.Totals.CostEUR > 0
			}
			if !blip {
				t.Error("the 20 s job is not among the holdings")
			}
		})
	}
}
