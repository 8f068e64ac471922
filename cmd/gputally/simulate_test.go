package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/prometheus/common/model"
)

// TestSimulateHistorySummary runs `simulate history --summary` on a scenario
// whose exporter stops once: the summary says so, and its totals per
// namespace and state are the sums of its series.
func TestSimulateHistorySummary(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte(`seed: 1
gpus: [{model: NVIDIA H100 80GB HBM3, count: 2}]
workloads: [{name: w, pattern: training, fb_mib: 1000}]
pods: [{namespace: ml, pod: p, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w}]
jobs: [{namespace: ci, name: j, container: c, resource: nvidia.com/gpu, device: {gpu: 1}, workload: w, every: 10m, run: 5m}]
events: [{at: 30m, exporter: stopped, for: 20m}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	summaryPath := filepath.Join(dir, "summary.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"simulate", "history", "--scenario", scenario, "--duration", "1h",
		"--start", "2026-01-05T00:00:00Z", "--sample-interval", "10s", "--out", filepath.Join(dir, "h.om"), "--summary", summaryPath}, &stdout, &stderr, nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Restarts != 1 {
		t.Errorf("restarts %d, want 1", s.Restarts)
	}
	bySeries := map[[2]string]float64{}
	var seconds float64
	for _, x := range s.Series {
		bySeries[[2]string{x.Namespace, x.State}] += x.EUR
		seconds += x.Seconds
	}
	// Sampled: 0 to 29m50s and 50m to 1h, on two GPUs.
	if want := 2 * (1790 + 600.0); math.Abs(seconds-want) > 1e-6 {
		t.Errorf("device-seconds %v, want %v", seconds, want)
	}
	busy := map[string]float64{}
	for _, n := range s.Namespaces {
		if want := bySeries[[2]string{n.Namespace, n.State}]; math.Abs(n.EUR-want) > 1e-9 {
			t.Errorf("%s/%s: %v EUR, its series sum to %v", n.Namespace, n.State, n.EUR, want)
		}
		if n.State == "busy" {
			busy[n.Namespace] = n.Seconds
		}
	}
	if busy["ml"] <= 0 || busy["ci"] <= 0 || len(s.Namespaces) != len(bySeries) {
		t.Errorf("namespaces %+v", s.Namespaces)
	}
}

func TestSimulateHistoryRejectsABadScenario(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(scenario, []byte("gpus: [{model: NVIDIA H100 80GB HBM3}]\nevents:\n  - {at: 1h, kubelet: down}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"simulate", "history", "--scenario", scenario, "--duration", "1h"}, &stdout, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "bad.yaml:3: events[0].for: required") {
		t.Errorf("exit %d, stderr %q; want 2 and the located error", code, stderr.String())
	}
}

// writeScenario writes a scenario file for a test.
func writeScenario(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startInProcess runs `gputally exporter` with args in this process until the
// test ends, and returns it once /-/ready answers, with its log.
func startInProcess(t *testing.T, args ...string) (*exporter, *syncBuffer) {
	t.Helper()
	e := &exporter{addr: freeAddr(t)}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"exporter", "--web.listen-address=" + e.addr}, args...), io.Discard, logs, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("exporter log:\n%s", logs)
		}
	})
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + e.addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return e, logs
}

// TestExporterPlaysJobsInRealTime runs a job of a 1-second pod every 2 seconds
// on the simulated node: the kubelet follows the wall clock, so pods after
// the first ones get attributed; the scenario's exporter stop and restart and
// its missing scrapes are only logged.
func TestExporterPlaysJobsInRealTime(t *testing.T) {
	scenario := writeScenario(t, `gpus: [{model: NVIDIA H100 80GB HBM3, count: 2}]
workloads: [{name: w, pattern: training, fb_mib: 1000}]
jobs: [{namespace: ci, name: j, container: c, resource: nvidia.com/gpu, device: {gpu: 1}, workload: w, every: 2s, run: 1s}]
events: [{at: 1h, exporter: stopped, for: 1h}, {at: 3h, exporter: restarted}, {at: 4h, scrape: missing, for: 1h}]
`)
	e, logs := startInProcess(t, "--backend=sim", "--sim.scenario="+scenario, "--collector.interval=100ms", "--attribution.interval=100ms")
	waitFor(t, func() bool {
		for _, s := range e.scrape(t) {
			pod := string(s.Metric["pod"])
			if s.Metric[model.MetricNameLabel] == "gputally_gpu_allocation" && strings.HasPrefix(pod, "j-") && pod != "j-0" && pod != "j-1" {
				return true
			}
		}
		return false
	})
	l := logs.String()
	if !strings.Contains(l, "exporter stops and restarts and missing scrapes apply to simulate history and report --demo only") ||
		!strings.Contains(l, "exporter stopped at 1h0m0s for 1h0m0s; exporter restarted at 3h0m0s; scrape missing at 4h0m0s for 1h0m0s") {
		t.Errorf("no log line about the exporter stop, restart and missing scrapes:\n%s", logs)
	}
}

// TestExporterPlaysMIGReconfigurationInRealTime reconfigures a MIG GPU a
// second after the start: the sampler finds the new instances on the wall
// clock, the pod on the 7g.80gb that went ends, the one on a new 1g.10gb is
// attributed.
func TestExporterPlaysMIGReconfigurationInRealTime(t *testing.T) {
	scenario := writeScenario(t, `gpus: [{model: NVIDIA H100 80GB HBM3, mig: [7g.80gb]}]
workloads: [{name: w, pattern: training, fb_mib: 1000}]
pods:
  - {namespace: ml, pod: before, container: c, resource: nvidia.com/mig-7g.80gb, device: {gpu: 0, instance: 0}, workload: w}
  - {namespace: ml, pod: after, container: c, resource: nvidia.com/mig-1g.10gb, device: {gpu: 0, instance: 1}, workload: w, start: 1s}
events: [{at: 1s, mig: {gpu: 0, layout: [1g.10gb, 1g.10gb]}}]
`)
	e, _ := startInProcess(t, "--backend=sim", "--sim.scenario="+scenario, "--collector.interval=100ms", "--attribution.interval=100ms")
	var got map[string]*model.Sample
	waitFor(t, func() bool {
		got = e.scrape(t)
		for _, s := range got {
			if s.Metric[model.MetricNameLabel] == "gputally_gpu_allocation" && s.Metric["pod"] == "after" {
				return true
			}
		}
		return false
	})
	profiles := map[string]bool{}
	for _, s := range got {
		if s.Metric[model.MetricNameLabel] == model.LabelValue(dcgmnames.FBUsed.New) {
			profiles[string(s.Metric["GPU_I_PROFILE"])] = true
		}
		if s.Metric[model.MetricNameLabel] == "gputally_gpu_allocation" && s.Metric["pod"] == "before" {
			t.Errorf("the pod on the 7g.80gb is still allocated: %v", s.Metric)
		}
	}
	if !profiles["1g.10gb"] || profiles["7g.80gb"] {
		t.Errorf("framebuffer series of the profiles %v, want 1g.10gb only", profiles)
	}
}

// TestExporterPlaysFaultsInRealTime runs a node whose kubelet is down and whose
// backend fails from the start.
func TestExporterPlaysFaultsInRealTime(t *testing.T) {
	scenario := writeScenario(t, `gpus: [{model: NVIDIA H100 80GB HBM3}]
workloads: [{name: w, pattern: training, fb_mib: 1000}]
pods: [{namespace: ml, pod: p, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w}]
events: [{at: 0s, kubelet: down, for: 1h}, {at: 0s, backend: failing, for: 1h}]
`)
	e, logs := startInProcess(t, "--backend=sim", "--sim.scenario="+scenario, "--collector.interval=100ms", "--attribution.interval=100ms")
	waitFor(t, func() bool {
		l := logs.String()
		return strings.Contains(l, "simulated kubelet is down") && strings.Contains(l, "simulated backend failure")
	})
	got := e.scrape(t)
	if up, n := sum(got, "gputally_attribution_up", nil); n != 1 || up != 0 {
		t.Errorf("gputally_attribution_up %v (%d series), want 0", up, n)
	}
	if _, n := sum(got, "gputally_gpu_allocation", nil); n != 0 {
		t.Errorf("%d allocation series while the kubelet never answered", n)
	}
	if up, n := sum(got, "gputally_up", nil); n != 1 || up != 0 {
		t.Errorf("gputally_up %v (%d series), want 0 while the backend fails", up, n)
	}
}
