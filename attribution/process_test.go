package attribution

import (
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	uidTrain    = "8d2f6a4e-3b1c-4d5e-9f0a-1b2c3d4e5f60"
	uidInfer    = "a1b2c3d4-e5f6-4a5b-8c9d-0e1f2a3b4c5d"
	uidNotebook = "11112222-3333-4444-5555-666677778888"
	cid         = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParseCgroupLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want CgroupRef
		ok   bool
	}{
		{"v2 systemd containerd burstable",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/cri-containerd-" + cid + ".scope",
			CgroupRef{uidTrain, cid}, true},
		{"v2 systemd cri-o besteffort",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poda1b2c3d4_e5f6_4a5b_8c9d_0e1f2a3b4c5d.slice/crio-" + cid + ".scope",
			CgroupRef{uidInfer, cid}, true},
		{"v2 systemd guaranteed",
			"0::/kubepods.slice/kubepods-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/cri-containerd-" + cid + ".scope",
			CgroupRef{uidTrain, cid}, true},
		{"v1 systemd docker",
			"11:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/docker-" + cid + ".scope",
			CgroupRef{uidTrain, cid}, true},
		{"v1 cgroupfs docker or containerd",
			"4:cpu,cpuacct:/kubepods/burstable/pod" + uidTrain + "/" + cid,
			CgroupRef{uidTrain, cid}, true},
		{"v1 cgroupfs cri-o",
			"1:name=systemd:/kubepods/besteffort/pod" + uidTrain + "/crio-" + cid,
			CgroupRef{uidTrain, cid}, true},
		{"v2 cgroupfs guaranteed",
			"0::/kubepods/pod" + uidTrain + "/" + cid,
			CgroupRef{uidTrain, cid}, true},
		{"kind: nested under a kubelet slice",
			"0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/cri-containerd-" + cid + ".scope",
			CgroupRef{uidTrain, cid}, true},
		{"nested under a docker container",
			"0::/docker/" + cid + "/kubepods/burstable/pod" + uidTrain + "/" + cid,
			CgroupRef{uidTrain, cid}, true},
		{"private cgroup namespace, cgroupfs",
			"0::/../../../burstable/pod" + uidTrain + "/" + cid,
			CgroupRef{uidTrain, cid}, true},
		{"private cgroup namespace, systemd",
			"0::/../../kubepods-besteffort-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/cri-containerd-" + cid + ".scope",
			CgroupRef{uidTrain, cid}, true},
		{"private cgroup namespace, host init", "0::/../../../../init.scope", CgroupRef{}, false},
		{"static pod hash UID",
			"0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" + cid,
			CgroupRef{"0123456789abcdef0123456789abcdef", cid}, true},
		{"pod level (pause or a pod-level process)",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice",
			CgroupRef{uidTrain, ""}, true},
		{"cri-o conmon names the pod only",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/crio-conmon-" + cid + ".scope",
			CgroupRef{uidTrain, ""}, true},
		{"host init", "0::/init.scope", CgroupRef{}, false},
		{"host service", "0::/system.slice/containerd.service", CgroupRef{}, false},
		{"cgroup namespace root", "0::/", CgroupRef{}, false},
		{"pod segment outside kubepods", "0::/pod" + uidTrain + "/" + cid, CgroupRef{}, false},
		{"podman slice", "0::/kubepods.slice/user-podman.slice", CgroupRef{}, false},
		{"short UID", "0::/kubepods/burstable/pod1234/" + cid, CgroupRef{}, false},
		{"uppercase UID", "0::/kubepods/burstable/pod" + strings.ToUpper(uidTrain) + "/" + cid, CgroupRef{}, false},
		{"no colons", "kubepods/pod" + uidTrain, CgroupRef{}, false},
		{"one colon", "0:/kubepods/pod" + uidTrain, CgroupRef{}, false},
		{"empty", "", CgroupRef{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseCgroupLine(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ParseCgroupLine(%q) = %+v, %v; want %+v, %v", tt.name, tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseCgroupLine(f *testing.F) {
	for _, s := range []string{
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f6a4e_3b1c_4d5e_9f0a_1b2c3d4e5f60.slice/cri-containerd-" + cid + ".scope",
		"4:cpu,cpuacct:/kubepods/burstable/pod" + uidTrain + "/" + cid,
		"1:name=systemd:/kubepods/besteffort/pod" + uidTrain + "/crio-" + cid,
		"0::/init.scope", "::", "0::/kubepods/pod", "0::/../../burstable/pod" + uidTrain + "/" + cid, "0::/kubepods-pod.slice",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ref, ok := ParseCgroupLine(line)
		if !ok {
			if ref != (CgroupRef{}) {
				t.Fatalf("ParseCgroupLine(%q) = %+v without ok", line, ref)
			}
			return
		}
		if len(ref.PodUID) < 32 || len(ref.PodUID) > 36 || !isHexOrDash(ref.PodUID) {
			t.Fatalf("ParseCgroupLine(%q): bad pod UID %q", line, ref.PodUID)
		}
		if ref.ContainerID != "" && (!isHex(ref.ContainerID) || !strings.Contains(line, ref.ContainerID)) {
			t.Fatalf("ParseCgroupLine(%q): bad container ID %q", line, ref.ContainerID)
		}
		_, rest, _ := strings.Cut(line, ":")
		_, path, _ := strings.Cut(rest, ":")
		if !strings.Contains(path, "kubepods") && !slices.Contains(strings.Split(path, "/"), "..") {
			t.Fatalf("ParseCgroupLine(%q) found a pod outside kubepods", line)
		}
	})
}

// stepClock is a settable clock for the resolver.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *stepClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

func fixtureResolver(t *testing.T, procRoot string, log *strings.Builder) *ProcessResolver {
	t.Helper()
	cfg := ProcessConfig{ProcRoot: procRoot, PodLogsDir: "testdata/pods", Clock: &stepClock{now: time.Unix(1e9, 0)}}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return NewProcessResolver(cfg)
}

func TestResolveFixtures(t *testing.T) {
	r := fixtureResolver(t, "testdata/proc", nil)
	tests := []struct {
		pid        uint32
		ns, pod    string
		containers string
		idSuffix   string // the container ID ends with the PID in hex
		err        error
	}{
		{pid: 101, ns: "ml", pod: "train", containers: "trainer", idSuffix: "65"},        // v2 systemd containerd
		{pid: 102, ns: "ml", pod: "infer", containers: "server,sidecar", idSuffix: "66"}, // v2 systemd CRI-O
		{pid: 103, ns: "dev", pod: "notebook", containers: "jupyter", idSuffix: "67"},    // v1 cgroupfs docker
		{pid: 104, ns: "dev", pod: "batch", containers: "job", idSuffix: "68"},           // v1 systemd docker
		{pid: 105, ns: "ci", pod: "runner", containers: "runner", idSuffix: "69"},        // v1 cgroupfs CRI-O
		{pid: 106, ns: "ci", pod: "guaranteed", containers: "main", idSuffix: "6a"},      // v2 cgroupfs containerd
		{pid: 107, ns: "ml", pod: "infer", containers: "server,sidecar", idSuffix: "6b"}, // second container
		{pid: 200, err: ErrNotInPod},    // host process
		{pid: 201, err: ErrNotInPod},    // pod not in the log dir
		{pid: 999, err: fs.ErrNotExist}, // no such PID
	}
	for _, tt := range tests {
		got, err := r.Resolve(tt.pid)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%d) = %+v, %v; want error %v", tt.pid, got, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%d): %v", tt.pid, err)
			continue
		}
		if got.Namespace != tt.ns || got.Pod != tt.pod || strings.Join(got.Containers, ",") != tt.containers ||
			len(got.ContainerID) != 64 || !strings.HasSuffix(got.ContainerID, tt.idSuffix) {
			t.Errorf("Resolve(%d) = %+v; want %s/%s containers %s, ID …%s", tt.pid, got, tt.ns, tt.pod, tt.containers, tt.idSuffix)
		}
	}
}

