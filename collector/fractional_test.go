package collector

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
	"github.com/gputally/gputally/cost"
)

// The rates of the built-in book (docs/cost.md), worked out by hand:
// capital purchase / (3 × 8760) + energy W / 1000 × 1.4 × 0.30 EUR/kWh.
const (
	rateA100 = 15000.0/26280 + 250.0/1000*1.4*0.30 // 0.675776 EUR/h at 250 W
	rateH100 = 30000.0/26280 + 400.0/1000*1.4*0.30 // 1.309553 EUR/h at 400 W
	rateT4   = 2.50                                // the catch-all flat rate
)

const (
	fracA100 = "GPU-a1000000-0000-4000-8000-000000000001"
	fracH100 = "GPU-b1000000-0000-4000-8000-000000000002"
	fracT4   = "GPU-c1000000-0000-4000-8000-000000000003"
)

// shareBackend is a node of an A100 40GB at 250 W, an H100 at 400 W and a T4,
// each reporting the GR-engine activity in activity.
type shareBackend struct{ activity [3]float64 }

func (b *shareBackend) Name() string { return "fake" }
func (b *shareBackend) Close() error { return nil }
func (b *shareBackend) Inventory(context.Context) (Inventory, error) {
	return Inventory{DriverVersion: "580.95.05", GPUs: []GPU{
		{Index: 0, Minor: 0, UUID: fracA100, Model: "NVIDIA A100-SXM4-40GB", MemoryTotalMiB: 40960},
		{Index: 1, Minor: 1, UUID: fracH100, Model: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: 81559},
		{Index: 2, Minor: 2, UUID: fracT4, Model: "Tesla T4", MemoryTotalMiB: 15360},
	}}, nil
}
func (b *shareBackend) Sample(_ context.Context, _ time.Time, s *Sample, _ ErrorCounter) error {
	for i, w := range []float64{250, 400, 70} {
		s.GPUs[i].Values.Set(PowerUsage, w)
		s.GPUs[i].Values.Set(GREngineActive, b.activity[i])
	}
	return nil
}

func key(ns, pod, ctr string) cost.HolderKey {
	return cost.HolderKey{Namespace: ns, Pod: pod, Container: ctr}
}

// ownActivity is process accounting that measured each holder's own activity.
type ownActivity map[cost.HolderKey]float64

func (o ownActivity) Usage(inv Inventory, _ Sample, attr *attribution.Snapshot) ([]DeviceUsage, bool) {
	var out []DeviceUsage
	for _, g := range inv.GPUs {
		u := DeviceUsage{UUID: g.UUID}
		for _, h := range attr.Holders[g.UUID] {
			if a, ok := o[cost.HolderKey{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container}]; ok {
				u.Holders = append(u.Holders, HolderUsage{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container, Utilization: a})
			}
		}
		if len(u.Holders) > 0 {
			out = append(out, u)
		}
	}
	return out, true
}

// shareNode is one hour of the shareBackend node with pods as the kubelet and
// the API server show them.
type shareNode struct {
	kubelet      []kubeletsim.Pod
	allocatable  []kubeletsim.Devices
	pods         []attribution.Pod
	registration string
	slices       attribution.SliceSource
	claims       attribution.ClaimSource
	activity     [3]float64
	own          ownActivity
	book         string // "" the built-in book
}

