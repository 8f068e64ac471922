package sim

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

func TestPods(t *testing.T) {
	b := newDefault(t, Options{})
	allocs, avail := b.podsAt(0)
	inv := b.inv
	if len(allocs) != 14 {
		t.Fatalf("%d allocations, want 14: %+v", len(allocs), allocs)
	}
	byPod := map[string]Allocation{}
	for _, a := range allocs {
		if len(a.DeviceIDs) != 1 {
			t.Errorf("%s/%s holds %v", a.Namespace, a.Pod, a.DeviceIDs)
		}
		byPod[a.Namespace+"/"+a.Pod] = a
	}
	tests := []struct {
		pod, resource, device string
	}{
		{"ml-research/llm-pretrain-0", "nvidia.com/gpu", inv.GPUs[0].UUID},
		{"dev-alice/notebook-0", "nvidia.com/gpu.shared", inv.GPUs[2].UUID + "::0"},
		{"dev-carol/notebook-0", "nvidia.com/gpu.shared", inv.GPUs[2].UUID + "::2"},
		{"serving/embed-api-0", "nvidia.com/mig-3g.40gb", inv.GPUs[6].Instances[0].UUID},
		{"dev-dave/mig-notebook-0", "nvidia.com/mig-1g.10gb", inv.GPUs[7].Instances[4].UUID},
	}
	for _, tt := range tests {
		a := byPod[tt.pod]
		if a.Resource != tt.resource || len(a.DeviceIDs) != 1 || a.DeviceIDs[0] != tt.device {
			t.Errorf("%s = %+v, want %s %s", tt.pod, a, tt.resource, tt.device)
		}
	}
	if a, b := byPod["dev-alice/notebook-0"].UID, byPod["dev-bob/notebook-0"].UID; a == b || a == "" {
		t.Errorf("pods share UID %q", a)
	}

	want := map[string]int{"nvidia.com/gpu": 5, "nvidia.com/gpu.shared": 4, "nvidia.com/mig-1g.10gb": 5, "nvidia.com/mig-2g.20gb": 2, "nvidia.com/mig-3g.40gb": 1}
	for i, a := range avail {
		if i > 0 && avail[i-1].Resource >= a.Resource {
			t.Errorf("allocatable not sorted: %s after %s", a.Resource, avail[i-1].Resource)
		}
		if len(a.DeviceIDs) != want[a.Resource] {
			t.Errorf("%s: %d devices, want %d", a.Resource, len(a.DeviceIDs), want[a.Resource])
		}
		delete(want, a.Resource)
	}
	if len(want) != 0 {
		t.Errorf("resources missing from allocatable: %v", want)
	}
	// GPU 5 is allocatable and held by no one.
	found := false
	for _, a := range avail {
		for _, id := range a.DeviceIDs {
			found = found || id == inv.GPUs[5].UUID
		}
	}
	if !found {
		t.Error("unallocated GPU 5 is not allocatable")
	}
	// The caller owns the slices.
	allocs[0].DeviceIDs[0] = "changed"
	if again, _ := b.podsAt(0); again[0].DeviceIDs[0] == "changed" {
		t.Error("Pods returned shared slices")
	}
}

