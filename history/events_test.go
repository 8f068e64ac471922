package history

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
)

// eventScenario has a trainer on GPU 0 for the whole run and a MIG GPU 1
// whose 3g.40gb (held by big-a) becomes a 4g.40gb (held by big-b from then on)
// at 1h, both GPU instance ID 1, while its two 1g.20gb stay (small-a holds the
// first); the exporter restarts at 1h30m and Prometheus misses its scrapes
// from 2h to 2h20m.
const eventScenario = `seed: 9
gpus:
  - model: NVIDIA H100 80GB HBM3
  - model: NVIDIA H100 80GB HBM3
    mig: [3g.40gb, 1g.20gb, 1g.20gb]
workloads:
  - {name: train, pattern: training, fb_mib: 30000}
  - {name: small, pattern: idle, fb_mib: 8000}
pods:
  - {namespace: ml, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train}
  - {namespace: ml, pod: big-a, container: main, resource: nvidia.com/mig-3g.40gb, device: {gpu: 1, instance: 0}, workload: train}
  - {namespace: ml, pod: small-a, container: main, resource: nvidia.com/mig-1g.20gb, device: {gpu: 1, instance: 1}, workload: small}
  - {namespace: ml, pod: big-b, container: main, resource: nvidia.com/mig-4g.40gb, device: {gpu: 1, instance: 0}, workload: train, start: 1h}
events:
  - {at: 1h, mig: {gpu: 1, layout: [4g.40gb, 1g.20gb, 1g.20gb]}}
  - {at: 1h30m, exporter: restarted}
  - {at: 2h, scrape: missing, for: 20m}
`

var eventRun struct {
	once sync.Once
	res  Result
	got  parsed
	err  error
}

// runEvents writes 2h40m of eventScenario, sampled and scraped every 10 s.
func runEvents(t *testing.T) (Result, parsed) {
	t.Helper()
	eventRun.once.Do(func() {
		sc, err := sim.Parse([]byte(eventScenario), "events.yaml")
		if err != nil {
			eventRun.err = err
			return
		}
		var buf bytes.Buffer
		eventRun.res, eventRun.err = writeNode(context.Background(), &buf, Options{Scenario: sc, Start: start,
			Duration: 2*time.Hour + 40*time.Minute, SampleInterval: 10 * time.Second, ScrapeInterval: 10 * time.Second})
		if eventRun.err == nil {
			eventRun.got = parse(t, buf.Bytes())
		}
	})
	if eventRun.err != nil {
		t.Fatal(eventRun.err)
	}
	return eventRun.res, eventRun.got
}

// charged sums the run's totals of a pod.
func charged(res Result, pod string) float64 {
	var s float64
	for _, tot := range res.Totals {
		if tot.Holder.Pod == pod {
			s += tot.Seconds
		}
	}
	return s
}

func TestExporterRestartedStartsCountersAgainWithoutAGap(t *testing.T) {
	res, got := runEvents(t)
	if res.Restarts != 1 {
		t.Errorf("Restarts = %d, want 1", res.Restarts)
	}
	keys := got.seriesWith("gputally_gpu_seconds_total", `pod="train"`, `state="busy"`)
	if len(keys) != 1 {
		t.Fatalf("trainer busy series %v", keys)
	}
	// The old process charged the samples 10s … 1h29m50s; the new one
	// starts from 0 at 1h30m and charges 10 s a sample from there.
	for _, tt := range []struct {
		when time.Duration
		want float64
	}{
		{90*time.Minute - 10*time.Second, 5390}, {90 * time.Minute, 0}, {90*time.Minute + 10*time.Second, 10},
	} {
		if v, ok := got.valueAt(keys[0], at(tt.when)); !ok || v != tt.want {
			t.Errorf("trainer busy seconds at %v = %v (written %v), want %v", tt.when, v, ok, tt.want)
		}
	}
	// No scrape is missing around the restart: gputally_up is written every
	// 10 s from 0 to 2h40m but for the missing window 2h–2h20m.
	up := got.byName["gputally_up"]
	if len(up) != 1 {
		t.Fatalf("gputally_up series %v", up)
	}
	var want []int64
	for d := time.Duration(0); d <= 160*time.Minute; d += 10 * time.Second {
		if d < 2*time.Hour || d >= 140*time.Minute {
			want = append(want, at(d))
		}
	}
	if ts := got.times[up[0]]; !slices.Equal(ts, want) {
		t.Errorf("gputally_up written at %d times, want %d: every 10 s but 2h–2h20m", len(ts), len(want))
	}
	// The summed totals hold both lives: 2h40m = 9600 s per GPU, but for the
	// interval that ends at the new process's first sample, which neither
	// process charged.
	var seconds float64
	for _, tot := range res.Totals {
		seconds += tot.Seconds
	}
	if want := 2 * (9600.0 - 10); math.Abs(seconds-want) > 1e-6*want {
		t.Errorf("device-seconds summed over the restart %v, want %v", seconds, want)
	}
	if got := charged(res, "train"); got != 9590 {
		t.Errorf("trainer charged %v s, want 9590", got)
	}
}

