package attribution_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const (
	gpu0  = "GPU-00000000-aaaa-bbbb-cccc-000000000000"
	gpu1  = "GPU-11111111-aaaa-bbbb-cccc-111111111111"
	gpu2  = "GPU-22222222-aaaa-bbbb-cccc-222222222222"
	mig0a = "MIG-0a0a0a0a-aaaa-bbbb-cccc-0a0a0a0a0a0a"
	mig0b = "MIG-0b0b0b0b-aaaa-bbbb-cccc-0b0b0b0b0b0b"
	mig1a = "MIG-1a1a1a1a-aaaa-bbbb-cccc-1a1a1a1a1a1a"
)

// node is a device table: three GPUs, GPU 1 in MIG mode with two instances, GPU 2 with one.
var node = []attribution.Device{
	{UUID: gpu0, Minor: 0, GPUInstanceID: -1, ComputeInstanceID: -1},
	{UUID: gpu1, Minor: 1, GPUInstanceID: -1, ComputeInstanceID: -1},
	{UUID: mig0a, ParentUUID: gpu1, Minor: 1, GPUInstanceID: 1, ComputeInstanceID: 0},
	{UUID: mig0b, ParentUUID: gpu1, Minor: 1, GPUInstanceID: 5, ComputeInstanceID: 0},
	{UUID: gpu2, Minor: 2, GPUInstanceID: -1, ComputeInstanceID: -1},
	{UUID: mig1a, ParentUUID: gpu2, Minor: 2, GPUInstanceID: 2, ComputeInstanceID: 0},
}

// fakeClock is a settable clock whose ticker the test drives.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), tick: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// shortSocket returns a socket path in a short temporary directory (unix socket
// paths are limited to 108 bytes).
func shortSocket(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "k.sock")
}

func startSim(t testing.TB, path string) *kubeletsim.Server {
	t.Helper()
	s, err := kubeletsim.Start(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

type harness struct {
	sim    *kubeletsim.Server
	client *attribution.Client
	clock  *fakeClock
	log    *syncBuffer
	socket string
}

func newHarness(t testing.TB, mod func(*attribution.Config)) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), log: &syncBuffer{}, socket: shortSocket(t)}
	h.sim = startSim(t, h.socket)
	cfg := attribution.Config{
		Socket:     h.socket,
		Timeout:    5 * time.Second,
		StaleAfter: 5 * time.Minute,
		Logger:     slog.New(slog.NewTextHandler(h.log, nil)),
		Clock:      h.clock,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := attribution.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDevices(node)
	h.client = c
	return h
}

// hangKubelet makes the kubelet hold every answer for an hour; the returned
// channel receives once a request has arrived.
func (h *harness) hangKubelet() <-chan struct{} {
	asked := make(chan struct{}, 1)
	h.sim.SetOnRequest(func(string) {
		select {
		case asked <- struct{}{}:
		default:
		}
	})
	h.sim.SetDelay(time.Hour)
	return asked
}

func (h *harness) refresh(t testing.TB) *attribution.Snapshot {
	t.Helper()
	if err := h.client.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	return h.client.Current()
}

func pod(ns, name string, ctrs ...kubeletsim.Container) kubeletsim.Pod {
	return kubeletsim.Pod{Namespace: ns, Name: name, Containers: ctrs}
}

func ctr(name, resource string, ids ...string) kubeletsim.Container {
	return kubeletsim.Container{Name: name, Devices: []kubeletsim.Devices{{Resource: resource, IDs: ids}}}
}

