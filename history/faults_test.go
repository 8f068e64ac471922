package history

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
)

// faultScenario has a trainer on GPU 0 for the whole run, a job on GPU 1 (a
// 2-minute pod every 10 minutes), and every fault: the kubelet down from 1h to
// 2h, the backend failing from 2h30m to 3h, the exporter stopped from 3h30m to 4h.
const faultScenario = `seed: 3
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
workloads:
  - {name: train, pattern: training, fb_mib: 60000}
  - {name: build, pattern: training, fb_mib: 8000}
pods:
  - {namespace: ml, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train}
jobs:
  - {namespace: ci, name: build, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: build, every: 10m, run: 2m}
events:
  - {at: 1h, kubelet: down, for: 1h}
  - {at: 2h30m, backend: failing, for: 30m}
  - {at: 3h30m, exporter: stopped, for: 30m}
`

// faultRun is one run of faultScenario, shared by the tests that read it.
var faultRun struct {
	once   sync.Once
	res    Result
	out    []byte
	err    error
	parsed sync.Once
	got    parsed
}

// runFaults writes 4h30m of faultScenario, sampled and scraped every 10 s.
func runFaults(t *testing.T) (Result, parsed) {
	t.Helper()
	faultRun.once.Do(func() {
		sc, err := sim.Parse([]byte(faultScenario), "faults.yaml")
		if err != nil {
			faultRun.err = err
			return
		}
		var buf bytes.Buffer
		faultRun.res, faultRun.err = writeNode(context.Background(), &buf, Options{Scenario: sc, Start: start,
			Duration: 4*time.Hour + 30*time.Minute, SampleInterval: 10 * time.Second, ScrapeInterval: 10 * time.Second})
		faultRun.out = buf.Bytes()
	})
	if faultRun.err != nil {
		t.Fatal(faultRun.err)
	}
	faultRun.parsed.Do(func() { faultRun.got = parse(t, faultRun.out) })
	return faultRun.res, faultRun.got
}

// at is the Unix ms of a time after start.
func at(d time.Duration) int64 { return start.Add(d).UnixMilli() }

