package history

import (
	"cmp"
	"context"
	"io"
	"math"
	"strings"
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

// TestIssue21Scenarios plays a day of each scenario of issue 21 at a 10-second
// sample and holds the ledger's totals to the hand computation at the top of
// its file.
func TestIssue21Scenarios(t *testing.T) {
	type key struct{ pod, state string }
	tests := []struct {
		file     string
		restarts int
		want     map[key]float64 // device-seconds
	}{
		{"restart.yaml", 1, map[key]float64{
			{"pretrain-0", "busy"}: 86390, {"finetune-0", "busy"}: 55800, {"finetune-1", "busy"}: 40190,
			{"tune-a", "busy"}: 27600, {"tune-b", "busy"}: 43195,
		}},
		{"mig-reconfigure.yaml", 0, map[key]float64{
			{"llm-0", ""}: 43190 * 3.0 / 5, {"llm-1", ""}: 43210 * 4.0 / 6, {"nb-0", ""}: 43190.0/5 + 43210.0/6,
			{"nb-1", ""}: 43210.0 / 6, {"embed-0", ""}: 43200, {"embed-1", ""}: 43200, {"", "unallocated"}: 43190.0 / 5,
		}},
		{"ended-pods.yaml", 0, map[key]float64{
			{"notebook-0", "idle"}: 28790, {"eval-sweep-3", "idle"}: 86400, {"notebook-1", "idle"}: 86400,
			{"notebook-2", "idle"}: 57590.0 / 7, {"notebook-3", "idle"}: 86400.0 / 7, {"reindex-0", "busy"}: 35990 * 3.0 / 7,
			{"", "unallocated"}: 57610 + 50410*3.0/7 + 28810.0/7,
		}},
		{"shared-node.yaml", 0, map[key]float64{
			{"solo-0", ""}: 86400, {"solo-1", ""}: 86400, {"light-0", "idle"}: 86400,
		}},
		{"kueue-jobs.yaml", 0, map[key]float64{
			{"build", "busy"}: 34560, {"test", "busy"}: 17280, {"train-a", "busy"}: 43200, {"train-b", "busy"}: 28800, {"train-c", "busy"}: 21600,
		}},
		{"scrape-gap.yaml", 0, map[key]float64{
			{"pretrain-0", "busy"}: 86400, {"pretrain-1", "busy"}: 86400, {"chat-0", ""}: 86400, {"embed-0", ""}: 86400,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res := runScenario(t, "../testdata/scenarios/"+tt.file, Options{
				Duration: 24 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second,
			})
			if res.Restarts != tt.restarts {
				t.Errorf("Restarts = %d, want %d", res.Restarts, tt.restarts)
			}
			// Summed per pod (a job's pods per job) and state, and per pod
			// over every state (state "").
			got := map[key]float64{}
			for _, tot := range res.Totals {
				pod := tot.Holder.Pod
				if i := strings.LastIndexByte(pod, '-'); tt.file == "kueue-jobs.yaml" && i > 0 && pod != "api-0" {
					pod = pod[:i]
				}
				got[key{pod, tot.State.String()}] += tot.Seconds
				got[key{pod, ""}] += tot.Seconds
			}
			for k, want := range tt.want {
				if g := got[k]; math.Abs(g-want) > 1e-6*want {
					t.Errorf("%s %s: %v device-seconds, want %v", k.pod, cmp.Or(k.state, "(all states)"), g, want)
				}
			}
		})
	}
}
