package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		"--start", "2026-01-05T00:00:00Z", "--sample-interval", "10s", "--out", filepath.Join(dir, "h.om"), "--summary", summaryPath}, &stdout, &stderr)
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
	code := run(context.Background(), []string{"simulate", "history", "--scenario", scenario, "--duration", "1h"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "bad.yaml:3: events[0].for: required") {
		t.Errorf("exit %d, stderr %q; want 2 and the located error", code, stderr.String())
	}
}