// run charges one hour and returns the ledger's EUR per series ("<GPU>
// <namespace>/<pod>/<container> <state>", "<GPU> <state>" without a holder),
// the estimated seconds per holder, and the attribution it was charged with.
func (n shareNode) run(t *testing.T) (map[string]float64, map[string]float64, *attribution.Snapshot) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := kubeletsim.Start(filepath.Join(dir, "k.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.SetPods(n.kubelet)
	srv.SetAllocatable(n.allocatable)
	client, err := attribution.New(attribution.Config{Socket: srv.Path(), Timeout: time.Minute,
		Pods: attribution.NewMemoryPods(attribution.NewPodView(true, n.pods, n.registration)), Slices: n.slices, Claims: n.claims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	b := &shareBackend{activity: n.activity}
	inv, _ := b.Inventory(context.Background())
	client.SetDevices(AttributionDevices(inv))
	if err := client.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	book := cost.Default()
	if n.book != "" {
		if book, err = cost.Parse([]byte(n.book), "test.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	opts := SamplerOptions{Interval: time.Hour, Holders: client, Ledger: cost.NewLedger(staticBook{book})}
	if n.own != nil {
		opts.Processes = n.own
	}
	s := NewSampler(b, opts)
	for _, at := range []time.Time{t0, t0.Add(time.Hour)} {
		if err := s.Tick(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	snap := s.Snapshot()
	eur := map[string]float64{}
	for _, tot := range snap.Totals {
		k := tot.Device + " " + tot.State.String()
		if tot.Holder != (cost.HolderKey{}) {
			k = fmt.Sprintf("%s %s/%s/%s %s", tot.Device, tot.Holder.Namespace, tot.Holder.Pod, tot.Holder.Container, tot.State)
		}
		eur[k] = tot.EUR
	}
	est := map[string]float64{}
	for _, e := range snap.Estimates {
		est[fmt.Sprintf("%s/%s/%s", e.Holder.Namespace, e.Holder.Pod, e.Holder.Container)] = e.Seconds
	}
	return eur, est, snap.Attribution
}

// checkEUR compares the series of gpu with want (every other series of gpu at
// 0) and holds the GPU to its cost: the EUR of all its series are rate × 1 h,
// to the cent and to 1e-9.
func checkEUR(t *testing.T, got map[string]float64, gpu string, rate float64, want map[string]float64) {
	t.Helper()
	sum := 0.0
	for k, v := range got {
		if !strings.HasPrefix(k, gpu+" ") {
			continue
		}
		sum += v
		w := want[strings.TrimPrefix(k, gpu+" ")]
		if math.Abs(v-w) > 1e-9*max(rate, 1) {
			t.Errorf("%s = %.9f EUR, want %.9f", k, v, w)
		}
	}
	for k := range want {
		if _, ok := got[gpu+" "+k]; !ok {
			t.Errorf("no series %s %s", gpu, k)
		}
	}
	if math.Abs(sum-rate) > 1e-9*rate || math.Round(sum*100) != math.Round(rate*100) {
		t.Errorf("%s: series sum to %.9f EUR, the GPU costs %.9f", gpu, sum, rate)
	}
}

// hamiPodAt is a pod HAMi allocated: containers c0, c1, … with the grants
// "<mem MiB>,<cores>" on GPU uuid.
func hamiPodAt(ns, name, uuid string, grants ...string) attribution.Pod {
	p := attribution.Pod{Namespace: ns, Name: name, Phase: "Running", Annotations: map[string]string{"hami.io/bind-phase": "success"}}
	var ann strings.Builder
	for i, g := range grants {
		p.Containers = append(p.Containers, fmt.Sprintf("c%d", i))
		fmt.Fprintf(&ann, "%s,NVIDIA,%s:;", uuid, g)
	}
	p.Annotations["hami.io/vgpu-devices-allocated"] = ann.String()
	return p
}

func vgpuIDs(uuid string, n int) []string {
	var ids []string
	for k := range n {
		ids = append(ids, fmt.Sprintf("%s-%d", uuid, k))
	}
	return ids
}

func hamiKubelet(ns, name, uuid string, k int) kubeletsim.Pod {
	return kubeletsim.Pod{Namespace: ns, Name: name, Containers: []kubeletsim.Container{
		{Name: "c0", Devices: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{fmt.Sprintf("%s-%d", uuid, k)}}}}}}
}

var hamiAllocatable = []kubeletsim.Devices{{Resource: "nvidia.com/gpu",
	IDs: append(append(vgpuIDs(fracA100, 10), vgpuIDs(fracH100, 10)...), vgpuIDs(fracT4, 10)...)}}

// TestHAMi3073: four pods at 25 % of an A100 for an hour pay one GPU-hour
// (HAMi #3073). With their own activity measured, two are busy and two idle,
// and busy + idle is the GPU's cost; without it they are busy by the GPU's
// activity, and that time is marked estimated.
func TestHAMi3073(t *testing.T) {
	n := shareNode{
		allocatable: hamiAllocatable,
		activity:    [3]float64{0.6, 0, 0},
	}
	// 10240 MiB of NVML's 40960 = .25; 25 of 100 cores = .25.
	for i, ns := range []string{"team-a", "team-a", "team-b", "team-c"} {
		name := fmt.Sprintf("p%d", i)
		n.pods = append(n.pods, hamiPodAt(ns, name, fracA100, "10240,25"))
		n.kubelet = append(n.kubelet, hamiKubelet(ns, name, fracA100, i))
	}
	quarter := rateA100 / 4 // 0.675776 / 4 = 0.168944 EUR each
	t.Run("own activity", func(t *testing.T) {
		n := n
		n.own = ownActivity{key("team-a", "p0", "c0"): 0.5, key("team-a", "p1", "c0"): 0.3, key("team-b", "p2", "c0"): 0, key("team-c", "p3", "c0"): 0.02}
		eur, est, _ := n.run(t)
		checkEUR(t, eur, fracA100, rateA100, map[string]float64{
			"team-a/p0/c0 busy": quarter, "team-a/p1/c0 busy": quarter, // busy 0.337888
			"team-b/p2/c0 idle": quarter, "team-c/p3/c0 idle": quarter, // idle 0.337888
		})
		if len(est) != 0 {
			t.Errorf("estimated %v with every holder's activity measured", est)
		}
	})
	t.Run("the GPU's activity, estimated", func(t *testing.T) {
		eur, est, attr := n.run(t)
		checkEUR(t, eur, fracA100, rateA100, map[string]float64{
			"team-a/p0/c0 busy": quarter, "team-a/p1/c0 busy": quarter, "team-b/p2/c0 busy": quarter, "team-c/p3/c0 busy": quarter,
		})
		for _, h := range []string{"team-a/p0/c0", "team-a/p1/c0", "team-b/p2/c0", "team-c/p3/c0"} {
			if est[h] != 900 { // a quarter of 3600 s
				t.Errorf("%s estimated %v s, want 900", h, est[h])
			}
		}
		for _, h := range attr.Holders[fracA100] {
			if h.Sharing != attribution.HAMi || h.Share != 0.25 {
				t.Errorf("allocation %+v, want sharing hami, share .25", h)
			}
		}
	})
}

// TestHAMiFullByCores: an H100 whose cores are all granted but only 40 % of
// its memory: the dominant rule leaves nothing unallocated (HAMi's scheduler
// refuses another pod); the memory policy would show .6 free.
func TestHAMiFullByCores(t *testing.T) {
	n := shareNode{
		allocatable:  hamiAllocatable,
		registration: `[{"id":"` + fracH100 + `","count":10,"devmem":80000,"devcore":100,"type":"NVIDIA H100 80GB HBM3","health":true}]`,
		activity:     [3]float64{0, 0.01, 0},
	}
	for i := range 4 { // 8000 of the registered 80000 MiB = .1; 25 cores = .25
		name := fmt.Sprintf("p%d", i)
		n.pods = append(n.pods, hamiPodAt("ml", name, fracH100, "8000,25"))
		n.kubelet = append(n.kubelet, hamiKubelet("ml", name, fracH100, i))
	}
	eur, _, _ := n.run(t)
	// R = max(0, min(1 − .4, 1 − 1)) = 0; d = .25 each: 1.309553 / 4 = 0.327388, idle (.01 < .05).
	want := map[string]float64{"unallocated": 0}
	for i := range 4 {
		want[fmt.Sprintf("ml/p%d/c0 idle", i)] = rateH100 / 4
	}
	checkEUR(t, eur, fracH100, rateH100, want)

	n.book = "models: [{match: H100, purchase_eur: 30000}, {match: '.*', hourly_eur: 2.5}]\nfractional: {policy: memory}\n"
	eur, _, _ = n.run(t)
	// Memory: .1 each, 0.130955; .6 unallocated, 0.785732.
	want = map[string]float64{"unallocated": rateH100 * 0.6}
	for i := range 4 {
		want[fmt.Sprintf("ml/p%d/c0 idle", i)] = rateH100 * 0.1
	}
	checkEUR(t, eur, fracH100, rateH100, want)
}

// TestHAMiInitAndMultiContainer: a pod with two app containers and an init
// container still running holds, per axis, the larger of the init peak and
// the app sum; once the init container succeeded, the app containers alone.
func TestHAMiInitAndMultiContainer(t *testing.T) {
	reg := `[{"id":"` + fracH100 + `","count":10,"devmem":80000,"devcore":100}]`
	pod := func(initDone bool) attribution.Pod {
		p := attribution.Pod{Namespace: "ml", Name: "serve", Phase: "Running", InitContainers: []string{"fetch"},
			Containers: []string{"server", "sidecar"}, InitDone: initDone,
			Annotations: map[string]string{"hami.io/bind-phase": "success",
				// fetch (20000 MiB, 10 %), server (8000, 40 %), sidecar (4000, 20 %).
				"hami.io/vgpu-devices-allocated": fracH100 + ",NVIDIA,20000,10:;" + fracH100 + ",NVIDIA,8000,40:;" + fracH100 + ",NVIDIA,4000,20:;"}}
		if !initDone {
			p.Phase = "Pending"
		}
		return p
	}
	kubelet := []kubeletsim.Pod{{Namespace: "ml", Name: "serve", Containers: []kubeletsim.Container{
		{Name: "server", Devices: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{fracH100 + "-0"}}}},
		{Name: "sidecar", Devices: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{fracH100 + "-1"}}}},
	}}}
	t.Run("init running", func(t *testing.T) {
		eur, _, _ := shareNode{allocatable: hamiAllocatable, registration: reg, kubelet: kubelet,
			pods: []attribution.Pod{pod(false)}, activity: [3]float64{0, 0.7, 0}}.run(t)
		// Memory: init peak .25 > app .1 + .05 = .15: fetch holds .10 more.
		// Cores: init .1 < app .4 + .2: nothing more. Claims: server (.1, .4),
		// sidecar (.05, .2), fetch (.1, 0). Σm = .25, Σc = .6: R = min(.75,
		// .4) = .4. d = .4, .2, .1 (Σ .7): shares .4 × .6 / .7 = 12/35,
		// .2 × .6 / .7 = 6/35, .1 × .6 / .7 = 3/35; R 14/35.
		checkEUR(t, eur, fracH100, rateH100, map[string]float64{
			"ml/serve/server busy": rateH100 * 12 / 35, "ml/serve/sidecar busy": rateH100 * 6 / 35, "ml/serve/fetch busy": rateH100 * 3 / 35,
			"unallocated": rateH100 * 14 / 35,
		})
	})
	t.Run("init done", func(t *testing.T) {
		eur, _, _ := shareNode{allocatable: hamiAllocatable, registration: reg, kubelet: kubelet,
			pods: []attribution.Pod{pod(true)}, activity: [3]float64{0, 0.7, 0}}.run(t)
		// server (.1, .4), sidecar (.05, .2): R = min(.85, .4) = .4; d = .4,
		// .2 (Σ .6 = 1 − R): .4 and .2.
		checkEUR(t, eur, fracH100, rateH100, map[string]float64{
			"ml/serve/server busy": rateH100 * 0.4, "ml/serve/sidecar busy": rateH100 * 0.2, "unallocated": rateH100 * 0.4,
		})
	})
}

// kaiNode is a node whose H100 and T4 KAI reserved for groups g-h100 and g-t4.
func kaiNode(pods ...attribution.Pod) shareNode {
	res := func(name, group, uuid string) attribution.Pod {
		return attribution.Pod{Namespace: "kai-resource-reservation", Name: name, Phase: "Running", Containers: []string{"resource-reservation"},
			Labels:      map[string]string{"app": "kai-resource-reservation", "runai-gpu-group": group},
			Annotations: map[string]string{"run.ai/reserve_for_gpu_index": uuid, "karpenter.sh/do-not-disrupt": "true"}}
	}
	resKubelet := func(name, uuid string) kubeletsim.Pod {
		return kubeletsim.Pod{Namespace: "kai-resource-reservation", Name: name, Containers: []kubeletsim.Container{
			{Name: "resource-reservation", Devices: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{uuid}}}}}}
	}
	return shareNode{
		pods:        append([]attribution.Pod{res("gpu-reservation-5e0c5a5b6a7c8d9e", "g-h100", fracH100), res("gpu-reservation-0a1b2c3d4e5f6071", "g-t4", fracT4)}, pods...),
		kubelet:     []kubeletsim.Pod{resKubelet("gpu-reservation-5e0c5a5b6a7c8d9e", fracH100), resKubelet("gpu-reservation-0a1b2c3d4e5f6071", fracT4)},
		allocatable: []kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{fracA100, fracH100, fracT4}}},
		activity:    [3]float64{0, 0.5, 0.5},
	}
}