// seriesWith returns the keys of metric name whose label text has every part.
func (p parsed) seriesWith(name string, parts ...string) []string {
	var keys []string
	for _, k := range p.byName[name] {
		ok := true
		for _, part := range parts {
			ok = ok && strings.Contains(k, part)
		}
		if ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// valueAt returns the value of series key at ms, and whether it was written.
func (p parsed) valueAt(key string, ms int64) (float64, bool) {
	for i, ts := range p.times[key] {
		if ts == ms {
			return p.values[key][i], true
		}
	}
	return 0, false
}

func TestExporterStoppedWritesNothingAndRestartsCounters(t *testing.T) {
	res, got := runFaults(t)
	for key, ts := range got.times {
		for _, ms := range ts {
			if ms >= at(3*time.Hour+30*time.Minute) && ms < at(4*time.Hour) {
				t.Fatalf("%s written at %v, inside the exporter stop", key, time.UnixMilli(ms).UTC())
			}
		}
	}
	if res.Restarts != 1 {
		t.Errorf("Restarts = %d, want 1", res.Restarts)
	}
	// The trainer's counters start again from 0 at the restart.
	keys := got.seriesWith("gputally_gpu_seconds_total", `pod="train"`, `state="busy"`)
	if len(keys) != 1 {
		t.Fatalf("trainer busy series %v", keys)
	}
	before, ok1 := got.valueAt(keys[0], at(3*time.Hour+30*time.Minute-10*time.Second))
	after, ok2 := got.valueAt(keys[0], at(4*time.Hour+time.Minute))
	if !ok1 || !ok2 || before < 3600 || after > 60 {
		t.Errorf("trainer busy seconds %v before the stop, %v a minute after the restart; want > 1 h, then ≤ 60 s", before, after)
	}
	// The summed totals cover every sampled second of both GPUs: 0 to 3h29m50s
	// and 4h to 4h30m, whatever state the faults put them in.
	var seconds float64
	for _, tot := range res.Totals {
		seconds += tot.Seconds
	}
	if want := 2 * (3.5*3600 - 10 + 1800); math.Abs(seconds-want) > 1e-6*want {
		t.Errorf("device-seconds summed over the restart %v, want %v", seconds, want)
	}
	// And they equal the written counters summed over their lives.
	var written float64
	for _, key := range got.byName["gputally_gpu_seconds_total"] {
		vs, prev := got.values[key], 0.0
		for i, v := range vs {
			if v < prev || (i > 0 && got.times[key][i]-got.times[key][i-1] > 10_000) {
				written += prev // a restart, or a series that came back
			}
			prev = v
		}
		written += prev
	}
	if math.Abs(written-seconds) > 1e-6*seconds {
		t.Errorf("written counters sum to %v s over their lives, the totals to %v", written, seconds)
	}
}

func TestKubeletDownDropsHoldersAtStaleAfter(t *testing.T) {
	_, got := runFaults(t)
	up := got.byName["gputally_attribution_up"]
	if len(up) != 1 {
		t.Fatalf("attribution_up series %v", up)
	}
	for _, tt := range []struct {
		when time.Duration
		want float64
	}{
		{time.Hour - 10*time.Second, 1}, {time.Hour, 0}, {2*time.Hour - 10*time.Second, 0}, {2 * time.Hour, 1},
	} {
		if v, ok := got.valueAt(up[0], at(tt.when)); !ok || v != tt.want {
			t.Errorf("attribution_up at %v = %v (written %v), want %v", tt.when, v, ok, tt.want)
		}
	}
	// The last answer came at 59m50s: the trainer is held until 5 minutes
	// after it, not a sample longer, and again once the kubelet is back.
	alloc := got.seriesWith("gputally_gpu_allocation", `pod="train"`)
	if len(alloc) != 1 {
		t.Fatalf("trainer allocation series %v", alloc)
	}
	for _, tt := range []struct {
		when time.Duration
		held bool
	}{
		{time.Hour + 4*time.Minute + 40*time.Second, true}, {time.Hour + 4*time.Minute + 50*time.Second, false},
		{2*time.Hour - 10*time.Second, false}, {2 * time.Hour, true},
	} {
		if _, held := got.valueAt(alloc[0], at(tt.when)); held != tt.held {
			t.Errorf("trainer allocation at %v written %v, want %v", tt.when, held, tt.held)
		}
	}
}

func TestBackendFailingWritesNoReadings(t *testing.T) {
	_, got := runFaults(t)
	// Power readings per GPU (a GPU's series change with its holder's labels).
	written := map[string]map[int64]bool{}
	for _, key := range got.byName["DCGM_FI_DEV_POWER_USAGE"] {
		gpu := key[strings.Index(key, `gpu="`):][:8]
		if written[gpu] == nil {
			written[gpu] = map[int64]bool{}
		}
		for _, ms := range got.times[key] {
			written[gpu][ms] = true
		}
	}
	if len(written) != 2 {
		t.Fatalf("power of %d GPUs, want 2", len(written))
	}
	for gpu, times := range written {
		for _, tt := range []struct {
			when    time.Duration
			written bool
		}{
			{150*time.Minute - 10*time.Second, true}, {150 * time.Minute, false}, {3*time.Hour - 10*time.Second, false}, {3 * time.Hour, true},
		} {
			if times[at(tt.when)] != tt.written {
				t.Errorf("power of %s at %v written %v, want %v", gpu, tt.when, !tt.written, tt.written)
			}
		}
	}
	up := got.byName["gputally_up"]
	if len(up) != 1 {
		t.Fatalf("gputally_up series %v", up)
	}
	if v, _ := got.valueAt(up[0], at(151*time.Minute)); v != 0 {
		t.Errorf("gputally_up while failing = %v, want 0", v)
	}
}

func TestJobPodsAreAttributedWhileTheyRun(t *testing.T) {
	res, got := runFaults(t)
	// build-1 runs 10m to 12m: held at the samples 10m00s … 11m50s.
	alloc := got.seriesWith("gputally_gpu_allocation", `pod="build-1"`)
	if len(alloc) != 1 {
		t.Fatalf("build-1 allocation series %v", alloc)
	}
	if ts := got.times[alloc[0]]; len(ts) != 12 || ts[0] != at(10*time.Minute) || ts[11] != at(12*time.Minute-10*time.Second) {
		t.Errorf("build-1 held at %d samples from %v; want 12 from 10m", len(ts), time.UnixMilli(ts[0]).Sub(start))
	}
	// The ledger charges build-1 its 2 minutes, sample by sample.
	var held float64
	for _, tot := range res.Totals {
		if tot.Holder.Pod == "build-1" {
			held += tot.Seconds
		}
	}
	if held != 120 {
		t.Errorf("build-1 charged %v s, want 120", held)
	}
	// Pods of the job are held in the first hour, after the kubelet is back
	// (build-18 at 3h) and after the exporter's restart (build-24 at 4h).
	for _, pod := range []string{"build-0", "build-5", "build-18", "build-24"} {
		if len(got.seriesWith("gputally_gpu_allocation", `pod="`+pod+`"`)) != 1 {
			t.Errorf("no allocation of %s", pod)
		}
	}
}