func TestSplit(t *testing.T) {
	const gib = 1 << 30
	nan := math.NaN()
	holder := func(ns, pod, ctr string) Holder {
		return Holder{Namespace: ns, Pod: pod, Container: ctr, Resource: "nvidia.com/gpu.shared", Sharing: TimeSlicing, Replicas: 1}
	}
	tests := []struct {
		name         string
		holders      []Holder
		procs        []ProcessSample
		want         []HolderUsage
		unattributed HolderUsage
	}{
		{
			name:    "time-sliced GPU: each holder gets its own processes, nobody the device total",
			holders: []Holder{holder("dev", "notebook", "jupyter"), holder("ml", "infer", "server"), holder("ml", "train", "trainer")},
			procs: []ProcessSample{
				{PID: 101, Utilization: 0.5, UsedMemoryBytes: 4 * gib},
				{PID: 102, Utilization: 0.125, UsedMemoryBytes: gib},
				{PID: 107, Utilization: 0.125, UsedMemoryBytes: gib}, // other container of ml/infer: its only holder
				{PID: 200, Utilization: 0.25, UsedMemoryBytes: 2 * gib},
			},
			want: []HolderUsage{
				{Utilization: 0, MemoryUsedBytes: 0, Processes: 0},
				{Utilization: 0.25, MemoryUsedBytes: 2 * gib, Processes: 2},
				{Utilization: 0.5, MemoryUsedBytes: 4 * gib, Processes: 1},
			},
			unattributed: HolderUsage{Utilization: 0.25, MemoryUsedBytes: 2 * gib, Processes: 1},
		},
		{
			// Their use is not known: NaN, not a measured 0 (a HAMi pod's
			// server and tokenizer on one GPU would be idle otherwise).
			name:         "two containers of one pod hold the device: the log dir cannot tell, unattributed, unknown",
			holders:      []Holder{holder("ml", "infer", "server"), holder("ml", "infer", "sidecar")},
			procs:        []ProcessSample{{PID: 102, Utilization: 0.5, UsedMemoryBytes: gib}},
			want:         []HolderUsage{{Utilization: nan}, {Utilization: nan}},
			unattributed: HolderUsage{Utilization: 0.5, MemoryUsedBytes: gib, Processes: 1},
		},
		{
			name:    "two holders of a one-container pod: the log dir names the container",
			holders: []Holder{holder("dev", "notebook", "jupyter"), holder("dev", "notebook", "gone")},
			procs:   []ProcessSample{{PID: 103, Utilization: 0.5, UsedMemoryBytes: gib}},
			want:    []HolderUsage{{Utilization: 0.5, MemoryUsedBytes: gib, Processes: 1}, {}},
		},
		{
			name:    "unknown utilization is NaN, not zero; memory still sums",
			holders: []Holder{holder("ml", "train", "trainer"), holder("ci", "runner", "runner")},
			procs: []ProcessSample{
				{PID: 101, Utilization: nan, UsedMemoryBytes: gib},
				{PID: 105, Utilization: 0.5, UsedMemoryBytes: gib},
				{PID: 999, Utilization: 0.5, UsedMemoryBytes: gib}, // vanished
				{PID: 201, Utilization: 0.5, UsedMemoryBytes: gib}, // a pod that does not hold it
			},
			want: []HolderUsage{
				{Utilization: nan, MemoryUsedBytes: gib, Processes: 1},
				{Utilization: 0.5, MemoryUsedBytes: gib, Processes: 1},
			},
			unattributed: HolderUsage{Utilization: 1, MemoryUsedBytes: 2 * gib, Processes: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixtureResolver(t, "testdata/proc", nil)
			u := r.Split(tt.procs, tt.holders)
			if !u.Up {
				t.Error("Up = false with host procfs fixtures")
			}
			for i := range tt.want {
				if !sameUsage(u.Holders[i], tt.want[i]) {
					t.Errorf("holder %d (%s/%s/%s) = %+v, want %+v", i, tt.holders[i].Namespace, tt.holders[i].Pod, tt.holders[i].Container, u.Holders[i], tt.want[i])
				}
			}
			if !sameUsage(u.Unattributed, tt.unattributed) {
				t.Errorf("unattributed = %+v, want %+v", u.Unattributed, tt.unattributed)
			}
		})
	}
}