func kaiSharerPod(ns, name, group, key, value string) attribution.Pod {
	return attribution.Pod{Namespace: ns, Name: name, Phase: "Running", Containers: []string{"main"},
		Labels:      map[string]string{"runai-gpu-group": group},
		Annotations: map[string]string{"received-resource-type": "Fraction", key: value}}
}

// TestKAIShares: 0.5 + 0.3 of an H100 leave 0.2 unallocated; three
// gpu-memory requests of 5120 MiB on a T4 are 3 × 0.34 = 1.02, scaled to
// thirds; a reservation without sharers is the whole GPU, idle, in the
// reservation's namespace.
func TestKAIShares(t *testing.T) {
	t.Run("0.5 + 0.3, and 3 × 0.34", func(t *testing.T) {
		n := kaiNode(
			kaiSharerPod("team-a", "nb", "g-h100", "gpu-fraction", "0.5"),
			kaiSharerPod("team-b", "infer", "g-h100", "gpu-fraction", "0.3"),
			kaiSharerPod("ci", "t1", "g-t4", "gpu-memory", "5120"),
			kaiSharerPod("ci", "t2", "g-t4", "gpu-memory", "5120"),
			kaiSharerPod("ci", "t3", "g-t4", "gpu-memory", "5120"),
		)
		n.own = ownActivity{key("team-a", "nb", "main"): 0.4, key("team-b", "infer", "main"): 0.01}
		eur, est, _ := n.run(t)
		// 1.309553 × .5 = 0.654776 busy; × .3 = 0.392866 idle; × .2 = 0.261911 unallocated.
		checkEUR(t, eur, fracH100, rateH100, map[string]float64{
			"team-a/nb/main busy": rateH100 * 0.5, "team-b/infer/main idle": rateH100 * 0.3, "unallocated": rateH100 * 0.2,
		})
		// ceil(5120 / 15360 × 100) / 100 = .34 each, Σ 1.02 > 1: 1/3 each
		// of 2.50 = 0.833333, busy by the T4's .5 (estimated); none unallocated.
		checkEUR(t, eur, fracT4, rateT4, map[string]float64{
			"ci/t1/main busy": rateT4 / 3, "ci/t2/main busy": rateT4 / 3, "ci/t3/main busy": rateT4 / 3, "unallocated": 0,
		})
		if math.Abs(est["ci/t1/main"]-1200) > 1e-9 || est["team-a/nb/main"] != 0 {
			t.Errorf("estimated %v: want the T4's sharers' 1200 s each, none on the H100", est)
		}
		if eur[fracH100+" kai-resource-reservation/gpu-reservation-5e0c5a5b6a7c8d9e/resource-reservation idle"] != 0 {
			t.Error("the reservation pod pays while sharers hold its GPU")
		}
	})
	t.Run("a reservation without sharers", func(t *testing.T) {
		eur, _, _ := kaiNode(kaiSharerPod("team-a", "nb", "g-h100", "gpu-fraction", "0.5")).run(t)
		// The T4's reservation holds it whole, idle though the T4 is .5
		// active (nothing runs in a reservation pod): 2.50 EUR.
		checkEUR(t, eur, fracT4, rateT4, map[string]float64{
			"kai-resource-reservation/gpu-reservation-0a1b2c3d4e5f6071/resource-reservation idle": rateT4, "unallocated": 0,
		})
	})
}

