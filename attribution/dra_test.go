package attribution_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
)

const (
	nvDriver = attribution.DefaultDRADriver
	nodePool = "node-a"
)

// fakeSlices is a SliceSource from a map.
type fakeSlices map[attribution.DRADeviceRef]attribution.SliceDevice

func (f fakeSlices) Device(ref attribution.DRADeviceRef) (attribution.SliceDevice, bool) {
	d, ok := f[ref]
	return d, ok
}

func (f fakeSlices) Status() attribution.SliceStatus {
	return attribution.SliceStatus{Up: true, Devices: len(f)}
}

func (f fakeSlices) Published() map[string]bool {
	p := make(map[string]bool)
	for _, d := range f {
		switch {
		case d.UUID != "":
			p[d.UUID] = true
		case d.ParentUUID != "":
			p[d.ParentUUID] = true
		}
	}
	return p
}

func nvRef(device string) attribution.DRADeviceRef {
	return attribution.DRADeviceRef{Driver: nvDriver, Pool: nodePool, Device: device}
}

// nodeSlices publishes the devices of `node` as the NVIDIA DRA driver would: GPU 0
// whole, GPU 1's 1g.10gb instances as dynamic MIG devices (no UUID yet), GPU 2's
// instance as a static MIG device with its UUID, and a device of another driver.
var nodeSlices = fakeSlices{
	nvRef("gpu-0"):                 {Type: "gpu", UUID: gpu0, PlacementStart: -1},
	nvRef("gpu-1-mig-1g10gb-19-4"): {Type: "mig", ParentUUID: gpu1, Profile: "1g.10gb", PlacementStart: 4},
	nvRef("gpu-1-mig-1g10gb-19-6"): {Type: "mig", ParentUUID: gpu1, Profile: "1g.10gb", PlacementStart: 6},
	nvRef("gpu-2-mig-0"):           {Type: "mig", UUID: mig1a, ParentUUID: gpu2, Profile: "3g.40gb", PlacementStart: 0},
	nvRef("gpu-9"):                 {Type: "gpu", UUID: "GPU-99999999-aaaa-bbbb-cccc-999999999999", PlacementStart: -1},
	{Driver: "other.example.com", Pool: nodePool, Device: "gpu-0"}: {Type: "gpu", UUID: gpu0, PlacementStart: -1},
}

// nodePublished is what nodeSlices publish: GPU 1 stands for its dynamic MIG
// devices without a UUID.
var nodePublished = map[string]bool{gpu0: true, gpu1: true, mig1a: true, "GPU-99999999-aaaa-bbbb-cccc-999999999999": true}

// nodeLayout is the inventory's MIG layout: GPU 1's two 1g.10gb instances at
// memory slices 4 and 6 (so only the placement tells them apart), GPU 2's 3g.40gb.
var nodeLayout = []attribution.MIGSlot{
	{UUID: mig0a, ParentUUID: gpu1, Profile: "1g.10gb", PlacementStart: 4},
	{UUID: mig0b, ParentUUID: gpu1, Profile: "1g.10gb", PlacementStart: 6},
	{UUID: mig1a, ParentUUID: gpu2, Profile: "3g.40gb", PlacementStart: 0},
}

func claimCtr(name, claim string, devs ...kubeletsim.ClaimDevice) kubeletsim.Container {
	return kubeletsim.Container{Name: name, Claims: []kubeletsim.Claim{{Name: claim, Devices: devs}}}
}

func nvDev(device string) kubeletsim.ClaimDevice {
	return kubeletsim.ClaimDevice{Driver: nvDriver, Pool: nodePool, Device: device}
}

func sharedDev(device, shareID string) kubeletsim.ClaimDevice {
	d := nvDev(device)
	d.ShareID = shareID
	return d
}

func draHolder(ns, p, c, claim string, share float64) attribution.Holder {
	return attribution.Holder{Namespace: ns, Pod: p, Container: c, Resource: nvDriver,
		Sharing: attribution.DRA, Replicas: 1, Share: share, Claim: claim}
}