func TestClientAssignments(t *testing.T) {
	const gpu, shared = "nvidia.com/gpu", "nvidia.com/gpu.shared"
	tests := []struct {
		name        string
		mps         []string
		pods        []kubeletsim.Pod
		allocatable []kubeletsim.Devices
		want        map[string][]attribution.Holder
		wantAlloc   map[string][]string
		// wantReplicas is the replicas offered per device; nil: not checked.
		wantReplicas map[string]int
		wantUnknown  uint64
	}{
		{
			name: "exclusive GPUs; a GPU no pod holds is only allocatable",
			pods: []kubeletsim.Pod{
				pod("ml", "train", ctr("main", gpu, gpu0)),
				pod("ml", "infer", ctr("srv", gpu, gpu2)),
			},
			allocatable: []kubeletsim.Devices{{Resource: gpu, IDs: []string{gpu2, gpu0, gpu1}}},
			want: map[string][]attribution.Holder{
				gpu0: {{Namespace: "ml", Pod: "train", Container: "main", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
				gpu2: {{Namespace: "ml", Pod: "infer", Container: "srv", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
			},
			wantAlloc: map[string][]string{gpu: {gpu0, gpu1, gpu2}},
		},
		{
			name: "time-sliced replicas: shares of the replicas offered, two of four free",
			pods: []kubeletsim.Pod{
				pod("a", "p1", ctr("c", shared, gpu0+"::0")),
				pod("b", "p2", ctr("c", shared, gpu0+"::1")),
			},
			allocatable: []kubeletsim.Devices{{Resource: shared, IDs: []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::2", gpu0 + "::3"}}},
			want: map[string][]attribution.Holder{
				gpu0: {
					{Namespace: "a", Pod: "p1", Container: "c", Resource: shared, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.25},
					{Namespace: "b", Pod: "p2", Container: "c", Resource: shared, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.25},
				},
			},
			wantAlloc:    map[string][]string{shared: {gpu0}},
			wantReplicas: map[string]int{gpu0: 4},
		},
		{
			// Replicas offered count distinct replica indices: an ID listed
			// twice offers one replica, so the holder of one of two pays a
			// half, not a third.
			name:        "a replica the kubelet lists twice is offered once",
			pods:        []kubeletsim.Pod{pod("a", "p1", ctr("c", shared, gpu0+"::0"))},
			allocatable: []kubeletsim.Devices{{Resource: shared, IDs: []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::1"}}},
			want: map[string][]attribution.Holder{
				gpu0: {{Namespace: "a", Pod: "p1", Container: "c", Resource: shared, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5}},
			},
			wantAlloc:    map[string][]string{shared: {gpu0}},
			wantReplicas: map[string]int{gpu0: 2},
		},
		{
			name:        "a lone holder of one of four replicas pays a quarter",
			pods:        []kubeletsim.Pod{pod("a", "p1", ctr("c", shared, gpu0+"::2"))},
			allocatable: []kubeletsim.Devices{{Resource: shared, IDs: []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::2", gpu0 + "::3"}}},
			want: map[string][]attribution.Holder{
				gpu0: {{Namespace: "a", Pod: "p1", Container: "c", Resource: shared, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.25}},
			},
			wantAlloc:    map[string][]string{shared: {gpu0}},
			wantReplicas: map[string]int{gpu0: 4},
		},
		{
			name: "replicas weigh shares; MPS by resource name; not advertised: replicas held stand in",
			mps:  []string{"nvidia.com/gpu.mps"},
			pods: []kubeletsim.Pod{
				pod("a", "big", ctr("c", "nvidia.com/gpu.mps", gpu0+"::0", gpu0+"::1", gpu0+"::2")),
				pod("b", "small", ctr("c", "nvidia.com/gpu.mps", gpu0+"::3")),
			},
			want: map[string][]attribution.Holder{
				gpu0: {
					{Namespace: "a", Pod: "big", Container: "c", Resource: "nvidia.com/gpu.mps", Sharing: attribution.MPS, Replicas: 3, Share: 0.75},
					{Namespace: "b", Pod: "small", Container: "c", Resource: "nvidia.com/gpu.mps", Sharing: attribution.MPS, Replicas: 1, Share: 0.25},
				},
			},
			wantAlloc: map[string][]string{},
		},
		{
			name: "MIG instances of two profiles, modern and legacy IDs",
			pods: []kubeletsim.Pod{
				pod("ml", "small", ctr("c", "nvidia.com/mig-1g.10gb", mig0a)),
				pod("ml", "large", ctr("c", "nvidia.com/mig-3g.40gb", "MIG-"+gpu1+"/5/0")),
				pod("ml", "shared", ctr("c", "nvidia.com/mig-2g.20gb.shared", mig1a+"::0")),
			},
			allocatable: []kubeletsim.Devices{
				{Resource: "nvidia.com/mig-1g.10gb", IDs: []string{mig0a}},
				{Resource: "nvidia.com/mig-3g.40gb", IDs: []string{mig0b}},
			},
			want: map[string][]attribution.Holder{
				mig0a: {{Namespace: "ml", Pod: "small", Container: "c", Resource: "nvidia.com/mig-1g.10gb", Sharing: attribution.MIG, Replicas: 1, Share: 1}},
				mig0b: {{Namespace: "ml", Pod: "large", Container: "c", Resource: "nvidia.com/mig-3g.40gb", Sharing: attribution.MIG, Replicas: 1, Share: 1}},
				mig1a: {{Namespace: "ml", Pod: "shared", Container: "c", Resource: "nvidia.com/mig-2g.20gb.shared", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 1}},
			},
			wantAlloc: map[string][]string{"nvidia.com/mig-1g.10gb": {mig0a}, "nvidia.com/mig-3g.40gb": {mig0b}},
		},
		{
			name: "GKE IDs",
			pods: []kubeletsim.Pod{
				pod("g", "whole", ctr("c", gpu, "nvidia0")),
				pod("g", "slice0", ctr("c", gpu, "nvidia2/vgpu0")),
				pod("g", "slice1", ctr("c", gpu, "nvidia2/vgpu1")),
				pod("g", "mig", ctr("c", gpu, "nvidia1/gi5")),
				pod("g", "migslice", ctr("c", gpu, "nvidia1/gi1/vgpu0")),
			},
			allocatable: []kubeletsim.Devices{{Resource: gpu, IDs: []string{"nvidia0", "nvidia2/vgpu0", "nvidia2/vgpu1"}}},
			want: map[string][]attribution.Holder{
				gpu0:  {{Namespace: "g", Pod: "whole", Container: "c", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
				mig0b: {{Namespace: "g", Pod: "mig", Container: "c", Resource: gpu, Sharing: attribution.MIG, Replicas: 1, Share: 1}},
				mig0a: {{Namespace: "g", Pod: "migslice", Container: "c", Resource: gpu, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 1}},
				gpu2: {
					{Namespace: "g", Pod: "slice0", Container: "c", Resource: gpu, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5},
					{Namespace: "g", Pod: "slice1", Container: "c", Resource: gpu, Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5},
				},
			},
			wantAlloc:    map[string][]string{gpu: {gpu0, gpu2}},
			wantReplicas: map[string]int{gpu0: 1, gpu2: 2},
		},
		{
			name: "unknown IDs are counted, other resources ignored",
			pods: []kubeletsim.Pod{
				pod("x", "ok", ctr("c", gpu, gpu0, "GPU-99999999-0000-0000-0000-999999999999", "bogus", "nvidia7", "MIG-"+gpu1+"/9/0")),
				pod("x", "nic", ctr("c", "example.com/nic", "bogus")),
			},
			allocatable: []kubeletsim.Devices{{Resource: gpu, IDs: []string{gpu0, "??"}}},
			want: map[string][]attribution.Holder{
				gpu0: {{Namespace: "x", Pod: "ok", Container: "c", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
			},
			wantAlloc:   map[string][]string{gpu: {gpu0}},
			wantUnknown: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *attribution.Config) { c.MPSResources = tt.mps })
			h.sim.SetPods(tt.pods)
			h.sim.SetAllocatable(tt.allocatable)
			s := h.refresh(t)
			if !s.Up || !s.LastSuccess.Equal(h.clock.Now()) {
				t.Errorf("Up=%v LastSuccess=%v, want true, %v", s.Up, s.LastSuccess, h.clock.Now())
			}
			if !reflect.DeepEqual(s.Holders, tt.want) {
				t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, tt.want)
			}
			if !reflect.DeepEqual(s.Allocatable, tt.wantAlloc) {
				t.Errorf("allocatable:\n got %v\nwant %v", s.Allocatable, tt.wantAlloc)
			}
			if tt.wantReplicas != nil && !reflect.DeepEqual(s.Replicas, tt.wantReplicas) {
				t.Errorf("replicas:\n got %v\nwant %v", s.Replicas, tt.wantReplicas)
			}
			if s.UnknownIDs != tt.wantUnknown {
				t.Errorf("UnknownIDs = %d, want %d", s.UnknownIDs, tt.wantUnknown)
			}
			for uuid, hs := range s.Holders {
				sum := 0.0
				for _, h := range hs {
					sum += h.Share
				}
				if sum > 1.000001 {
					t.Errorf("shares of %s sum to %v", uuid, sum)
				}
			}
		})
	}
}

func TestExclusive(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetPods([]kubeletsim.Pod{
		pod("a", "whole", ctr("c", "nvidia.com/gpu", gpu0)),
		pod("a", "s1", ctr("c", "nvidia.com/gpu.shared", gpu1+"::0")),
		pod("a", "s2", ctr("c", "nvidia.com/gpu.shared", gpu1+"::1")),
		pod("a", "alone", ctr("c", "nvidia.com/gpu.shared", gpu2+"::0")),
		pod("a", "inst", ctr("c", "nvidia.com/mig-1g.10gb", mig0a)),
	})
	s := h.refresh(t)
	// A lone holder of one time-slicing replica holds no whole device.
	for _, tt := range []struct {
		uuid string
		pod  string
		ok   bool
	}{{gpu0, "whole", true}, {gpu1, "", false}, {gpu2, "", false}, {mig0a, "inst", true}, {mig0b, "", false}} {
		got, ok := s.Exclusive(tt.uuid)
		if ok != tt.ok || got.Pod != tt.pod {
			t.Errorf("Exclusive(%s) = %q, %v; want %q, %v", tt.uuid, got.Pod, ok, tt.pod, tt.ok)
		}
	}
}

// TestExclusiveNeedsTheWholeDevice: a lone holder whose kind of hold is
// whole (a GPU through nvidia.com/gpu, a MIG instance, a DRA claim without a
// share ID) still gives no pod labels when it holds only part of the device.
// GPU 0 is offered as four time-slicing replicas and one container holds it
// through nvidia.com/gpu: 1 of 4 replicas, share 1/4, so the device is shared.
func TestExclusiveNeedsTheWholeDevice(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetAllocatable([]kubeletsim.Devices{
		{Resource: "nvidia.com/gpu.shared", IDs: []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::2", gpu0 + "::3"}},
		{Resource: "nvidia.com/gpu", IDs: []string{gpu1}},
	})
	h.sim.SetPods([]kubeletsim.Pod{
		pod("a", "part", ctr("c", "nvidia.com/gpu", gpu0)),
		pod("a", "whole", ctr("c", "nvidia.com/gpu", gpu1)),
	})
	s := h.refresh(t)
	if hs := s.Holders[gpu0]; len(hs) != 1 || hs[0].Sharing != attribution.Exclusive || hs[0].Share != 0.25 {
		t.Fatalf("holders of GPU 0 %+v, want one exclusive hold of share 0.25", hs)
	}
	if got, ok := s.Exclusive(gpu0); ok {
		t.Errorf("Exclusive(GPU 0) = %q: a quarter of a device gives no pod labels", got.Pod)
	}
	if got, ok := s.Exclusive(gpu1); !ok || got.Pod != "whole" {
		t.Errorf("Exclusive(GPU 1) = %q, %v; want whole, true", got.Pod, ok)
	}
	// The same for every whole kind of hold, on snapshots built by hand.
	for _, hold := range []attribution.Holder{
		{Pod: "gpu", Sharing: attribution.Exclusive, Replicas: 1, Share: 0.5},
		{Pod: "mig", Sharing: attribution.MIG, Replicas: 1, Share: 0.5},
		{Pod: "dra", Sharing: attribution.DRA, Replicas: 1, Share: 0.5},
	} {
		snap := &attribution.Snapshot{Up: true, Holders: map[string][]attribution.Holder{"GPU-x": {hold}}}
		if _, ok := snap.Exclusive("GPU-x"); ok {
			t.Errorf("Exclusive of a lone %s holder of share 0.5 = true, want false", hold.Sharing)
		}
		hold.Share = 1
		snap.Holders["GPU-x"] = []attribution.Holder{hold}
		if got, ok := snap.Exclusive("GPU-x"); !ok || got.Pod != hold.Pod {
			t.Errorf("Exclusive of a lone %s holder of share 1 = %q, %v; want %s, true", hold.Sharing, got.Pod, ok, hold.Pod)
		}
	}
}

func TestPodThatEndsDisappears(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetPods([]kubeletsim.Pod{
		pod("a", "stays", ctr("c", "nvidia.com/gpu", gpu0)),
		pod("a", "ends", ctr("c", "nvidia.com/gpu", gpu2)),
	})
	if s := h.refresh(t); len(s.Holders[gpu2]) != 1 {
		t.Fatalf("holders of %s = %v, want the pod that will end", gpu2, s.Holders[gpu2])
	}
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "stays", ctr("c", "nvidia.com/gpu", gpu0))})
	s := h.refresh(t)
	if _, ok := s.Holders[gpu2]; ok {
		t.Errorf("holders of %s = %v after the pod ended", gpu2, s.Holders[gpu2])
	}
	if len(s.Holders[gpu0]) != 1 {
		t.Errorf("holders of %s = %v, want the pod that stays", gpu0, s.Holders[gpu0])
	}
}

func TestSocketAbsentAtStart(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.Stop() // no kubelet yet: the socket file is gone
	for range 3 {
		if err := h.client.Refresh(context.Background()); err == nil {
			t.Fatal("Refresh without a socket succeeded")
		}
	}
	s := h.client.Current()
	if s.Up || s.Holders != nil || !s.LastSuccess.IsZero() {
		t.Errorf("snapshot without socket = %+v, want down and empty", s)
	}
	if n := strings.Count(h.log.String(), "attribution disabled until it appears"); n != 1 {
		t.Errorf("missing-socket line logged %d times, want 1:\n%s", n, h.log)
	}
	if !strings.Contains(h.log.String(), "--attribution.enabled=false") {
		t.Errorf("log does not say how to disable attribution:\n%s", h.log)
	}

	sim := startSim(t, h.socket)
	sim.SetPods([]kubeletsim.Pod{pod("a", "p", ctr("c", "nvidia.com/gpu", gpu0))})
	s = h.refresh(t)
	if !s.Up || len(s.Holders[gpu0]) != 1 {
		t.Errorf("after the socket appeared: Up=%v holders=%v", s.Up, s.Holders)
	}
	if n := strings.Count(h.log.String(), "recovered"); n != 1 {
		t.Errorf("recovery logged %d times, want 1:\n%s", n, h.log)
	}
}

func TestKubeletRestart(t *testing.T) {
	h := newHarness(t, nil)
	pods := []kubeletsim.Pod{pod("a", "p", ctr("c", "nvidia.com/gpu", gpu0))}
	h.sim.SetPods(pods)
	h.refresh(t)

	h.sim.Stop()
	h.clock.Advance(10 * time.Second)
	for range 2 {
		if err := h.client.Refresh(context.Background()); err == nil {
			t.Fatal("Refresh with the kubelet stopped succeeded")
		}
	}
	s := h.client.Current()
	if s.Up || len(s.Holders[gpu0]) != 1 {
		t.Errorf("kubelet stopped: Up=%v holders=%v, want down with the last holders", s.Up, s.Holders)
	}

	sim := startSim(t, h.socket)
	pods = append(pods, pod("a", "new", ctr("c", "nvidia.com/gpu", gpu2)))
	sim.SetPods(pods)
	s = h.refresh(t)
	if !s.Up || len(s.Holders[gpu2]) != 1 || !s.LastSuccess.Equal(h.clock.Now()) {
		t.Errorf("kubelet restarted: Up=%v holders=%v LastSuccess=%v", s.Up, s.Holders, s.LastSuccess)
	}
}

func TestKubeletNeverAnswers(t *testing.T) {
	// The first refresh must succeed within the timeout on a loaded machine
	// too: generous, though the hung one then takes that long to give up.
	h := newHarness(t, func(c *attribution.Config) { c.Timeout = 5 * time.Second })
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "p", ctr("c", "nvidia.com/gpu", gpu0))})
	before := h.refresh(t)

	asked := h.hangKubelet()
	done := make(chan error)
	go func() { done <- h.client.Refresh(context.Background()) }()
	<-asked
	// The refresh hangs in the kubelet; readers get the last snapshot at once.
	if s := h.client.Current(); s != before {
		t.Errorf("Current during a hung refresh = %+v, want the previous snapshot", s)
	}
	if err := <-done; err == nil {
		t.Fatal("Refresh against a kubelet that never answers succeeded")
	}
	s := h.client.Current()
	if s.Up || len(s.Holders[gpu0]) != 1 || !s.LastSuccess.Equal(before.LastSuccess) {
		t.Errorf("after timeout: Up=%v holders=%v LastSuccess=%v; want down, last holders kept", s.Up, s.Holders, s.LastSuccess)
	}
}

func TestManyPods(t *testing.T) {
	const n = 5000
	pods := manyPods(n)
	// Each pod also holds NICs, ignored by attribution, so that the answer exceeds
	// gRPC's default 4 MiB receive limit.
	nics := make([]string, 24)
	for i := range nics {
		nics[i] = fmt.Sprintf("0000:%02x:00.%d-virtual-function-with-a-long-name", i, i%8)
	}
	size := 0
	for i := range pods {
		pods[i].Containers = append(pods[i].Containers, ctr("net", "example.com/sriov-nic", nics...))
		for _, n := range nics {
			size += len(n)
		}
	}
	if size <= 4<<20 {
		t.Fatalf("answer of about %d bytes does not exceed gRPC's default limit", size)
	}
	tests := []struct {
		name    string
		maxRecv int
		wantErr bool
	}{
		{name: "default limit", maxRecv: 0},
		{name: "limit below the answer", maxRecv: 1 << 20, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *attribution.Config) { c.MaxRecvBytes = tt.maxRecv })
			h.client.SetDevices(nil) // any GPU UUID is accepted
			h.sim.SetPods(pods)
			err := h.client.Refresh(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Refresh error = %v, want error %v", err, tt.wantErr)
			}
			s := h.client.Current()
			if tt.wantErr {
				if s.Up || s.Holders != nil {
					t.Errorf("failed refresh published Up=%v with %d devices", s.Up, len(s.Holders))
				}
				return
			}
			total := 0
			for _, hs := range s.Holders {
				total += len(hs)
			}
			if !s.Up || total != n || len(s.Holders) != n/10 {
				t.Errorf("Up=%v, %d holders on %d devices, want %d on %d", s.Up, total, len(s.Holders), n, n/10)
			}
		})
	}
}

// manyPods returns n pods, ten time-sliced replicas per GPU.
func manyPods(n int) []kubeletsim.Pod {
	pods := make([]kubeletsim.Pod, n)
	for i := range pods {
		id := fmt.Sprintf("GPU-%08d-aaaa-bbbb-cccc-000000000000::%d", i/10, i%10)
		pods[i] = pod("team-"+fmt.Sprint(i%17), fmt.Sprintf("pod-with-a-long-name-%06d", i), ctr("worker", "nvidia.com/gpu.shared", id))
	}
	return pods
}

func TestMalformedResponse(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetListResponse(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		nil,
		{Name: "nil-containers", Namespace: "x"},
		{Name: "nil-container", Namespace: "x", Containers: []*podresourcesv1.ContainerResources{nil}},
		{Name: "nil-devices", Namespace: "x", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{nil}}}},
		{Name: "garbage", Namespace: "x", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"", "GPU-", "GPU-zz", "MIG-GPU-" + gpu1[4:] + "/x/0", "nvidia0/vgpu", "GPU-" + strings.Repeat("a", 300), gpu0 + "::-1"}},
		}}}},
		{Name: "good", Namespace: "x", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu2}},
		}}}},
	}})
	h.sim.SetAllocatableResponse(&podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{nil, {ResourceName: "nvidia.com/gpu"}}})
	s := h.refresh(t)
	want := map[string][]attribution.Holder{
		gpu2: {{Namespace: "x", Pod: "good", Container: "c", Resource: "nvidia.com/gpu", Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
	}
	if !s.Up || !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("Up=%v holders=%+v, want up with %+v", s.Up, s.Holders, want)
	}
	if s.UnknownIDs != 7 {
		t.Errorf("UnknownIDs = %d, want 7", s.UnknownIDs)
	}
}

