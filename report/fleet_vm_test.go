//go:build fleetbench

package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Budgets of DESIGN.md for a report over 1,000 GPUs × 7 days against a real
// Prometheus-API engine over HTTP.
const (
	fleetBudgetWall = 60 * time.Second
	fleetBudgetRSS  = 500 << 20
)

// TestFleetReportVictoriaMetrics (`make bench-fleet`) loads the synthetic
// fleet of synth_test.go — GPUTALLY_FLEET_GPUS GPUs (default 1000; a comma
// list measures several fleets in turn) × 7 days, scraped every
// GPUTALLY_FLEET_SCRAPE_SECONDS (default 60) — into a VictoriaMetrics on
// loopback through /api/v1/import/prometheus (millisecond timestamps), runs
// the `gputally report` binary against it over HTTP (once per value of
// --query.max-samples in GPUTALLY_FLEET_MAX_SAMPLES, default 500000) and prints the report's
// wall time and peak RSS (getrusage of the child), the import's time and
// VictoriaMetrics' resident memory. It fails when the report over 1,000 GPUs
// or fewer is over the budget (60 s, 500 MiB) or counts the wrong number of
// GPUs, or when the import loses samples. Needs victoria-metrics in PATH.
func TestFleetReportVictoriaMetrics(t *testing.T) {
	vmBin, err := exec.LookPath("victoria-metrics")
	if err != nil {
		t.Skipf("victoria-metrics not in PATH: %v", err)
	}
	sizes := []int{1000}
	if v := os.Getenv("GPUTALLY_FLEET_GPUS"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("GPUTALLY_FLEET_GPUS: %q is not a positive count", f)
			}
			sizes = append(sizes, n)
		}
	}
	scrape := 60 * time.Second
	if v := os.Getenv("GPUTALLY_FLEET_SCRAPE_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("GPUTALLY_FLEET_SCRAPE_SECONDS: %q is not a positive count", v)
		}
		scrape = time.Duration(n) * time.Second
	}
	maxSamples := []string{"500000"}
	if v := os.Getenv("GPUTALLY_FLEET_MAX_SAMPLES"); v != "" {
		maxSamples = strings.Split(v, ",")
	}
	bin := filepath.Join(t.TempDir(), "gputally")
	build := exec.Command("go", "build", "-o", bin, "../cmd/gputally")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, gpus := range sizes {
		t.Run(fmt.Sprintf("%dGPUs", gpus), func(t *testing.T) { fleetRun(t, vmBin, bin, gpus, scrape, maxSamples) })
	}
}

func fleetRun(t *testing.T, vmBin, bin string, gpus int, scrape time.Duration, maxSamples []string) {
	week := 7 * 24 * time.Hour
	// The week ends at the last full hour: VictoriaMetrics keeps data within
	// its retention from now, and the report's --end must not be in the future.
	end := time.Now().UTC().Truncate(time.Hour)
	start := end.Add(-week)
	ticks := int(week / scrape)

	vm := startVictoriaMetrics(t, vmBin)
	fams, _ := synthFleet(gpus, scrape, ticks)
	began := time.Now()
	lines, err := importPrometheus(vm.url, fams, start, scrape, ticks)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(vm.url + "/internal/force_flush"); err == nil {
		resp.Body.Close()
	}
	imported := time.Since(began)
	if got := vm.count(t, end); got != lines {
		t.Fatalf("VictoriaMetrics holds %d samples, %d were imported", got, lines)
	}

	t.Logf("fleet %d GPUs × 7 days, %s scrapes: %d series, %d samples imported in %s (%.0f samples/s); VictoriaMetrics RSS %.0f MiB",
		gpus, scrape, vm.series(t, end), lines, imported.Round(time.Second), float64(lines)/imported.Seconds(), float64(vm.rss(t))/(1<<20))
	for _, maxSamples := range maxSamples {
		fleetReport(t, bin, vm.url, end, gpus, maxSamples)
	}
}

