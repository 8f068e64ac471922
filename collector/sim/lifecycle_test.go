package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

// lifeBase is a valid scenario with every lifecycle and fault key; the error
// cases break one line of it.
const lifeBase = `seed: 1
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
  - model: NVIDIA H100 80GB HBM3
    replicas: 2
workloads:
  - {name: train, pattern: training, fb_mib: 60000}
  - {name: dev, pattern: bursty-dev, fb_mib: 4000}
pods:
  - {namespace: ml, pod: train-0, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train, start: 2h, end: 30h}
jobs:
  - {namespace: ci, name: build, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: dev, every: 10m, run: 2m}
events:
  - {at: 1h, kubelet: down, for: 2h}
  - {at: 5h, backend: failing, for: 30m}
  - {at: 10h, exporter: stopped, for: 6h}
  - {at: 26h, gpu: 1, lost: true}
`

func TestParseLifecycleAndFaults(t *testing.T) {
	sc, err := Parse([]byte(lifeBase), "life.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := sc.Pods[0]; p.Start != 2*time.Hour || p.End != 30*time.Hour {
		t.Errorf("pod window %v–%v, want 2h–30h", p.Start, p.End)
	}
	want := Job{Namespace: "ci", Name: "build", Container: "main", Resource: "nvidia.com/gpu",
		Device: Device{GPU: 1}, Workload: "dev", Every: 10 * time.Minute, Run: 2 * time.Minute}
	if len(sc.Jobs) != 1 || sc.Jobs[0] != want {
		t.Errorf("jobs %+v, want [%+v]", sc.Jobs, want)
	}
	e := sc.Events
	if len(e) != 4 || e[0].Kubelet != "down" || e[0].For != 2*time.Hour || e[1].Backend != "failing" ||
		e[2].Exporter != "stopped" || e[2].At != 10*time.Hour || e[3].GPU == nil || *e[3].GPU != 1 || !e[3].Lost {
		t.Errorf("events %+v", e)
	}
	if _, err := New(sc, Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseLifecycleAndFaultErrors(t *testing.T) {
	const job = "  - {namespace: ci, name: build, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: dev, every: 10m, run: 2m}"
	tests := []struct {
		name      string
		old, new  string // replace old by new in lifeBase
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"end before start", "end: 30h", "end: 1h", 11, "pods[0].end", "after start (2h0m0s)"},
		{"end at start", "end: 30h", "end: 2h", 11, "pods[0].end", "after start"},
		{"end zero", "start: 2h, end: 30h", "end: 0s", 11, "pods[0].end", "after start (0s)"},
		{"negative start", "start: 2h", "start: -2h", 11, "pods[0].start", "between 0s"},
		{"start not a duration", "start: 2h", "start: 7200", 11, "pods[0].start", "duration"},
		{"containers of a pod apart", "jobs:", "  - {namespace: ml, pod: train-0, container: side, resource: nvidia.com/gpu.shared, device: {gpu: 2, replica: 0}, workload: dev, start: 3h}\njobs:", 12, "pods[1].start", "run together"},
		{"run longer than every", "run: 2m}", "run: 11m}", 13, "jobs[0].run", "at most every (10m0s)"},
		{"zero run", "run: 2m}", "run: 0s}", 13, "jobs[0].run", "more than 0s"},
		{"missing run", ", run: 2m}", "}", 13, "jobs[0].run", "more than 0s"},
		{"missing every", "every: 10m, ", "", 13, "jobs[0].every", "between 1s"},
		{"every too short", "every: 10m, run: 2m", "every: 500ms, run: 100ms", 13, "jobs[0].every", "between 1s"},
		{"job on a held GPU", "device: {gpu: 1}, workload: dev", "device: {gpu: 0}, workload: dev", 13, "jobs[0].device", "already held by pods[0] (ml/train-0)"},
		{"job name clashes with a pod", "namespace: ci, name: build", "namespace: ml, name: train", 13, "jobs[0].name", "clash with pods[0] (ml/train-0)"},
		{"job defined twice", job, job + "\n" + strings.Replace(job, "gpu: 1", "gpu: 2, replica: 0", 1), 14, "jobs[1].name", "already defined by jobs[0]"},
		{"two jobs on one device", job, job + "\n" + strings.Replace(job, "name: build", "name: test", 1), 14, "jobs[1].device", "already held by jobs[0] (ci/build)"},
		{"bad job name", "name: build", "name: Build_1", 13, "jobs[0].name", "not a valid job name"},
		{"DRA job", "resource: nvidia.com/gpu, device: {gpu: 1}", "resource: gpu.nvidia.com, device: {gpu: 1}", 13, "jobs[0].resource", "gpu.nvidia.com jobs are not simulated"},
		{"bad job namespace", "namespace: ci", "namespace: CI", 13, "jobs[0].namespace", "not a valid namespace"},
		{"bad job container", "container: main, resource: nvidia.com/gpu, device: {gpu: 1}", "container: Main, resource: nvidia.com/gpu, device: {gpu: 1}", 13, "jobs[0].container", "not a valid container"},
		{"job without device", "device: {gpu: 1}, workload: dev", "workload: dev", 13, "jobs[0].device.gpu", "required"},
		{"job on a replica without replica", "resource: nvidia.com/gpu, device: {gpu: 1}, workload: dev", "resource: nvidia.com/gpu.shared, device: {gpu: 2}, workload: dev", 13, "jobs[0].device.replica", "required"},
		{"job with unknown workload", "workload: dev, every", "workload: lint, every", 13, "jobs[0].workload", `no workload named "lint"`},
		{"job with unknown key", "run: 2m}", "run: 2m, pids: [5]}", 13, "jobs[0].pids", "unknown field"},
		{"kubelet up", "kubelet: down", "kubelet: up", 15, "events[0].kubelet", `must be down, got "up"`},
		{"backend flaky", "backend: failing", "backend: flaky", 16, "events[1].backend", "must be failing"},
		{"exporter crashed", "exporter: stopped", "exporter: crashed", 17, "events[2].exporter", "must be stopped"},
		{"fault without for", "kubelet: down, for: 2h", "kubelet: down", 15, "events[0].for", "required"},
		{"fault for zero", "for: 2h", "for: 0s", 15, "events[0].for", "between 0s"},
		{"fault for negative", "for: 30m", "for: -30m", 16, "events[1].for", "between 0s"},
		{"overlapping windows", "at: 5h, backend: failing, for: 30m", "at: 5h, backend: failing, for: 30m}\n  - {at: 5h20m, backend: failing, for: 1h", 17, "events[2].at", "overlaps events[1] (backend failing from 5h0m0s for 30m0s)"},
		{"GPU and kubelet", "{at: 1h, kubelet: down", "{at: 1h, gpu: 0, kubelet: down", 15, "events[0].kubelet", "give gpu or kubelet, not both"},
		{"kubelet and exporter", "kubelet: down, for: 2h", "kubelet: down, exporter: stopped, for: 2h", 15, "events[0].exporter", "give kubelet or exporter"},
		{"XID on a kubelet", "kubelet: down, for: 2h", "kubelet: down, for: 2h, xid: 13", 15, "events[0].xid", "only GPU events"},
		{"lost kubelet", "kubelet: down, for: 2h", "kubelet: down, for: 2h, lost: false", 15, "events[0].lost", "only GPUs get lost"},
		{"GPU event with for", "gpu: 1, lost: true", "gpu: 1, lost: true, for: 1h", 18, "events[3].for", "remove for"},
		{"event about nothing", "{at: 1h, kubelet: down, for: 2h}", "{at: 1h, for: 2h}", 15, "events[0]", "give gpu (with xid or lost), kubelet: down"},
		{"empty kubelet", "kubelet: down", `kubelet: ""`, 15, "events[0].kubelet", `must be down, got ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(lifeBase, tt.old) {
				t.Fatalf("lifeBase lacks %q", tt.old)
			}
			data := strings.Replace(lifeBase, tt.old, tt.new, 1)
			_, err := Parse([]byte(data), "bad.yaml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", data)
			}
			prefix := "bad.yaml:" + strconv.Itoa(tt.wantLine) + ": " + tt.wantField + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("error %q\nwant prefix %q and %q", msg, prefix, tt.wantMsg)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	const m = int64(time.Minute)
	job := window{from: 0, to: math.MaxInt64, every: 10 * m, run: 2 * m}
	pod := window{from: 2 * m, to: 5 * m}
	tests := []struct {
		name   string
		w      window
		since  int64
		active bool
		pod    int64 // job pod running, or -1
		next   int64
	}{
		{"job before start", job, -1, false, -1, 0},
		{"job pod 0 starts", job, 0, true, 0, 2 * m},
		{"job pod 0 last ns", job, 2*m - 1, true, 0, 2 * m},
		{"job between pods", job, 2 * m, false, -1, 10 * m},
		{"job pod 3", job, 31 * m, true, 3, 32 * m},
		{"pod before", pod, m, false, -1, 2 * m},
		{"pod starts", pod, 2 * m, true, -1, 5 * m},
		{"pod ends", pod, 5 * m, false, -1, math.MaxInt64},
		{"always", always, -5 * m, true, -1, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.active(tt.since); got != tt.active {
				t.Errorf("active = %v, want %v", got, tt.active)
			}
			if got := tt.w.pod(tt.since); got != tt.pod {
				t.Errorf("pod = %d, want %d", got, tt.pod)
			}
			if got := tt.w.next(tt.since); got != tt.next {
				t.Errorf("next = %d, want %d", got, tt.next)
			}
		})
	}
}

// life builds lifeBase started at the epoch of the tests.
func life(t *testing.T, scenario string) *Backend {
	t.Helper()
	sc, err := Parse([]byte(scenario), "life.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: epoch})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var epoch = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// podNames lists namespace/pod of the allocations at since.
func podNames(b *Backend, since time.Duration) []string {
	allocs, _ := b.podsAt(since)
	var names []string
	for _, a := range allocs {
		names = append(names, a.Namespace+"/"+a.Pod)
	}
	return names
}

func TestPodsAtFollowsWindowsAndJobs(t *testing.T) {
	b := life(t, lifeBase)
	tests := []struct {
		since time.Duration
		want  []string
	}{
		{0, []string{"ci/build-0"}},
		{2 * time.Minute, nil},
		{2 * time.Hour, []string{"ml/train-0", "ci/build-12"}},
		{2*time.Hour + 90*time.Second, []string{"ml/train-0", "ci/build-12"}},
		{2*time.Hour + 5*time.Minute, []string{"ml/train-0"}},
		{30 * time.Hour, []string{"ci/build-180"}},
	}
	for _, tt := range tests {
		if got := podNames(b, tt.since); !slices.Equal(got, tt.want) {
			t.Errorf("pods at %v = %v, want %v", tt.since, got, tt.want)
		}
	}
	// A job's pods have distinct, stable UIDs and cycle through their own PIDs.
	first, _ := b.podsAt(0)
	again, _ := b.podsAt(time.Minute)
	next, _ := b.podsAt(10 * time.Minute)
	if first[0].UID != again[0].UID || first[0].UID == next[0].UID {
		t.Errorf("UIDs: build-0 %s then %s, build-1 %s", first[0].UID, again[0].UID, next[0].UID)
	}
	j := &b.jobs[0]
	if j.pid(0) == j.pid(1) || j.pid(0) != j.pid(jobPIDBlock) || j.pid(0) == 100 {
		t.Errorf("job PIDs %d %d %d", j.pid(0), j.pid(1), j.pid(jobPIDBlock))
	}
}

func TestNextKubeletChange(t *testing.T) {
	b := life(t, lifeBase)
	var got []time.Duration
	at := epoch
	for range 12 {
		next, ok := b.NextKubeletChange(at)
		if !ok {
			t.Fatal("no next change")
		}
		got = append(got, next.Sub(epoch))
		at = next
	}
	m, h := time.Minute, time.Hour
	want := []time.Duration{2 * m, 10 * m, 12 * m, 20 * m, 22 * m, 30 * m, 32 * m, 40 * m, 42 * m, 50 * m, 52 * m, h}
	if !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	// Past the job's 1h mark: the kubelet goes down at 1h, comes back at 3h;
	// the pod starts at 2h.
	for _, tt := range []struct{ after, want time.Duration }{
		{h, h + 2*m}, {h + 55*m, 2 * h}, {3*h - 9*m, 3*h - 8*m}, {3*h - 5*m, 3 * h}, {30*h - m, 30 * h},
	} {
		if next, _ := b.NextKubeletChange(epoch.Add(tt.after)); next.Sub(epoch) != tt.want {
			t.Errorf("after %v: next change %v, want %v", tt.after, next.Sub(epoch), tt.want)
		}
	}
	// Without jobs, windows or kubelet events nothing changes.
	if _, ok := newDefault(t, Options{Start: epoch}).NextKubeletChange(epoch); ok {
		t.Error("the default scenario changes its pods")
	}
}

func TestSampleFollowsWindowsAndJobs(t *testing.T) {
	b := life(t, lifeBase)
	s := collector.Sample{}
	sample := func(since time.Duration) {
		t.Helper()
		if err := b.Sample(context.Background(), epoch.Add(since), &s, nil); err != nil {
			t.Fatal(err)
		}
	}
	busy := func(gpu int) (float64, float64, []collector.Process) {
		g := &s.GPUs[gpu]
		a, _ := g.Values.Get(collector.GREngineActive)
		fb, _ := g.Values.Get(collector.FBUsed)
		return a, fb, g.Processes
	}
	// GPU 0's trainer runs from 2h to 30h: idle and empty before and after.
	for _, since := range []time.Duration{time.Hour, 30 * time.Hour} {
		sample(since)
		if a, fb, ps := busy(0); a != 0 || fb != 0 || len(ps) != 0 {
			t.Errorf("GPU 0 at %v: activity %v, %v MiB, processes %v; want none", since, a, fb, ps)
		}
	}
	sample(20 * time.Hour)
	if a, fb, ps := busy(0); a < 0.5 || fb == 0 || len(ps) != 1 || ps[0].PID != b.entries[0].pids[0] {
		t.Errorf("GPU 0 at 20h: activity %v, %v MiB, processes %v; want the trainer", a, fb, ps)
	}
	// GPU 1 runs build-n for 2 minutes of every 10, each with its own PID.
	sample(61 * time.Minute)
	if _, fb, ps := busy(1); fb == 0 || len(ps) != 1 || ps[0].PID != b.jobs[0].pid(6) {
		t.Errorf("GPU 1 at 61m: %v MiB, processes %v; want build-6's PID %d", fb, ps, b.jobs[0].pid(6))
	}
	sample(65 * time.Minute)
	if a, fb, ps := busy(1); a != 0 || fb != 0 || len(ps) != 0 {
		t.Errorf("GPU 1 between runs: activity %v, %v MiB, processes %v; want none", a, fb, ps)
	}
}

func TestSampleFailsInsideBackendFailingWindow(t *testing.T) {
	b := life(t, lifeBase)
	var s collector.Sample
	for _, tt := range []struct {
		since time.Duration
		fail  bool
	}{
		{5*time.Hour - time.Second, false}, {5 * time.Hour, true}, {5*time.Hour + 29*time.Minute, true}, {5*time.Hour + 30*time.Minute, false},
	} {
		err := b.Sample(context.Background(), epoch.Add(tt.since), &s, nil)
		if got := errors.Is(err, ErrBackendFailing); got != tt.fail {
			t.Errorf("Sample at %v = %v, want failing %v", tt.since, err, tt.fail)
		}
	}
}

func TestFaultWindows(t *testing.T) {
	b := life(t, lifeBase)
	h := time.Hour
	for _, tt := range []struct {
		since            time.Duration
		kubelet, stopped bool
	}{
		{h - time.Nanosecond, false, false}, {h, true, false}, {3*h - time.Nanosecond, true, false}, {3 * h, false, false},
		{10 * h, false, true}, {16*h - time.Nanosecond, false, true}, {16 * h, false, false},
	} {
		at := epoch.Add(tt.since)
		if got := b.KubeletDown(at); got != tt.kubelet {
			t.Errorf("KubeletDown at %v = %v", tt.since, got)
		}
		if got := b.ExporterStopped(at); got != tt.stopped {
			t.Errorf("ExporterStopped at %v = %v", tt.since, got)
		}
	}
	if got, want := b.HistoryOnlyEvents(), "exporter stopped at 10h0m0s for 6h0m0s"; got != want {
		t.Errorf("HistoryOnlyEvents = %q, want %q", got, want)
	}
	if got := newDefault(t, Options{}).HistoryOnlyEvents(); got != "" {
		t.Errorf("default scenario: HistoryOnlyEvents = %q", got)
	}
}

func TestFreePIDBlock(t *testing.T) {
	used := map[uint32]bool{5000: true, 5500: true}
	if got := freePIDBlock(used, 4500); got != 5501 {
		t.Errorf("block from 4500 = %d, want 5501 (past both used PIDs)", got)
	}
	if got := freePIDBlock(used, maxPID-10); got != 300 {
		t.Errorf("block near pid_max = %d, want 300", got)
	}
	if got := freePIDBlock(map[uint32]bool{}, 1000); got != 1000 {
		t.Errorf("block in an empty table = %d, want 1000", got)
	}
}

func TestJobsAreDeterministicAndTakeTheirDevice(t *testing.T) {
	scenario := strings.Replace(lifeBase, "resource: nvidia.com/gpu, device: {gpu: 1}, workload: dev",
		"resource: nvidia.com/gpu.shared, device: {gpu: 2, replica: 1}, workload: dev", 1)
	a, b := life(t, scenario), life(t, scenario)
	other := life(t, strings.Replace(scenario, "seed: 1", "seed: 2", 1))
	at := func(b *Backend) Allocation {
		allocs, _ := b.podsAt(time.Hour + time.Minute) // build-6
		if len(allocs) != 1 {
			t.Fatalf("allocations %+v, want build-6 alone", allocs)
		}
		return allocs[0]
	}
	x, y, z := at(a), at(b), at(other)
	if x.UID != y.UID || a.jobs[0].pid(6) != b.jobs[0].pid(6) {
		t.Errorf("two backends of one seed differ: %s/%d and %s/%d", x.UID, a.jobs[0].pid(6), y.UID, b.jobs[0].pid(6))
	}
	if x.UID == z.UID {
		t.Errorf("seeds 1 and 2 give build-6 the same UID %s", x.UID)
	}
	if want := a.inv.GPUs[2].UUID + "::1"; x.Pod != "build-6" || x.Resource != "nvidia.com/gpu.shared" || len(x.DeviceIDs) != 1 || x.DeviceIDs[0] != want {
		t.Errorf("build-6 = %+v, want replica %s", x, want)
	}
}
