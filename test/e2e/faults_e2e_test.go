//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/collector/sim"
)

// The scenarios these tests play (issue 11) live in the repository's
// testdata/scenarios.
var (
	shortJobsScenario = filepath.Join("..", "..", "testdata", "scenarios", "short-jobs.yaml")
	faultsScenario    = filepath.Join("..", "..", "testdata", "scenarios", "faults.yaml")
)

// needScenario skips the test when the scenario file is missing (it fails in CI).
func needScenario(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("scenario %s: %v", path, err)
		}
		t.Skipf("scenario %s: %v", path, err)
	}
}

// faultsReport is the part of the JSON report the fault tests read.
type faultsReport struct {
	Partial  bool     `json:"partial"`
	Warnings []string `json:"warnings"`
	Coverage struct {
		Ratio         float64 `json:"ratio"`
		ExpectedHours float64 `json:"expected_hours"`
		MissingHours  float64 `json:"missing_hours"`
		UnknownHours  float64 `json:"unknown_hours"`
		Nodes         []struct {
			Node         string  `json:"node"`
			UnknownHours float64 `json:"unknown_hours"`
		} `json:"nodes"`
	} `json:"coverage"`
	Fleet struct {
		Totals struct {
			GPUHours     float64 `json:"gpu_hours"`
			CostEUR      float64 `json:"cost_eur"`
			LostEUR      float64 `json:"lost_eur"`
			UnknownHours float64 `json:"unknown_hours"`
		} `json:"totals"`
	} `json:"fleet"`
	Namespaces []struct {
		Name   string `json:"name"`
		Totals struct {
			CostEUR float64 `json:"cost_eur"`
		} `json:"totals"`
	} `json:"namespaces"`
	Holdings []struct {
		Namespace string `json:"namespace"`
		Pod       string `json:"pod"`
		Totals    struct {
			CostEUR float64 `json:"cost_eur"`
		} `json:"totals"`
	} `json:"holdings"`
	BrokenGPUs []struct {
		Node    string  `json:"node"`
		UUID    string  `json:"uuid"`
		LostEUR float64 `json:"lost_eur"`
	} `json:"broken_gpus"`
	Recommendations []struct {
		Kind     string   `json:"kind"`
		Target   string   `json:"target"`
		Holdings []string `json:"holdings"`
	} `json:"recommendations"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TestShortJobsAgainstPrometheusAndVictoriaMetrics simulates a day of the
// short-jobs scenario at 30 s scrapes, backfills it into a real Prometheus
// (promtool) and imports it into a real VictoriaMetrics, runs the report
// against both and checks: per namespace EUR within 1 % of the ledger's own
// totals (simulate history --summary) on Prometheus; every pod that ran for
// less than one scrape interval still in the report, its EUR within 10 %; and
// VictoriaMetrics' report equal to Prometheus' within 0.1 %.
func TestShortJobsAgainstPrometheusAndVictoriaMetrics(t *testing.T) {
	needScenario(t, shortJobsScenario)
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	victoria := promLookPath(t, "victoria-metrics")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	const scrape = 30 * time.Second
	history, summaryPath := filepath.Join(dir, "history.om"), filepath.Join(dir, "summary.json")
	runTool(t, gputally, "simulate", "history", "--scenario", shortJobsScenario, "--duration", "24h",
		"--scrape-interval", scrape.String(), "--start", "2026-01-05T00:00:00Z", "--out", history, "--summary", summaryPath)
	var sum reportSummary
	readJSON(t, summaryPath, &sum)
	ledger := map[string]float64{} // EUR by namespace, and by namespace/pod
	podSeconds := map[string]float64{}
	var total float64
	for _, s := range sum.Series {
		total += s.EUR
		if s.Namespace == "" {
			continue
		}
		ledger[s.Namespace] += s.EUR
		ledger[s.Namespace+"/"+s.Pod] += s.EUR
		podSeconds[s.Namespace+"/"+s.Pod] += s.Seconds
	}

	report := func(t *testing.T, base, name string) faultsReport {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		// --allow-partial: the scenario may stop its exporter; coverage is
		// another test's subject, the EUR are this one's.
		runTool(t, gputally, "report", "--prometheus.url="+base, "--range=24h", "--end="+sum.End.Format(time.RFC3339),
			"--allow-partial", "--format=json", "--out="+out, "--query.timeout=10m")
		var r faultsReport
		readJSON(t, out, &r)
		return r
	}

	// Prometheus, backfilled with promtool.
	prom := promBackfilled(t, promtool, prometheus, history, dir)
	fromProm := report(t, prom, "prometheus")
	if len(fromProm.Namespaces) == 0 {
		t.Fatal("the report over Prometheus has no namespaces")
	}
	if !within1pct(fromProm.Fleet.Totals.CostEUR, total) {
		t.Errorf("Prometheus: fleet %.4f EUR, ledger %.4f EUR: more than 1 %% apart", fromProm.Fleet.Totals.CostEUR, total)
	}
	seen := map[string]bool{}
	for _, ns := range fromProm.Namespaces {
		seen[ns.Name] = true
		if !within1pct(ns.Totals.CostEUR, ledger[ns.Name]) {
			t.Errorf("Prometheus: namespace %s %.4f EUR, ledger %.4f EUR: more than 1 %% apart", ns.Name, ns.Totals.CostEUR, ledger[ns.Name])
		}
	}
	for ns := range ledger {
		if !strings.Contains(ns, "/") && !seen[ns] && ledger[ns] > 0 {
			t.Errorf("Prometheus: namespace %s (%.4f EUR in the ledger) missing from the report", ns, ledger[ns])
		}
	}
	// Pods shorter than one scrape interval.
	reported := map[string]float64{}
	for _, h := range fromProm.Holdings {
		reported[h.Namespace+"/"+h.Pod] += h.Totals.CostEUR
	}
	short := 0
	for pod, secs := range podSeconds {
		if secs <= 0 || secs >= scrape.Seconds() {
			continue
		}
		short++
		if got, want := reported[pod], ledger[pod]; math.Abs(got-want) > 0.1*want {
			t.Errorf("pod %s ran %.0f s (less than a scrape): report %.6f EUR, ledger %.6f EUR (more than 10 %% apart)", pod, secs, got, want)
		}
	}
	t.Logf("%d pods ran less than one scrape interval", short)

	// VictoriaMetrics, the same samples imported over HTTP.
	vm := vmStarted(t, victoria, dir)
	vmImport(t, vm, history)
	fromVM := report(t, vm, "victoria-metrics")
	close01 := func(a, b float64) bool { return math.Abs(a-b) <= 0.001*math.Max(math.Abs(a), math.Abs(b)) }
	if !close01(fromVM.Fleet.Totals.CostEUR, fromProm.Fleet.Totals.CostEUR) || !close01(fromVM.Fleet.Totals.GPUHours, fromProm.Fleet.Totals.GPUHours) {
		t.Errorf("VictoriaMetrics: fleet %.4f EUR %.4f h, Prometheus %.4f EUR %.4f h: more than 0.1 %% apart",
			fromVM.Fleet.Totals.CostEUR, fromVM.Fleet.Totals.GPUHours, fromProm.Fleet.Totals.CostEUR, fromProm.Fleet.Totals.GPUHours)
	}
	t.Logf("fleet: ledger %.6f EUR, Prometheus %.6f EUR, VictoriaMetrics %.6f EUR", total, fromProm.Fleet.Totals.CostEUR, fromVM.Fleet.Totals.CostEUR)
	vmNS := map[string]float64{}
	for _, ns := range fromVM.Namespaces {
		vmNS[ns.Name] = ns.Totals.CostEUR
	}
	for _, ns := range fromProm.Namespaces {
		if !close01(vmNS[ns.Name], ns.Totals.CostEUR) {
			t.Errorf("VictoriaMetrics: namespace %s %.4f EUR, Prometheus %.4f EUR: more than 0.1 %% apart", ns.Name, vmNS[ns.Name], ns.Totals.CostEUR)
		}
	}
}

// vmImport streams the OpenMetrics file at path into VictoriaMetrics'
// /api/v1/import/prometheus, which takes the Prometheus text format with
// millisecond timestamps (OpenMetrics carries seconds), then flushes it so it
// is searchable at once. extraLabels (name=value) are added to every series.
func vmImport(t *testing.T, base, path string, extraLabels ...string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(openMetricsToPromText(f, pw)) }()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	u := base + "/api/v1/import/prometheus"
	if len(extraLabels) > 0 {
		u += "?" + url.Values{"extra_label": extraLabels}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("import into victoria-metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("import into victoria-metrics: %s: %s", resp.Status, body)
	}
	if _, err := promGet(ctx, base, "/internal/force_flush"); err != nil {
		t.Fatalf("flush victoria-metrics: %v", err)
	}
}

// openMetricsToPromText copies the samples of r (OpenMetrics, every sample with
// a timestamp in seconds) to w with the timestamp in milliseconds, dropping
// comments and the # EOF line. Label values may hold spaces; the value and the
// timestamp are the last two fields.
func openMetricsToPromText(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return fmt.Errorf("openmetrics line without a timestamp: %q", line)
		}
		sec, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return fmt.Errorf("openmetrics timestamp in %q: %w", line, err)
		}
		fmt.Fprintf(bw, "%s %d\n", line[:i], int64(math.Round(sec*1000)))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return bw.Flush()
}

// TestFaultsDemo runs `gputally report --demo` on the faults scenario: the
// report shows the lost GPU as broken hardware with its EUR, the unknown hours
// and the coverage, is marked partial, and gives no drain advice for the node
// whose kubelet was down (the simulated node), while naming it.
func TestFaultsDemo(t *testing.T) {
	needScenario(t, faultsScenario)
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	var sc struct {
		Node struct {
			Hostname string `yaml:"hostname"`
		} `yaml:"node"`
	}
	b, err := os.ReadFile(faultsScenario)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: %v", faultsScenario, err)
	}
	out := filepath.Join(dir, "faults.json")
	runTool(t, gputally, "report", "--demo", "--demo.scenario="+faultsScenario, "--format=json", "--out="+out)
	var r faultsReport
	readJSON(t, out, &r)
	if !r.Partial {
		t.Error("report not marked partial")
	}
	if len(r.BrokenGPUs) == 0 || r.BrokenGPUs[0].LostEUR <= 0 || r.Fleet.Totals.LostEUR <= 0 {
		t.Errorf("broken GPUs %+v, lost EUR %.2f: want the lost GPU with its EUR", r.BrokenGPUs, r.Fleet.Totals.LostEUR)
	}
	if r.Fleet.Totals.UnknownHours <= 0 || r.Coverage.UnknownHours <= 0 {
		t.Errorf("unknown hours %.2f (coverage %.2f), want the kubelet's outage", r.Fleet.Totals.UnknownHours, r.Coverage.UnknownHours)
	}
	if r.Coverage.ExpectedHours <= 0 || r.Coverage.Ratio <= 0 || r.Coverage.Ratio > 1 {
		t.Errorf("coverage %+v", r.Coverage)
	}
	node := sc.Node.Hostname
	if node == "" {
		node = sim.DefaultHostname
	}
	for _, rec := range r.Recommendations {
		if rec.Kind == "drain" && rec.Target == node {
			t.Errorf("drain advice %q for the node whose kubelet was down", rec.Target)
		}
	}
	named := false
	for _, w := range r.Warnings {
		if strings.Contains(w, "no drain advice") && strings.Contains(w, node) {
			named = true
		}
	}
	if !named {
		t.Errorf("no warning names the node with unknown time: %q", r.Warnings)
	}
	// The Markdown says the same to a person.
	md := filepath.Join(dir, "faults.md")
	runTool(t, gputally, "report", "--demo", "--demo.scenario="+faultsScenario, "--format=md", "--out="+md)
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PARTIAL REPORT", "## Coverage", "## Broken hardware", "repair or replace GPU", "unknown"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("Markdown report lacks %q", want)
		}
	}
}