func TestScrapeMissingWritesNothingInItsWindow(t *testing.T) {
	_, got := runEvents(t)
	for key, ts := range got.times {
		for _, ms := range ts {
			if ms >= at(2*time.Hour) && ms < at(140*time.Minute) {
				t.Fatalf("%s written at %v, inside the missing scrapes", key, time.UnixMilli(ms).UTC())
			}
		}
	}
	// The exporter ran on: the first scrape after the window has the
	// trainer's counter grown by the window, 50 minutes after the restart.
	keys := got.seriesWith("gputally_gpu_seconds_total", `pod="train"`, `state="busy"`)
	if len(keys) != 1 {
		t.Fatalf("trainer busy series %v", keys)
	}
	for _, tt := range []struct {
		when time.Duration
		want float64
	}{{2*time.Hour - 10*time.Second, 1790}, {140 * time.Minute, 3000}} {
		if v, ok := got.valueAt(keys[0], at(tt.when)); !ok || v != tt.want {
			t.Errorf("trainer busy seconds at %v = %v (written %v), want %v", tt.when, v, ok, tt.want)
		}
	}
}

func TestMIGReconfigurationChangesTheSeriesAndEndsPods(t *testing.T) {
	res, got := runEvents(t)
	// GPU instance 1 is a 3g.40gb until 59m50s and a 4g.40gb from 1h: its
	// device series change their GPU_I_PROFILE at the change.
	span := func(profile string) (first, last time.Duration) {
		keys := got.seriesWith("DCGM_FI_PROF_GR_ENGINE_ACTIVE", `GPU_I_ID="1"`, `GPU_I_PROFILE="`+profile+`"`)
		if len(keys) != 1 {
			t.Fatalf("activity series of GPU instance 1 as a %s: %v, want one", profile, keys)
		}
		ts := got.times[keys[0]]
		return time.UnixMilli(ts[0]).Sub(start), time.UnixMilli(ts[len(ts)-1]).Sub(start)
	}
	if first, last := span("3g.40gb"); first != 0 || last != time.Hour-10*time.Second {
		t.Errorf("3g.40gb series from %v to %v, want 0s to 59m50s", first, last)
	}
	if first, last := span("4g.40gb"); first != time.Hour || last != 160*time.Minute {
		t.Errorf("4g.40gb series from %v to %v, want 1h to 2h40m", first, last)
	}
	// Each holder's pod labels go with its instance.
	for _, tt := range []struct{ profile, pod string }{{"3g.40gb", "big-a"}, {"4g.40gb", "big-b"}, {"1g.20gb", "small-a"}} {
		if len(got.seriesWith("DCGM_FI_DEV_FB_USED", `GPU_I_PROFILE="`+tt.profile+`"`, `pod="`+tt.pod+`"`)) != 1 {
			t.Errorf("no framebuffer series of %s on the %s", tt.pod, tt.profile)
		}
	}
	// big-a ended with its instance: charged the samples 10s … 59m50s at
	// 3/5 of the GPU (3g.40gb + 2× 1g.20gb use every memory slice, so the
	// 2 free compute slices are stranded and charged by weight: 3, 1, 1 of 5).
	// big-b from the 1h sample to the end, but for the restart's interval:
	// 6000 s at 4/6 (4g.40gb, 1g.20gb, 1g.20gb: 4, 1, 1 of 6). small-a on its
	// kept 1g.20gb: 3590 s at 1/5, then 6000 s at 1/6.
	for pod, want := range map[string]float64{"big-a": 3590 * 3.0 / 5, "big-b": 6000 * 4.0 / 6, "small-a": 3590.0/5 + 6000.0/6} {
		if got := charged(res, pod); math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s charged %v device-seconds, want %v", pod, got, want)
		}
	}
	alloc := got.seriesWith("gputally_gpu_allocation", `pod="big-a"`)
	if len(alloc) != 1 || got.times[alloc[0]][len(got.times[alloc[0]])-1] != at(time.Hour-10*time.Second) {
		t.Errorf("big-a allocation %v: want one series, last at 59m50s", alloc)
	}
	// The kubelet's answer at 1h named the new instance's UUID, which the
	// attribution client knew by then.
	for _, k := range got.byName["gputally_attribution_unknown_device_ids_total"] {
		if v := got.last[k]; v != 0 {
			t.Errorf("%s = %v, want 0", k, v)
		}
	}
}
