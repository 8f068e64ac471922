//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDuplicateSeriesCountedOnce: the same day delivered twice — a copy of
// every series with prometheus_replica="b", as an HA Prometheus pair without
// deduplication delivers it — into a real Prometheus (two backfills) and a
// real VictoriaMetrics (two imports, the second with extra_label): the report
// gives the ledger's EUR once, and says which label it collapsed; with
// deduplication turned off the copies make each device count twice the
// seconds its buckets hold, and the report fails (exit 1) naming them, where
// it gave twice the EUR before.
func TestDuplicateSeriesCountedOnce(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	victoria := promLookPath(t, "victoria-metrics")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	om, summary := filepath.Join(dir, "history.om"), filepath.Join(dir, "summary.json")
	runTool(t, gputally, "simulate", "history", "--scenario="+shortJobsScenario, "--duration=12h", "--scrape-interval=30s",
		"--start="+start.Format(time.RFC3339), "--out="+om, "--summary="+summary)
	var sum reportSummary
	readJSON(t, summary, &sum)
	ledger := sum.totalEUR()
	replica := filepath.Join(dir, "replica-b.om")
	withLabel(t, om, replica, `prometheus_replica="b"`)

	prom := promBackfilledFiles(t, promtool, prometheus, dir, om, replica)
	vm := vmStarted(t, victoria, dir)
	vmImport(t, vm, om)
	vmImport(t, vm, om, "prometheus_replica=b")

	for _, engine := range []struct{ name, base string }{{"prometheus", prom}, {"victoria-metrics", vm}} {
		t.Run(engine.name, func(t *testing.T) {
			report := func(name string, extra ...string) faultsReport {
				out := filepath.Join(dir, engine.name+"-"+name+".json")
				runTool(t, gputally, append([]string{"report", "--prometheus.url=" + engine.base, "--range=12h",
					"--end=" + start.Add(12*time.Hour).Format(time.RFC3339), "--allow-partial", "--format=json", "--out=" + out}, extra...)...)
				var r faultsReport
				readJSON(t, out, &r)
				return r
			}
			r := report("dedupe")
			if got := r.Fleet.Totals.CostEUR; math.Abs(got-ledger) > 1e-3*ledger {
				t.Errorf("%.4f EUR from the doubled day, the ledger counted %.4f", got, ledger)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), `prometheus_replica "", "b"`) {
				t.Errorf("warnings %q do not name the collapsed label", r.Warnings)
			}
			cmd := exec.Command(gputally, "report", "--prometheus.url="+engine.base, "--range=12h", "--end="+start.Add(12*time.Hour).Format(time.RFC3339),
				"--allow-partial", "--format=json", "--out="+filepath.Join(dir, engine.name+"-none.json"), "--report.dedupe-labels=")
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "device-seconds in the step bucket ending") ||
				!strings.Contains(string(out), "differ only in prometheus_replica") {
				t.Errorf("without deduplication: exit %d\n%s\nwant 1 and an error naming the copies", code, out)
			}
		})
	}
}

// withLabel writes the OpenMetrics file in to out with label (name="value")
// added to every sample line, after replacing in each the pairs of old, new
// strings of replace.
func withLabel(t *testing.T, in, out, label string, replace ...string) {
	t.Helper()
	src, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(dst, 1<<20)
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	rep := strings.NewReplacer(replace...)
	for sc.Scan() {
		line := sc.Text()
		if line != "" && line[0] != '#' {
			line = rep.Replace(line)
		}
		switch i := strings.IndexAny(line, "{ "); {
		case line == "" || line[0] == '#':
			fmt.Fprintln(w, line)
		case line[i] == '{':
			fmt.Fprintf(w, "%s{%s,%s\n", line[:i], label, line[i+1:])
		default:
			fmt.Fprintf(w, "%s{%s}%s\n", line[:i], label, line[i:])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