func sameUsage(a, b HolderUsage) bool {
	sameUtil := a.Utilization == b.Utilization || math.IsNaN(a.Utilization) && math.IsNaN(b.Utilization)
	return sameUtil && a.MemoryUsedBytes == b.MemoryUsedBytes && a.Processes == b.Processes
}

func TestProcessAttributionUp(t *testing.T) {
	holders := []Holder{{Namespace: "ml", Pod: "train", Container: "trainer", Replicas: 1, Share: 1}}
	t.Run("no hostPID: PID 1 runs in a pod", func(t *testing.T) {
		var log strings.Builder
		r := fixtureResolver(t, "testdata/proc-nohostpid", &log)
		for range 3 {
			if u := r.Split(nil, holders); u.Up {
				t.Fatal("Up = true in a pod's PID namespace")
			}
		}
		if n := strings.Count(log.String(), "hostPID"); n != 1 {
			t.Errorf("down logged %d times, want 1:\n%s", n, log.String())
		}
	})
	t.Run("procfs unreadable", func(t *testing.T) {
		if r := fixtureResolver(t, filepath.Join(t.TempDir(), "none"), nil); r.Up() {
			t.Error("Up = true without procfs")
		}
	})
	t.Run("NVML PIDs absent from procfs, then present", func(t *testing.T) {
		var log strings.Builder
		r := fixtureResolver(t, "testdata/proc", &log)
		if !r.Up() {
			t.Fatal("Up = false before any process list")
		}
		u := r.Split([]ProcessSample{{PID: 4001, Utilization: 0.5}, {PID: 4002, Utilization: 0.5}}, holders)
		if u.Up || r.Up() {
			t.Error("Up = true when no PID exists in procfs")
		}
		if u := r.Split(nil, holders); u.Up {
			t.Error("an empty process list brought attribution back up")
		}
		if u := r.Split([]ProcessSample{{PID: 101, Utilization: 0.5}}, holders); !u.Up || u.Holders[0].Processes != 1 {
			t.Errorf("resolvable PID: Up=%v usage=%+v", u.Up, u.Holders)
		}
		if n := strings.Count(log.String(), "process attribution down"); n != 1 {
			t.Errorf("down logged %d times, want 1:\n%s", n, log.String())
		}
	})
}

