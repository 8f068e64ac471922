package history

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
)

// runScenario runs the scenario file at path through the history.
func runScenario(t *testing.T, path string, opts Options) Result {
	t.Helper()
	sc, err := sim.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Scenario, opts.Start = sc, start
	res, err := writeNode(context.Background(), io.Discard, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestFaultsScenarioRunsAWeek plays testdata/scenarios/faults.yaml for a week:
// the exporter restarts once, and the ledgers account every sampled second of
// the six GPUs — 0 to 99h50m and 108h to 168h at a 10-minute sample — whatever
// state the lost GPU, the stale kubelet and the failing backend put them in.
func TestFaultsScenarioRunsAWeek(t *testing.T) {
	res := runScenario(t, "../testdata/scenarios/faults.yaml", Options{
		Duration: 7 * 24 * time.Hour, SampleInterval: 10 * time.Minute, ScrapeInterval: 30 * time.Minute,
	})
	if res.Restarts != 1 {
		t.Errorf("Restarts = %d, want 1", res.Restarts)
	}
	var seconds float64
	held := map[string]bool{}
	for _, tot := range res.Totals {
		seconds += tot.Seconds
		if tot.Holder.Pod != "" {
			held[tot.Holder.Namespace+"/"+tot.Holder.Pod] = true
		}
	}
	if want := 6 * float64((99*time.Hour+50*time.Minute+60*time.Hour)/time.Second); math.Abs(seconds-want) > 1e-6*want {
		t.Errorf("device-seconds %v, want %v", seconds, want)
	}
	for _, pod := range []string{"ml/pretrain-0", "batch/reindex-0", "dev-ann/notebook-0", "dev-ben/notebook-0", "serving/embed-1"} {
		if !held[pod] {
			t.Errorf("%s was never charged", pod)
		}
	}
}

// TestShortJobsScenarioChargesEachRun plays 7 hours of
// testdata/scenarios/short-jobs.yaml at a 10-second sample: every job's pod
// is charged exactly its run, the one shorter than a scrape too.
func TestShortJobsScenarioChargesEachRun(t *testing.T) {
	res := runScenario(t, "../testdata/scenarios/short-jobs.yaml", Options{
		Duration: 7 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second,
	})
	charged := map[string]float64{}
	for _, tot := range res.Totals {
		charged[tot.Holder.Namespace+"/"+tot.Holder.Pod] += tot.Seconds
	}
	for pod, want := range map[string]float64{
		"ci/build-1": 120, "ci/build-41": 120, "ci/test-7": 90, "qa/smoke-3": 20, "eval/score-2": 5 * 60 * 3.0 / 7,
		"data/embed-100": 90 * 1.0 / 7, "serving/api-0": 7 * 3600,
		// ingest-0 runs from 6h: the samples 6h00m00s to 7h, 361 intervals.
		"data/ingest-0": 3610 * 2.0 / 7,
	} {
		if got := charged[pod]; math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s charged %v device-seconds, want %v", pod, got, want)
		}
	}
	// build-42 starts at the last sample (7h): the ledger charges each
	// sample interval at the state its end sees, so it gets that one interval.
	if got := charged["ci/build-42"]; got != 10 {
		t.Errorf("build-42 charged %v device-seconds, want 10", got)
	}
}