// TestBrokenAnnotationIsUnknown: a HAMi pod whose annotation does not parse
// leaves the part of its GPU that no resolved holder holds unknown, never
// unallocated, with the reason counted; the other GPUs are not affected.
func TestBrokenAnnotationIsUnknown(t *testing.T) {
	n := shareNode{
		allocatable: hamiAllocatable,
		pods: []attribution.Pod{
			hamiPodAt("ml", "ok", fracH100, "20389,25"),
			hamiPodAt("ml", "broken", fracH100, "lots,25"),
			hamiPodAt("ml", "a100", fracA100, "20480,0"),
		},
		kubelet:  []kubeletsim.Pod{hamiKubelet("ml", "ok", fracH100, 0), hamiKubelet("ml", "broken", fracH100, 1), hamiKubelet("ml", "a100", fracA100, 0)},
		activity: [3]float64{0.3, 0.3, 0},
	}
	eur, est, attr := n.run(t)
	// ok: 20389 / 81559 = .249991 (NVML, no registration) and .25 cores:
	// d = .25, R = min(1 − .249991, 1 − .25) = .75: pays .25 = 0.327388;
	// the rest unknown, 0.982164.
	checkEUR(t, eur, fracH100, rateH100, map[string]float64{
		"ml/ok/c0 busy": rateH100 * 0.25, "unknown": rateH100 * 0.75, "unallocated": 0,
	})
	// The A100: half of its memory, no core limit: .5 busy, .5 unallocated.
	checkEUR(t, eur, fracA100, rateA100, map[string]float64{"ml/a100/c0 busy": rateA100 / 2, "unallocated": rateA100 / 2})
	// Alone on its GPU, its activity is the GPU's: measured, not estimated.
	if est["ml/a100/c0"] != 0 {
		t.Errorf("a lone holder's time estimated: %v", est)
	}
	if attr.UnresolvedTotal[attribution.ReasonHAMiMalformed] != 1 {
		t.Errorf("unresolved %+v, want one hami_annotation_malformed", attr.Unresolved)
	}
}