// TestStaleSnapshotDropped: while the kubelet fails, the last good tables
// (holders, allocatable, replicas and the devices the ResourceSlices publish)
// are kept until StaleAfter has passed since the last success, then dropped.
func TestStaleSnapshotDropped(t *testing.T) {
	h := newHarness(t, func(c *attribution.Config) {
		c.StaleAfter = time.Minute
		c.Slices = nodeSlices
	})
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "p", ctr("c", "nvidia.com/gpu", gpu0))})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{gpu0}}})
	good := h.refresh(t)
	// gpu1 is advertised only by the ResourceSlices (DRAPublished).
	if !good.Advertised(gpu1, "") {
		t.Fatalf("Advertised(%s) = false after a good refresh; DRAPublished = %v", gpu1, good.DRAPublished)
	}
	h.sim.SetError(errors.New("kubelet is unwell"))

	tests := []struct {
		advance     time.Duration
		wantHolders bool
	}{
		{30 * time.Second, true},
		{29 * time.Second, true},
		{time.Second, false}, // exactly StaleAfter after the last success
		{time.Minute, false},
	}
	for i, tt := range tests {
		h.clock.Advance(tt.advance)
		if err := h.client.Refresh(context.Background()); err == nil {
			t.Fatalf("step %d: Refresh succeeded against a failing kubelet", i)
		}
		s := h.client.Current()
		if s.Up || !s.LastSuccess.Equal(good.LastSuccess) {
			t.Errorf("step %d: Up=%v LastSuccess=%v, want down since %v", i, s.Up, s.LastSuccess, good.LastSuccess)
		}
		if got := s.Holders != nil && s.Allocatable != nil && s.Replicas != nil; got != tt.wantHolders {
			t.Errorf("step %d (%v after success): holders kept = %v, want %v", i, h.clock.Now().Sub(good.LastSuccess), got, tt.wantHolders)
		}
		if got := s.Advertised(gpu1, ""); got != tt.wantHolders {
			t.Errorf("step %d (%v after success): Advertised(DRA-only %s) = %v, want %v", i, h.clock.Now().Sub(good.LastSuccess), gpu1, got, tt.wantHolders)
		}
	}
	if n := strings.Count(h.log.String(), "refresh failed"); n != 1 {
		t.Errorf("failure logged %d times, want 1:\n%s", n, h.log)
	}
	if n := strings.Count(h.log.String(), "are stale; dropped them"); n != 1 {
		t.Errorf("dropping stale holders logged %d times, want 1:\n%s", n, h.log)
	}

	h.sim.SetError(nil)
	if s := h.refresh(t); !s.Up || len(s.Holders[gpu0]) != 1 {
		t.Errorf("after recovery: Up=%v holders=%v", s.Up, s.Holders)
	}
}