// TestProcessExitOnOneDevice: a PID that vanished on one device while another
// device's PIDs resolve does not take attribution down; PIDs missing for longer
// than the rescan interval do.
func TestProcessExitOnOneDevice(t *testing.T) {
	holders := []Holder{{Namespace: "ml", Pod: "train", Container: "trainer", Replicas: 1, Share: 1}}
	clock := &stepClock{now: time.Unix(1e9, 0)}
	r := NewProcessResolver(ProcessConfig{ProcRoot: "testdata/proc", PodLogsDir: "testdata/pods", Clock: clock})
	if u := r.Split([]ProcessSample{{PID: 101, Utilization: 0.5}}, holders); !u.Up {
		t.Fatal("Up = false with a resolvable PID")
	}
	if u := r.Split([]ProcessSample{{PID: 4001, Utilization: 0.5}}, holders); !u.Up {
		t.Error("a process that exited on a second device took attribution down")
	}
	clock.Advance(DefaultInterval)
	if u := r.Split([]ProcessSample{{PID: 4001, Utilization: 0.5}}, holders); u.Up {
		t.Error("Up = true although no PID resolved for a whole rescan interval")
	}
}

func TestPodLogsRescannedAtMostEveryInterval(t *testing.T) {
	dir := t.TempDir()
	proc, pods := filepath.Join(dir, "proc"), filepath.Join(dir, "pods")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proc, "1", "cgroup"), "0::/init.scope\n")
	write(filepath.Join(proc, "42", "cgroup"), "0::/kubepods/besteffort/pod"+uidTrain+"/"+cid+"\n")
	write(filepath.Join(pods, "other_pod_"+uidInfer, "c", "0.log"), "")
	clock := &stepClock{now: time.Unix(1e9, 0)}
	r := NewProcessResolver(ProcessConfig{ProcRoot: proc, PodLogsDir: pods, RescanInterval: 5 * time.Second, Clock: clock})

	if _, err := r.Resolve(42); !errors.Is(err, ErrNotInPod) {
		t.Fatalf("Resolve before the pod's log dir exists: %v, want ErrNotInPod", err)
	}
	write(filepath.Join(pods, "ml_train_"+uidTrain, "trainer", "0.log"), "")
	clock.Advance(4 * time.Second)
	if _, err := r.Resolve(42); !errors.Is(err, ErrNotInPod) {
		t.Fatalf("Resolve within the interval rescanned: %v", err)
	}
	clock.Advance(time.Second)
	got, err := r.Resolve(42)
	if err != nil || got.Pod != "train" || got.Namespace != "ml" {
		t.Fatalf("Resolve after the interval = %+v, %v; want ml/train", got, err)
	}
}