func TestClientDRA(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	tests := []struct {
		name          string
		slices        attribution.SliceSource // nil: nodeSlices
		noSlices      bool
		pods          []kubeletsim.Pod
		allocatable   []kubeletsim.Devices
		want          map[string][]attribution.Holder
		wantExclusive map[string]bool
		wantUnmapped  []string // "pod/container device: reason substring"
	}{
		{
			name: "device plugin next to DRA: each device attributed its own way",
			pods: []kubeletsim.Pod{
				pod("ml", "plugin", ctr("main", gpu, gpu2)),
				pod("ml", "dra", claimCtr("main", "gpu-claim", nvDev("gpu-0"))),
			},
			want: map[string][]attribution.Holder{
				gpu2: {{Namespace: "ml", Pod: "plugin", Container: "main", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
				gpu0: {draHolder("ml", "dra", "main", "gpu-claim", 1)},
			},
			wantExclusive: map[string]bool{gpu2: true, gpu0: true},
		},
		{
			name: "DRA full GPU through the slice's uuid",
			pods: []kubeletsim.Pod{pod("ml", "train", claimCtr("main", "train-gpu", nvDev("gpu-0")))},
			want: map[string][]attribution.Holder{
				gpu0: {draHolder("ml", "train", "main", "train-gpu", 1)},
			},
			wantExclusive: map[string]bool{gpu0: true},
		},
		{
			name: "DRA static MIG: the slice carries the MIG UUID",
			pods: []kubeletsim.Pod{pod("inf", "srv", claimCtr("srv", "mig", nvDev("gpu-2-mig-0")))},
			want: map[string][]attribution.Holder{
				mig1a: {draHolder("inf", "srv", "srv", "mig", 1)},
			},
			wantExclusive: map[string]bool{mig1a: true},
		},
		{
			name: "DRA dynamic MIG: uuid null, mapped by parent, profile and placement start",
			pods: []kubeletsim.Pod{
				pod("inf", "b", claimCtr("srv", "mig-b", nvDev("gpu-1-mig-1g10gb-19-6"))),
			},
			want: map[string][]attribution.Holder{
				mig0b: {draHolder("inf", "b", "srv", "mig-b", 1)},
			},
			wantExclusive: map[string]bool{mig0b: true, mig0a: false},
		},
		{
			name: "two claims share one device; one claim's two containers split its half",
			pods: []kubeletsim.Pod{
				pod("a", "p1", claimCtr("c", "shared-1", sharedDev("gpu-0", "s1"))),
				pod("b", "p2",
					kubeletsim.Container{Name: "c1", Claims: []kubeletsim.Claim{{Name: "shared-2", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", "s2")}}}},
					kubeletsim.Container{Name: "c2", Claims: []kubeletsim.Claim{{Name: "shared-2", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", "s2")}}}},
				),
			},
			want: map[string][]attribution.Holder{
				gpu0: {
					withShareID(draHolder("a", "p1", "c", "shared-1", 0.5), "s1"),
					withShareID(draHolder("b", "p2", "c1", "shared-2", 0.25), "s2"),
					withShareID(draHolder("b", "p2", "c2", "shared-2", 0.25), "s2"),
				},
			},
			wantExclusive: map[string]bool{gpu0: false},
		},
		{
			// A container's repeated listing of one claim on one device is one
			// hold: claim x's half goes to c1 and c2 equally (1/4 each), not
			// 2/3 to c1 as if it were held twice.
			name: "a claim listed twice by one container counts once",
			pods: []kubeletsim.Pod{
				pod("a", "p",
					kubeletsim.Container{Name: "c1", Claims: []kubeletsim.Claim{
						{Name: "x", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", "s1")}},
						{Name: "x", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", "s1")}},
					}},
					claimCtr("c2", "x", sharedDev("gpu-0", "s1")),
				),
				pod("b", "q", claimCtr("c", "y", sharedDev("gpu-0", "s2"))),
			},
			want: map[string][]attribution.Holder{
				gpu0: {
					withShareID(draHolder("a", "p", "c1", "x", 0.25), "s1"),
					withShareID(draHolder("a", "p", "c2", "x", 0.25), "s1"),
					withShareID(draHolder("b", "q", "c", "y", 0.5), "s2"),
				},
			},
			wantExclusive: map[string]bool{gpu0: false},
		},
		{
			// Device-plugin and DRA holders of one device each get half of
			// what their own rule gives: the plugin's one replica of two
			// offered (1/2) becomes 1/4, each of the two DRA shares (1/2)
			// becomes 1/4; a quarter of the device stays unpaid.
			name: "device plugin and DRA on one device: every share halved",
			pods: []kubeletsim.Pod{
				pod("ml", "plugin", ctr("main", "nvidia.com/gpu.shared", gpu0+"::0")),
				pod("a", "p1", claimCtr("c", "shared-1", sharedDev("gpu-0", "s1"))),
				pod("b", "p2", claimCtr("c", "shared-2", sharedDev("gpu-0", "s2"))),
			},
			allocatable: []kubeletsim.Devices{{Resource: "nvidia.com/gpu.shared", IDs: []string{gpu0 + "::0", gpu0 + "::1"}}},
			want: map[string][]attribution.Holder{
				gpu0: {
					withShareID(draHolder("a", "p1", "c", "shared-1", 0.25), "s1"),
					withShareID(draHolder("b", "p2", "c", "shared-2", 0.25), "s2"),
					{Namespace: "ml", Pod: "plugin", Container: "main", Resource: "nvidia.com/gpu.shared", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.25},
				},
			},
			wantExclusive: map[string]bool{gpu0: false},
		},
		{
			name: "a lone holder of one share of a shared device keeps no pod labels",
			pods: []kubeletsim.Pod{pod("a", "p1", claimCtr("c", "shared-1", sharedDev("gpu-0", "s1")))},
			want: map[string][]attribution.Holder{
				gpu0: {withShareID(draHolder("a", "p1", "c", "shared-1", 1), "s1")},
			},
			wantExclusive: map[string]bool{gpu0: false},
		},
		{
			name: "unmappable claims: unknown device, foreign UUID, ambiguous MIG; other drivers ignored",
			pods: []kubeletsim.Pod{
				pod("ml", "ghost", claimCtr("main", "ghost", nvDev("gpu-7"))),
				pod("ml", "foreign", claimCtr("main", "foreign", nvDev("gpu-9"))),
				pod("ml", "other", claimCtr("main", "x", kubeletsim.ClaimDevice{Driver: "other.example.com", Pool: nodePool, Device: "gpu-0"})),
				pod("ml", "ok", claimCtr("main", "ok", nvDev("gpu-0"))),
			},
			want: map[string][]attribution.Holder{
				gpu0: {draHolder("ml", "ok", "main", "ok", 1)},
			},
			wantExclusive: map[string]bool{gpu0: true},
			wantUnmapped: []string{
				"foreign/main gpu.nvidia.com/node-a/gpu-9: names no device of this node",
				"ghost/main gpu.nvidia.com/node-a/gpu-7: not in the node's ResourceSlices",
			},
		},
		{
			name: "MIG profile without placement on two instances is ambiguous",
			slices: fakeSlices{
				nvRef("gpu-1-mig-x"): {Type: "mig", ParentUUID: gpu1, Profile: "1g.10gb", PlacementStart: -1},
			},
			pods:         []kubeletsim.Pod{pod("ml", "m", claimCtr("main", "m", nvDev("gpu-1-mig-x")))},
			want:         map[string][]attribution.Holder{},
			wantUnmapped: []string{"m/main gpu.nvidia.com/node-a/gpu-1-mig-x: 2 1g.10gb instances"},
		},
		{
			name:         "without ResourceSlice lookups every DRA allocation is unmapped",
			noSlices:     true,
			pods:         []kubeletsim.Pod{pod("ml", "train", claimCtr("main", "train-gpu", nvDev("gpu-0")))},
			want:         map[string][]attribution.Holder{},
			wantUnmapped: []string{"train/main gpu.nvidia.com/node-a/gpu-0: lookups are off"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *attribution.Config) {
				switch {
				case tc.noSlices:
				case tc.slices != nil:
					c.Slices = tc.slices
				default:
					c.Slices = nodeSlices
				}
			})
			h.client.SetMIGLayout(nodeLayout)
			h.sim.SetPods(tc.pods)
			h.sim.SetAllocatable(tc.allocatable)
			s := h.refresh(t)
			assertHolders(t, s.Holders, tc.want)
			switch {
			case tc.noSlices && s.DRAPublished != nil:
				t.Errorf("DRAPublished = %v without ResourceSlice lookups, want nil", s.DRAPublished)
			case !tc.noSlices && tc.slices == nil && !maps.Equal(s.DRAPublished, nodePublished):
				t.Errorf("DRAPublished = %v, want %v", s.DRAPublished, nodePublished)
			}
			for uuid, want := range tc.wantExclusive {
				if _, got := s.Exclusive(uuid); got != want {
					t.Errorf("Exclusive(%s) = %v, want %v", uuid, got, want)
				}
			}
			if len(s.UnmappedDRA) != len(tc.wantUnmapped) {
				t.Fatalf("UnmappedDRA = %+v, want %d entries", s.UnmappedDRA, len(tc.wantUnmapped))
			}
			for i, a := range s.UnmappedDRA {
				pre, reason, _ := strings.Cut(tc.wantUnmapped[i], ": ")
				if got := a.Pod + "/" + a.Container + " " + a.Device.String(); got != pre || !strings.Contains(a.Reason, reason) {
					t.Errorf("UnmappedDRA[%d] = %s (%s), want %s (…%s…)", i, got, a.Reason, pre, reason)
				}
			}
			if s.UnmappedDRATotal != uint64(len(tc.wantUnmapped)) {
				t.Errorf("UnmappedDRATotal = %d, want %d", s.UnmappedDRATotal, len(tc.wantUnmapped))
			}
		})
	}
}

// TestClientDRAOneContainerTwoClaims: a container that holds one device
// through two claims is one holder with the sum of both allocations' parts
// (2 of the device's 3 allocations: 2/3), and a share of a shared device
// when either claim is one (its ShareID is the shared claim's). It names the
// first claim by name, at every refresh (repeated: the allocations are a map).
func TestClientDRAOneContainerTwoClaims(t *testing.T) {
	h := newHarness(t, func(c *attribution.Config) { c.Slices = nodeSlices })
	h.sim.SetPods([]kubeletsim.Pod{
		pod("a", "p", kubeletsim.Container{Name: "c", Claims: []kubeletsim.Claim{
			{Name: "x", Devices: []kubeletsim.ClaimDevice{nvDev("gpu-0")}},
			{Name: "y", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", "s2")}},
		}}),
		pod("b", "q", claimCtr("c", "z", sharedDev("gpu-0", "s3"))),
	})
	want := []attribution.Holder{
		withShareID(draHolder("a", "p", "c", "x", 2.0/3), "s2"),
		withShareID(draHolder("b", "q", "c", "z", 1.0/3), "s3"),
	}
	for range 16 {
		s := h.refresh(t)
		assertHolders(t, s.Holders, map[string][]attribution.Holder{gpu0: want})
		if t.Failed() {
			return
		}
	}
}

func withShareID(h attribution.Holder, id string) attribution.Holder {
	h.ShareID = id
	return h
}

// assertHolders compares holder tables, shares within rounding.
func assertHolders(t *testing.T, got, want map[string][]attribution.Holder) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("holders of %d devices, want %d: %+v", len(got), len(want), got)
	}
	for uuid, wh := range want {
		gh := got[uuid]
		if len(gh) != len(wh) {
			t.Errorf("%s: holders %+v, want %+v", uuid, gh, wh)
			continue
		}
		for i := range wh {
			g, w := gh[i], wh[i]
			if d := g.Share - w.Share; d > 1e-12 || d < -1e-12 {
				t.Errorf("%s holder %d: share %v, want %v", uuid, i, g.Share, w.Share)
			}
			g.Share = w.Share
			if g != w {
				t.Errorf("%s holder %d: %+v, want %+v", uuid, i, g, w)
			}
		}
	}
}

// TestClientDRAUnmappedCountsAndLogsOnce: an unmapped claim counts once per
// refresh, stays listed while the kubelet fails, and is logged once.
func TestClientDRAUnmappedCountsAndLogsOnce(t *testing.T) {
	h := newHarness(t, func(c *attribution.Config) { c.Slices = nodeSlices })
	h.sim.SetPods([]kubeletsim.Pod{pod("ml", "ghost", claimCtr("main", "ghost", nvDev("gpu-7")))})
	h.refresh(t)
	s := h.refresh(t)
	if s.UnmappedDRATotal != 2 || len(s.UnmappedDRA) != 1 {
		t.Fatalf("after two refreshes: total %d, listed %d; want 2 and 1", s.UnmappedDRATotal, len(s.UnmappedDRA))
	}
	if n := strings.Count(h.log.String(), "DRA device could not be mapped"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, h.log.String())
	}
	h.sim.SetError(errors.New("kubelet is unwell"))
	_ = h.client.Refresh(t.Context())
	s = h.client.Current()
	if s.Up || len(s.UnmappedDRA) != 1 || s.UnmappedDRATotal != 2 {
		t.Errorf("kubelet failing: up %v, listed %d, total %d; want false, 1 (kept with the holders), 2", s.Up, len(s.UnmappedDRA), s.UnmappedDRATotal)
	}
}

// BenchmarkRefresh500DRAPods: a refresh of 500 pods holding 500 DRA devices
// (whole GPUs) mapped through the slices.
func BenchmarkRefresh500DRAPods(b *testing.B) {
	slices := fakeSlices{}
	var pods []kubeletsim.Pod
	for i := range 500 {
		name := fmt.Sprintf("gpu-%d", i)
		slices[nvRef(name)] = attribution.SliceDevice{Type: "gpu", UUID: fmt.Sprintf("GPU-%08d-aaaa-bbbb-cccc-000000000000", i), PlacementStart: -1}
		pods = append(pods, pod("ns", fmt.Sprintf("p%d", i), claimCtr("c", fmt.Sprintf("claim-%d", i), nvDev(name))))
	}
	h := newHarness(b, func(c *attribution.Config) { c.Slices = slices })
	h.client.SetDevices(nil)
	h.sim.SetPods(pods)
	b.ReportAllocs()
	for b.Loop() {
		if err := h.client.Refresh(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(h.client.Current().Holders); n != 500 {
		b.Fatalf("%d devices held, want 500", n)
	}
}

// TestSnapshotAdvertised: a device is advertised when the kubelet offers it,
// someone holds it, or the ResourceSlices publish it or (for a MIG instance)
// its GPU.
func TestSnapshotAdvertised(t *testing.T) {
	s := attribution.Snapshot{
		Up:           true,
		Holders:      map[string][]attribution.Holder{mig0a: {draHolder("a", "b", "c", "d", 1)}},
		Replicas:     map[string]int{gpu0: 4},
		DRAPublished: map[string]bool{gpu1: true, mig1a: true},
	}
	for _, tc := range []struct {
		name, uuid, parent string
		want               bool
	}{
		{"offered by the kubelet", gpu0, "", true},
		{"held", mig0a, gpu2, true},
		{"published MIG instance", mig1a, gpu2, true},
		{"MIG instance of a published GPU", mig0b, gpu1, true},
		{"published GPU", gpu1, "", true},
		{"neither offered, held nor published", gpu2, "", false},
		{"MIG instance of an unpublished GPU", mig0b, gpu2, false},
	} {
		if got := s.Advertised(tc.uuid, tc.parent); got != tc.want {
			t.Errorf("%s: Advertised(%s, %q) = %v, want %v", tc.name, tc.uuid, tc.parent, got, tc.want)
		}
	}
}

func TestSnapshotHoldersKnown(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    attribution.Snapshot
		want bool
	}{
		{"before the first refresh", attribution.Snapshot{}, false},
		{"nobody holds anything", attribution.Snapshot{Up: true, Holders: map[string][]attribution.Holder{}}, true},
		{"kubelet failing, holders kept", attribution.Snapshot{Holders: map[string][]attribution.Holder{gpu0: {draHolder("a", "b", "c", "d", 1)}}}, true},
		{"a DRA allocation unmapped", attribution.Snapshot{Up: true, Holders: map[string][]attribution.Holder{}, UnmappedDRA: []attribution.DRAAllocation{{Pod: "p"}}}, false},
	} {
		if got := tc.s.HoldersKnown(); got != tc.want {
			t.Errorf("%s: HoldersKnown = %v, want %v", tc.name, got, tc.want)
		}
	}
}