func TestRun(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "first", ctr("c", "nvidia.com/gpu", gpu0))})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		h.client.Run(ctx)
		close(stopped)
	}()
	// Run refreshes at once; it takes a tick only once that refresh is done.
	h.clock.tick <- h.clock.Now()
	if s := h.client.Current(); !s.Up || len(s.Holders[gpu0]) != 1 {
		t.Errorf("after the first refresh: Up=%v holders=%v", s.Up, s.Holders)
	}
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "second", ctr("c", "nvidia.com/gpu", gpu2))})
	// A tick is taken only after the refresh of the previous one, so after two
	// ticks a refresh has run that started after SetPods.
	h.clock.tick <- h.clock.Now()
	h.clock.tick <- h.clock.Now()
	if s := h.client.Current(); len(s.Holders[gpu2]) != 1 || len(s.Holders[gpu0]) != 0 {
		t.Errorf("after a tick: holders=%v, want the second pod only", s.Holders)
	}
	cancel()
	<-stopped
}

func BenchmarkRefresh500Pods(b *testing.B) {
	h := newHarness(b, nil)
	h.client.SetDevices(nil)
	h.sim.SetPods(manyPods(500))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := h.client.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCancelledRefreshPublishesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.SetPods([]kubeletsim.Pod{pod("a", "p", ctr("c", "nvidia.com/gpu", gpu0))})
	before := h.refresh(t)
	asked := h.hangKubelet()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.client.Refresh(ctx) }()
	<-asked
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) && !strings.Contains(fmt.Sprint(err), "canceled") {
		t.Errorf("Refresh after cancel = %v, want cancelled", err)
	}
	if s := h.client.Current(); s != before {
		t.Errorf("a cancelled refresh published %+v", s)
	}
	if strings.Contains(h.log.String(), "refresh failed") {
		t.Errorf("a cancelled refresh logged a failure:\n%s", h.log)
	}
}