// TestDRASharedByConsumedCapacity: two claims share an H100 by consumed
// memory, 20Gi and 40Gi of 80Gi: .25 and .5, .25 unallocated.
func TestDRASharedByConsumedCapacity(t *testing.T) {
	slices := attribution.NewStaticSlices(nil, []attribution.ResourceSlice{{
		Spec: attribution.ResourceSliceSpec{Driver: attribution.DefaultDRADriver, Pool: attribution.ResourcePool{Name: "node-a", Generation: 1}, NodeName: "node-a",
			Devices: []attribution.DeviceSpec{{Name: "gpu-1", DeviceFields: attribution.DeviceFields{
				Attributes: map[string]attribution.DeviceAttribute{"uuid": {String: func(s string) *string { return &s }(fracH100)}},
				Capacity:   map[string]attribution.DeviceCapacity{"memory": {Value: "80Gi"}},
			}}}},
	}})
	share := func(s string) *string { return &s }
	claim := func(name, shareID, mem string) attribution.ResourceClaim {
		return attribution.NewResourceClaim("ml", name, []attribution.ClaimResult{{Request: "gpu", Driver: attribution.DefaultDRADriver,
			Pool: "node-a", Device: "gpu-1", ShareID: share(shareID), ConsumedCapacity: map[string]string{"memory": mem}}})
	}
	ctr := func(name, shareID string) kubeletsim.Pod {
		return kubeletsim.Pod{Namespace: "ml", Name: name, Containers: []kubeletsim.Container{{Name: "main", Claims: []kubeletsim.Claim{{
			Name: name, Namespace: "ml", Devices: []kubeletsim.ClaimDevice{{Driver: attribution.DefaultDRADriver, Pool: "node-a", Device: "gpu-1", ShareID: shareID}}}}}}}
	}
	eur, _, attr := shareNode{
		slices:   slices,
		claims:   attribution.NewStaticClaims([]attribution.ResourceClaim{claim("small", "s-1", "20Gi"), claim("big", "s-2", "40Gi")}),
		kubelet:  []kubeletsim.Pod{ctr("small", "s-1"), ctr("big", "s-2")},
		activity: [3]float64{0, 0.9, 0},
	}.run(t)
	checkEUR(t, eur, fracH100, rateH100, map[string]float64{
		"ml/small/main busy": rateH100 * 0.25, "ml/big/main busy": rateH100 * 0.5, "unallocated": rateH100 * 0.25,
	})
	for _, h := range attr.Holders[fracH100] {
		if h.Sharing != attribution.DRA || !h.Fractional {
			t.Errorf("holder %+v, want a fractional DRA share", h)
		}
	}
}