func TestPodsMergesDevicesOfOneContainer(t *testing.T) {
	sc, err := Load("../../testdata/scenarios/h200-training.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	allocs, _ := b.podsAt(0)
	if len(allocs) != 3 || allocs[0].Pod != "pretrain-0" || len(allocs[0].DeviceIDs) != 3 {
		t.Fatalf("allocations %+v, want pretrain-0 with 3 GPUs first", allocs)
	}
}

// TestKubeletProcFS: at the start, the kubelet's pod log directory has a
// directory per running container, and every process the backend samples has
// a cgroup file naming its pod's UID.
func TestKubeletProcFS(t *testing.T) {
	b := newDefault(t, Options{})
	files, proc, logs := startFiles(t, b)
	allocs, _ := b.podsAt(0)
	uidOf := map[string]string{}
	for _, a := range allocs {
		uidOf[a.Namespace+"/"+a.Pod] = a.UID
		if _, err := files.ReadDir(filepath.Join(logs, a.Namespace+"_"+a.Pod+"_"+a.UID, a.Container)); err != nil {
			t.Errorf("no log dir for %s/%s/%s: %v", a.Namespace, a.Pod, a.Container, err)
		}
	}
	line := regexp.MustCompile(`^0::/kubepods\.slice/kubepods-burstable\.slice/kubepods-burstable-pod([0-9a-f_]{36})\.slice/cri-containerd-([0-9a-f]{64})\.scope\n$`)
	s := sampleAt(t, b, t0.Add(time.Hour))
	seenUIDs := map[string]bool{}
	n := 0
	for _, g := range s.GPUs {
		for _, p := range g.Processes {
			n++
			data, err := files.ReadFile(filepath.Join(proc, itoa(p.PID), "cgroup"))
			if err != nil {
				t.Fatalf("PID %d: %v", p.PID, err)
			}
			m := line.FindStringSubmatch(string(data))
			if m == nil {
				t.Fatalf("PID %d cgroup %q", p.PID, data)
			}
			seenUIDs[strings.ReplaceAll(m[1], "_", "-")] = true
		}
	}
	if n != 15 {
		t.Errorf("%d processes, want 15", n)
	}
	for pod, uid := range uidOf {
		if !seenUIDs[uid] {
			t.Errorf("no process of %s (UID %s) in the procfs", pod, uid)
		}
	}
	// One entry per process, and the host's init (PID 1, in no pod).
	entries, _ := files.ReadDir(proc)
	if len(entries) != n+1 {
		t.Errorf("%d procfs entries for %d processes and init", len(entries), n)
	}
	if data, err := files.ReadFile(filepath.Join(proc, "1", "cgroup")); err != nil || string(data) != "0::/init.scope\n" {
		t.Errorf("PID 1 cgroup %q (%v), want the host's init scope", data, err)
	}
}

func itoa(pid uint32) string { return strconv.FormatUint(uint64(pid), 10) }

func TestEvents(t *testing.T) {
	sc, err := Load("../../testdata/scenarios/a100-inference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	check := func(at time.Duration, xids []collector.XIDCount, last float64, lost, healthy bool) {
		t.Helper()
		s := sampleAt(t, b, t0.Add(at))
		r := s.GPUs[3]
		if r.Lost != lost || r.Healthy != healthy || len(r.XIDs) != len(xids) {
			t.Fatalf("+%v: lost %v healthy %v XIDs %+v", at, r.Lost, r.Healthy, r.XIDs)
		}
		for i := range xids {
			if r.XIDs[i] != xids[i] {
				t.Fatalf("+%v: XIDs %+v, want %+v", at, r.XIDs, xids)
			}
		}
		if lost {
			if r.Values.Has(collector.PowerUsage) || len(r.Processes) != 0 {
				t.Fatalf("+%v: a lost GPU still reports values", at)
			}
		} else if got := get(t, &r.Values, collector.XIDLast); got != last {
			t.Fatalf("+%v: last XID %v, want %v", at, got, last)
		}
		if !s.GPUs[2].Healthy || !s.GPUs[2].Values.Has(collector.PowerUsage) {
			t.Fatalf("+%v: another GPU suffered too", at)
		}
	}
	check(5*time.Hour, nil, 0, false, true)
	check(6*time.Hour, []collector.XIDCount{{XID: 31, Count: 1}}, 31, false, true)
	check(30*time.Hour, []collector.XIDCount{{XID: 31, Count: 1}}, 31, false, true)
	check(36*time.Hour, []collector.XIDCount{{XID: 31, Count: 1}, {XID: 79, Count: 1}}, 79, true, false)
	check(40*time.Hour, []collector.XIDCount{{XID: 31, Count: 1}, {XID: 79, Count: 1}}, 79, true, false)
}

func TestStartDefaultsToFirstSample(t *testing.T) {
	b, err := New(Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := t0.Add(100 * time.Hour)
	s := sampleAt(t, b, first)
	if get(t, &s.GPUs[2].Values, collector.XIDLast) != 0 {
		t.Fatal("an event 2h after the start fired at the start")
	}
	s = sampleAt(t, b, first.Add(2*time.Hour))
	if got := get(t, &s.GPUs[2].Values, collector.XIDLast); got != 13 {
		t.Fatalf("last XID %v 2h after the first sample, want 13", got)
	}
}

// bigNode is the budget node of DESIGN.md: 8 GPUs × 7 MIG instances, 56 pods.
func bigNode(tb testing.TB) *Backend {
	tb.Helper()
	layout := []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}
	sc := &Scenario{
		GPUs:      []GPUGroup{{Model: "NVIDIA H100 80GB HBM3", Count: 8, MIG: layout}},
		Workloads: []Workload{{Name: "serve", Pattern: Inference, FBMiB: 8000}, {Name: "dev", Pattern: BurstyDev, FBMiB: 4000}},
	}
	for g := range 8 {
		for i := range 7 {
			w := "serve"
			if i%3 == 2 {
				w = "dev"
			}
			sc.Pods = append(sc.Pods, Pod{
				Namespace: "team-" + itoa(uint32(g)), Pod: "pod-" + itoa(uint32(i)), Container: "main",
				Resource: "nvidia.com/mig-1g.10gb", Device: Device{GPU: g, Instance: &[]int{i}[0]}, Workload: w,
			})
		}
	}
	b, err := New(sc, Options{Start: t0})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestSampleDoesNotAllocate(t *testing.T) {
	b := bigNode(t)
	var s collector.Sample
	now := t0
	if err := b.Sample(context.Background(), now, &s, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(time.Second)
		if err := b.Sample(context.Background(), now, &s, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Sample allocates %v times per call in steady state", allocs)
	}
}

func BenchmarkSample(b *testing.B) {
	be := bigNode(b)
	var s collector.Sample
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if err := be.Sample(context.Background(), now, &s, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVirtualWeek samples the budget node every 30 s for a week.
func BenchmarkVirtualWeek(b *testing.B) {
	for b.Loop() {
		be := bigNode(b)
		var s collector.Sample
		for d := time.Duration(0); d < 7*24*time.Hour; d += 30 * time.Second {
			if err := be.Sample(context.Background(), t0.Add(d), &s, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}