// fleetReport runs the report binary against url and checks its budget.
func fleetReport(t *testing.T, bin, url string, end time.Time, gpus int, maxSamples string) {
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(bin, "report", "--prometheus.url="+url, "--range=7d", "--end="+end.Format(time.RFC3339),
		"--format=json", "--out="+out, "--query.timeout=5m", "--query.max-samples="+maxSamples)
	cmd.Stderr = &tailWriter{max: 4096}
	began := time.Now()
	err := cmd.Run()
	wall := time.Since(began)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, cmd.Stderr.(*tailWriter).b)
	}
	peakRSS := uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024 // Linux: KiB
	var rep struct {
		GPUs    int  `json:"gpus"`
		Partial bool `json:"partial"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("report --query.max-samples=%s: wall %s, peak RSS %.1f MiB (budget for 1,000 GPUs: %s, %d MiB); %d GPUs, partial %t",
		maxSamples, wall.Round(10*time.Millisecond), float64(peakRSS)/(1<<20), fleetBudgetWall, fleetBudgetRSS>>20, rep.GPUs, rep.Partial)
	if rep.GPUs != gpus {
		t.Errorf("the report counts %d GPUs, want %d", rep.GPUs, gpus)
	}
	if gpus <= 1000 && wall > fleetBudgetWall {
		t.Errorf("report took %s, budget %s", wall, fleetBudgetWall)
	}
	if gpus <= 1000 && peakRSS > fleetBudgetRSS {
		t.Errorf("report peak RSS %.1f MiB, budget %d MiB", float64(peakRSS)/(1<<20), fleetBudgetRSS>>20)
	}
}

// importPrometheus streams the families to /api/v1/import/prometheus as
// exposition text with millisecond timestamps, one series after the other,
// and returns the samples written.
func importPrometheus(url string, fams []synthFamily, start time.Time, interval time.Duration, ticks int) (int, error) {
	pr, pw := io.Pipe()
	lines := 0
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		var line []byte
		for _, f := range fams {
			for _, s := range f.series {
				next := s.values()
				prefix := exposition(s.lset)
				for k := 1; k <= ticks; k++ {
					line = append(line[:0], prefix...)
					line = append(line, ' ')
					line = strconv.AppendFloat(line, next(k), 'g', -1, 64)
					line = append(line, ' ')
					line = strconv.AppendInt(line, start.Add(time.Duration(k)*interval).UnixMilli(), 10)
					line = append(line, '\n')
					if _, err := bw.Write(line); err != nil {
						pw.CloseWithError(err)
						return
					}
					lines++
				}
			}
		}
		pw.CloseWithError(bw.Flush())
	}()
	resp, err := http.Post(url+"/api/v1/import/prometheus", "text/plain", pr)
	if err != nil {
		pr.CloseWithError(err)
		return 0, fmt.Errorf("import: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("import: %s: %s", resp.Status, msg)
	}
	return lines, nil
}

// exposition is the series' name and labels as the text format writes them.
func exposition(lset labels.Labels) []byte {
	var b strings.Builder
	b.WriteString(lset.Get(model.MetricNameLabel))
	b.WriteByte('{')
	first := true
	lset.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	})
	b.WriteByte('}')
	return []byte(b.String())
}

type victoriaMetrics struct {
	url string
	cmd *exec.Cmd
}

// startVictoriaMetrics runs a fresh single-node VictoriaMetrics on loopback
// with a data directory of the test's; it stops at the test's end.
func startVictoriaMetrics(t *testing.T, bin string) *victoriaMetrics {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-storageDataPath="+t.TempDir(), "-httpListenAddr="+addr, "-retentionPeriod=100y",
		"-search.maxQueryDuration=5m", "-search.latencyOffset=0s", "-loggerLevel=ERROR")
	cmd.Stderr = &tailWriter{max: 4096}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	vm := &victoriaMetrics{url: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if resp, err := http.Get(vm.url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return vm
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("victoria-metrics did not answer within a minute\n%s", cmd.Stderr.(*tailWriter).b)
		}
	}
	return vm
}

// query evaluates an instant query at t and returns its single value.
func (vm *victoriaMetrics) query(t *testing.T, q string, at time.Time) float64 {
	t.Helper()
	resp, err := http.Get(vm.url + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatInt(at.Unix(), 10))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data.Result) != 1 {
		t.Fatalf("%s: %d results", q, len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// count is the samples stored in the week before end.
func (vm *victoriaMetrics) count(t *testing.T, end time.Time) int {
	return int(vm.query(t, `sum(count_over_time({__name__=~".+"}[8d]))`, end))
}

func (vm *victoriaMetrics) series(t *testing.T, end time.Time) int {
	return int(vm.query(t, `count(last_over_time({__name__=~".+"}[8d]))`, end))
}

// rss reads VictoriaMetrics' resident memory from /proc (Linux).
func (vm *victoriaMetrics) rss(t *testing.T) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", vm.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kib * 1024
		}
	}
	return 0
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	b   []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = w.b[len(w.b)-w.max:]
	}
	return len(p), nil
}
