package attribution_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
)

// fracNode is a device table with memory: two H100s (81559 MiB, what NVML
// reports for an H100 80GB) and a T4 (15360 MiB).
var fracNode = []attribution.Device{
	{UUID: gpu0, Minor: 0, GPUInstanceID: -1, ComputeInstanceID: -1, MemoryMiB: 81559},
	{UUID: gpu1, Minor: 1, GPUInstanceID: -1, ComputeInstanceID: -1, MemoryMiB: 81559},
	{UUID: gpu2, Minor: 2, GPUInstanceID: -1, ComputeInstanceID: -1, MemoryMiB: 15360},
}

// vgpus returns the IDs HAMi's device plugin advertises for uuid: uuid-0 … uuid-(n−1).
func vgpus(uuid string, n int) []string {
	ids := make([]string, n)
	for k := range ids {
		ids[k] = fmt.Sprintf("%s-%d", uuid, k)
	}
	return ids
}

// hamiPod is a pod HAMi allocated: one container per grant, in order, each
// "<UUID>,NVIDIA,<mem>,<cores>", with bind-phase success.
func hamiPod(ns, name string, grants ...string) attribution.Pod {
	p := attribution.Pod{Namespace: ns, Name: name, Phase: "Running", Annotations: map[string]string{
		"hami.io/bind-phase": "success", "hami.io/vgpu-node": "node-a", "hami.io/vgpu-devices-to-allocate": ";",
	}}
	var ann strings.Builder
	for i, g := range grants {
		p.Containers = append(p.Containers, fmt.Sprintf("c%d", i))
		ann.WriteString(g + ":;")
	}
	p.Annotations["hami.io/vgpu-devices-allocated"] = ann.String()
	return p
}

// hamiRegistration is the node annotation of HAMi's device plugin for
// fracNode's GPUs 0 and 1, GPU 0 registered with 80000 MiB (as a
// deviceMemoryScaling below 1 would), GPU 1 not at all.
const hamiRegistration = `[{"id":"` + gpu0 + `","count":10,"devmem":80000,"devcore":100,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true}]`

func fracHarness(t *testing.T, pods attribution.PodSource) *harness {
	t.Helper()
	h := newHarness(t, func(c *attribution.Config) { c.Pods = pods })
	h.client.SetDevices(fracNode)
	return h
}

func hamiHolder(ns, p, c string, mem, cores float64) attribution.Holder {
	return attribution.Holder{Namespace: ns, Pod: p, Container: c, Resource: "nvidia.com/gpu",
		Sharing: attribution.HAMi, Replicas: 1, Fractional: true, Memory: mem, Cores: cores}
}

func unresolvedReasons(s *attribution.Snapshot) []string {
	var out []string
	for _, u := range s.Unresolved {
		out = append(out, fmt.Sprintf("%s/%s/%s %s %s", u.Namespace, u.Pod, u.Container, u.GPU, u.Reason))
	}
	return out
}

// TestClientHAMi: HAMi's virtual device IDs are never time-slice replicas;
// each container holds what its pod's hami.io/vgpu-devices-allocated grants,
// as fractions of HAMi's registered capacity (or NVML's memory and 100
// cores), on the GPU the annotation names.
func TestClientHAMi(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	pods := []attribution.Pod{
		// HAMi #3073: four pods at 25 % of GPU 0 (registered 80000 MiB):
		// 20000 / 80000 = .25, 25 / 100 = .25.
		hamiPod("team-a", "p1", gpu0+",NVIDIA,20000,25"),
		hamiPod("team-a", "p2", gpu0+",NVIDIA,20000,25"),
		hamiPod("team-b", "p3", gpu0+",NVIDIA,20000,25"),
		// The kubelet named GPU 1's virtual device; the annotation says GPU 0.
		hamiPod("team-b", "p4", gpu0+",NVIDIA,20000,25"),
		// GPU 1 is not registered: NVML's 81559 MiB; no core limit.
		// 40779.5 would be half: 8155 / 81559 ≈ .099989.
		hamiPod("team-c", "small", gpu1+",NVIDIA,8155,0"),
		// Not HAMi's: no annotation.
		{Namespace: "other", Name: "plain", Phase: "Running", Containers: []string{"main"}},
		// Allocated but terminal: holds nothing.
		func() attribution.Pod {
			p := hamiPod("team-c", "done", gpu1+",NVIDIA,40000,50")
			p.Phase = "Succeeded"
			return p
		}(),
	}
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true, pods, hamiRegistration)))
	h.sim.SetPods([]kubeletsim.Pod{
		pod("team-a", "p1", ctr("c0", gpu, gpu0+"-0")),
		pod("team-a", "p2", ctr("c0", gpu, gpu0+"-1")),
		pod("team-b", "p3", ctr("c0", gpu, gpu0+"-2")),
		pod("team-b", "p4", ctr("c0", gpu, gpu1+"-3")),
		pod("team-c", "small", ctr("c0", gpu, gpu1+"-0")),
	})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: gpu, IDs: append(vgpus(gpu0, 10), vgpus(gpu1, 10)...)}})
	s := h.refresh(t)
	want := map[string][]attribution.Holder{
		gpu0: {
			hamiHolder("team-a", "p1", "c0", 0.25, 0.25), hamiHolder("team-a", "p2", "c0", 0.25, 0.25),
			hamiHolder("team-b", "p3", "c0", 0.25, 0.25), hamiHolder("team-b", "p4", "c0", 0.25, 0.25),
		},
		gpu1: {hamiHolder("team-c", "small", "c0", 8155.0/81559, 0)},
	}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, want)
	}
	// The virtual devices advertise each GPU once: no replicas, nothing unknown.
	if !reflect.DeepEqual(s.Replicas, map[string]int{gpu0: 1, gpu1: 1}) || s.UnknownIDs != 0 {
		t.Errorf("replicas %v, unknown IDs %d; want each GPU once, none unknown", s.Replicas, s.UnknownIDs)
	}
	if len(s.Unresolved) != 0 || !s.HoldersKnownOn(gpu0, "") || !s.HoldersKnownOn(gpu1, "") {
		t.Errorf("unresolved %v; want none", unresolvedReasons(s))
	}
	if _, ok := s.Exclusive(gpu1); ok {
		t.Error("a lone HAMi holder holds its GPU exclusively: device series would carry its labels")
	}
}

// TestClientHAMiCoreScaling: cores are a fraction of the cores HAMi offers,
// the registration's devcore (100 × deviceCoreScaling), not of 100. GPU 0 is
// registered with deviceCoreScaling 2 (devcore 200) and deviceMemoryScaling
// 1 (devmem 80000): a pod granted 20000 MiB and 50 cores holds
// 20000 / 80000 = 0.25 of the memory and 50 / 200 = 0.25 of the cores
// (50 / 100 = 0.5 would make its dominant share twice what it reserved).
func TestClientHAMiCoreScaling(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	reg := `[{"id":"` + gpu0 + `","count":10,"devmem":80000,"devcore":200,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true}]`
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true,
		[]attribution.Pod{hamiPod("ml", "half-cores", gpu0+",NVIDIA,20000,50")}, reg)))
	h.sim.SetPods([]kubeletsim.Pod{pod("ml", "half-cores", ctr("c0", gpu, gpu0+"-0"))})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: gpu, IDs: vgpus(gpu0, 10)}})
	s := h.refresh(t)
	want := map[string][]attribution.Holder{gpu0: {hamiHolder("ml", "half-cores", "c0", 0.25, 0.25)}}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, want)
	}
}

// TestClientHAMiUnresolved: a broken annotation, a MIG grant of an older
// HAMi (HAMi #1043's "[template-slot]" after the UUID), an unfinished
// allocation, a GPU not on the node and unwatched pods are unresolved, with their reason,
// never a guess; the GPU is known only where the annotation names one of
// this node's.
func TestClientHAMiUnresolved(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	allocating := hamiPod("ml", "allocating", gpu0+",NVIDIA,20000,25")
	allocating.Annotations["hami.io/bind-phase"] = "allocating"
	pods := []attribution.Pod{
		hamiPod("ml", "ok", gpu0+",NVIDIA,20000,25"),
		hamiPod("ml", "bad-memory", gpu1+",NVIDIA,20k,25"),
		hamiPod("ml", "garbage", "garbage"),
		hamiPod("ml", "elsewhere", "GPU-99999999-aaaa-bbbb-cccc-999999999999,NVIDIA,1000,10"),
		hamiPod("ml", "mig", gpu1+"[1-0],NVIDIA,10240,45"),
		allocating,
	}
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true, pods, hamiRegistration)))
	h.sim.SetPods([]kubeletsim.Pod{
		pod("ml", "ok", ctr("c0", gpu, gpu0+"-0")),
		pod("ml", "bad-memory", ctr("c0", gpu, gpu1+"-1")),
		pod("ml", "garbage", ctr("c0", gpu, gpu1+"-2")),
		pod("ml", "elsewhere", ctr("c0", gpu, gpu1+"-3")),
		pod("ml", "allocating", ctr("c0", gpu, gpu0+"-4")),
		pod("ml", "mig", ctr("c0", gpu, gpu1+"-4")),
		pod("ml", "unknown-pod", ctr("c0", gpu, gpu0+"-5")),
	})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: gpu, IDs: append(vgpus(gpu0, 10), vgpus(gpu1, 10)...)}})
	s := h.refresh(t)
	wantUnresolved := []string{
		"ml/allocating/c0  hami_not_allocated",
		"ml/bad-memory/ " + gpu1 + " hami_annotation_malformed",
		"ml/elsewhere/c0  hami_gpu_not_on_node",
		"ml/garbage/  hami_annotation_malformed",
		"ml/mig/ " + gpu1 + " hami_mig",
		"ml/unknown-pod/c0  hami_not_allocated",
	}
	if got := unresolvedReasons(s); !reflect.DeepEqual(got, wantUnresolved) {
		t.Errorf("unresolved:\n got %q\nwant %q", got, wantUnresolved)
	}
	if !reflect.DeepEqual(s.Holders, map[string][]attribution.Holder{gpu0: {hamiHolder("ml", "ok", "c0", 0.25, 0.25)}}) {
		t.Errorf("holders %+v, want ml/ok alone", s.Holders)
	}
	// Some unresolved holder's GPU is not known: no device's free part is known free.
	if s.HoldersKnown() || s.HoldersKnownOn(gpu0, "") {
		t.Error("holders known while a holder's GPU is not")
	}
	var want [attribution.NumUnresolvedReasons]uint64
	want[attribution.ReasonHAMiNotAllocated] = 2
	want[attribution.ReasonHAMiMalformed] = 2
	want[attribution.ReasonHAMiNotOnNode] = 1
	want[attribution.ReasonHAMiMIG] = 1
	if s.UnresolvedTotal != want {
		t.Errorf("totals %v, want %v", s.UnresolvedTotal, want)
	}
	// Counted once per holder per refresh.
	s = h.refresh(t)
	if s.UnresolvedTotal[attribution.ReasonHAMiMalformed] != 4 {
		t.Errorf("after two refreshes %d malformed, want 4", s.UnresolvedTotal[attribution.ReasonHAMiMalformed])
	}
	if n := strings.Count(h.log.String(), "could not be resolved"); n != len(wantUnresolved) {
		t.Errorf("logged %d times, want once per pod and reason (%d):\n%s", n, len(wantUnresolved), h.log.String())
	}
}

// TestClientHAMiMalformedOnKnownGPU: a broken annotation that names a GPU of
// this node leaves the other GPUs known.
func TestClientHAMiMalformedOnKnownGPU(t *testing.T) {
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true,
		[]attribution.Pod{hamiPod("ml", "bad", gpu1+",NVIDIA,1000,-1")}, "")))
	h.sim.SetPods([]kubeletsim.Pod{pod("ml", "bad", ctr("c0", "nvidia.com/gpu", gpu1+"-0"))})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: append(vgpus(gpu0, 2), vgpus(gpu1, 2)...)}})
	s := h.refresh(t)
	if !s.HoldersKnown() || !s.HoldersKnownOn(gpu0, "") || s.HoldersKnownOn(gpu1, "") {
		t.Errorf("known: node %v, GPU 0 %v, GPU 1 %v; want true, true, false (%v)",
			s.HoldersKnown(), s.HoldersKnownOn(gpu0, ""), s.HoldersKnownOn(gpu1, ""), unresolvedReasons(s))
	}
}

// TestClientFractionalUnwatched: without the pods, HAMi's virtual devices are
// unresolved; a pod in KAI's reservation namespace is too while the pods are
// watched but not listed, and stays the exclusive holder it looks like when
// they are not watched at all.
func TestClientFractionalUnwatched(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	kubelet := []kubeletsim.Pod{
		pod("ml", "hami", ctr("c0", gpu, gpu0+"-0")),
		pod("kai-resource-reservation", "gpu-reservation-0123456789abcdef", ctr("resource-reservation", gpu, gpu1)),
	}
	for _, tc := range []struct {
		name   string
		pods   attribution.PodSource
		want   []string
		holder bool // the reservation pod stays GPU 1's holder
	}{
		{"not watched", nil, []string{"ml/hami/c0  pods_not_watched"}, true},
		{"not listed yet", attribution.NewMemoryPods(attribution.NewPodView(false, nil, "")), []string{
			"kai-resource-reservation/gpu-reservation-0123456789abcdef/resource-reservation " + gpu1 + " pods_not_watched",
			"ml/hami/c0  pods_not_watched"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fracHarness(t, tc.pods)
			h.sim.SetPods(kubelet)
			h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: gpu, IDs: append(vgpus(gpu0, 4), gpu1)}})
			s := h.refresh(t)
			if got := unresolvedReasons(s); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("unresolved %q, want %q", got, tc.want)
			}
			if _, held := s.Holders[gpu1]; held != tc.holder {
				t.Errorf("GPU 1 held %v, want %v: %+v", held, tc.holder, s.Holders)
			}
			if s.HoldersKnown() {
				t.Error("holders known with HAMi's grants unknown")
			}
		})
	}
}

// kaiReservation is a reservation pod of KAI's binder for group on GPU uuid
// ("" before it patched its annotation).
func kaiReservation(name, group, uuid string) attribution.Pod {
	p := attribution.Pod{Namespace: "kai-resource-reservation", Name: name, Phase: "Running",
		Containers:  []string{"resource-reservation"},
		Labels:      map[string]string{"app": "kai-resource-reservation", "runai-gpu-group": group},
		Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}}
	if uuid != "" {
		p.Annotations["run.ai/reserve_for_gpu_index"] = uuid
	}
	return p
}

// kaiSharer is a pod KAI bound to a portion of group's GPU.
func kaiSharer(ns, name, group string, ann map[string]string) attribution.Pod {
	a := map[string]string{"received-resource-type": "Fraction", "runai/shared-gpu-configmap": name + "-shared-gpu"}
	for k, v := range ann {
		a[k] = v
	}
	return attribution.Pod{Namespace: ns, Name: name, Phase: "Running", Containers: []string{"main", "sidecar"},
		Labels: map[string]string{"runai-gpu-group": group, "kai.scheduler/queue": "team"}, Annotations: a}
}

func kaiHolder(ns, p, c string, mem float64) attribution.Holder {
	return attribution.Holder{Namespace: ns, Pod: p, Container: c,
		Sharing: attribution.KAI, Replicas: 1, Fractional: true, Memory: mem}
}

// TestClientKAI: sharers hold their portions of the GPU their group's
// reservation pod holds, which stops being its holder; a reservation without
// sharers holds its GPU whole, as a reservation; a sharer whose reservation
// is not on the node, or whose request is broken, is unresolved.
func TestClientKAI(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	pods := []attribution.Pod{
		kaiReservation("gpu-reservation-1111111111111111", "g1", gpu1),
		// No annotation yet: the kubelet's device names the GPU.
		kaiReservation("gpu-reservation-2222222222222222", "g2", ""),
		kaiSharer("team-a", "nb", "g1", map[string]string{"gpu-fraction": "0.5"}),
		// 24467 MiB of 81559: ceil(29.9991) / 100 = .30.
		kaiSharer("team-b", "infer", "g1", map[string]string{"gpu-memory": "24467", "gpu-fraction-container-name": "sidecar"}),
		kaiSharer("team-b", "orphan", "g9", map[string]string{"gpu-fraction": "0.2"}),
		kaiSharer("team-b", "broken", "g1", map[string]string{"gpu-fraction": "half"}),
		func() attribution.Pod {
			p := kaiSharer("team-b", "finished", "g2", map[string]string{"gpu-fraction": "0.4"})
			p.Phase = "Failed"
			return p
		}(),
	}
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true, pods, "")))
	h.sim.SetPods([]kubeletsim.Pod{
		pod("kai-resource-reservation", "gpu-reservation-1111111111111111", ctr("resource-reservation", gpu, gpu1)),
		pod("kai-resource-reservation", "gpu-reservation-2222222222222222", ctr("resource-reservation", gpu, gpu2)),
		pod("ml", "whole", ctr("main", gpu, gpu0)),
	})
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: gpu, IDs: []string{gpu0, gpu1, gpu2}}})
	s := h.refresh(t)
	reservation := kaiHolder("kai-resource-reservation", "gpu-reservation-2222222222222222", "resource-reservation", 1)
	reservation.Reservation, reservation.Resource = true, gpu
	want := map[string][]attribution.Holder{
		gpu0: {{Namespace: "ml", Pod: "whole", Container: "main", Resource: gpu, Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
		gpu1: {kaiHolder("team-a", "nb", "main", 0.5), kaiHolder("team-b", "infer", "sidecar", 0.30)},
		gpu2: {reservation},
	}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, want)
	}
	wantUnresolved := []string{
		"team-b/broken/ " + gpu1 + " kai_request_malformed",
		"team-b/orphan/  kai_reservation_missing",
	}
	if got := unresolvedReasons(s); !reflect.DeepEqual(got, wantUnresolved) {
		t.Errorf("unresolved %q, want %q", got, wantUnresolved)
	}
}

// TestClientKAIReservationUnresolved: a reservation pod that names no GPU
// (no annotation yet, no device in the kubelet's answer) leaves its sharers
// unresolved.
func TestClientKAIReservationUnresolved(t *testing.T) {
	pods := []attribution.Pod{
		kaiReservation("gpu-reservation-3333333333333333", "g3", ""),
		kaiSharer("team-a", "nb", "g3", map[string]string{"gpu-fraction": "0.5"}),
	}
	h := fracHarness(t, attribution.NewMemoryPods(attribution.NewPodView(true, pods, "")))
	h.sim.SetAllocatable([]kubeletsim.Devices{{Resource: "nvidia.com/gpu", IDs: []string{gpu0, gpu1, gpu2}}})
	s := h.refresh(t)
	if got, want := unresolvedReasons(s), []string{"team-a/nb/  kai_reservation_unresolved"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unresolved %q, want %q", got, want)
	}
	if len(s.Holders) != 0 {
		t.Errorf("holders %+v, want none", s.Holders)
	}
}

// TestClientDRAConsumedCapacity: claims sharing a device whose slice
// publishes capacity hold what they consumed of it; a claim whose consumed
// capacity cannot be read is unresolved on that GPU.
func TestClientDRAConsumedCapacity(t *testing.T) {
	slices := fakeSlices{nvRef("gpu-0"): {Type: "gpu", UUID: gpu0, PlacementStart: -1,
		Capacity: map[string]float64{"memory": 80 << 30, "cores": 100}}}
	share := func(id string) *string { return &id }
	claims := attribution.NewStaticClaims([]attribution.ResourceClaim{
		attribution.NewResourceClaim("ml", "small", []attribution.ClaimResult{{Request: "gpu", Driver: nvDriver, Pool: nodePool, Device: "gpu-0",
			ShareID: share("s1"), ConsumedCapacity: map[string]string{"memory": "20Gi", "cores": "10"}}}),
		attribution.NewResourceClaim("ml", "big", []attribution.ClaimResult{{Request: "gpu", Driver: nvDriver, Pool: nodePool, Device: "gpu-0",
			ShareID: share("s2"), ConsumedCapacity: map[string]string{"memory": "40Gi", "cores": "60"}}}),
	})
	h := newHarness(t, func(c *attribution.Config) { c.Slices, c.Claims = slices, claims })
	claimOf := func(name, shareID string) kubeletsim.Container {
		return kubeletsim.Container{Name: "main", Claims: []kubeletsim.Claim{{Name: name, Namespace: "ml", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", shareID)}}}}
	}
	h.sim.SetPods([]kubeletsim.Pod{
		pod("ml", "small", claimOf("small", "s1")),
		pod("ml", "big", claimOf("big", "s2")),
		pod("ml", "lost", claimOf("lost", "s3")),
	})
	s := h.refresh(t)
	dra := func(p, claim, shareID string, mem, cores float64) attribution.Holder {
		return attribution.Holder{Namespace: "ml", Pod: p, Container: "main", Resource: nvDriver, Sharing: attribution.DRA,
			Replicas: 1, Claim: claim, ShareID: shareID, Fractional: true, Memory: mem, Cores: cores}
	}
	// 20Gi / 80Gi = .25 memory, 10 / 100 = .1 cores; 40Gi / 80Gi = .5, .6.
	want := map[string][]attribution.Holder{gpu0: {dra("big", "big", "s2", 0.5, 0.6), dra("small", "small", "s1", 0.25, 0.1)}}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, want)
	}
	if got := unresolvedReasons(s); len(got) != 1 || !strings.HasPrefix(got[0], "ml/lost/main "+gpu0+" dra_claim_unavailable") {
		t.Errorf("unresolved %q, want ml/lost on GPU 0", got)
	}
	if s.HoldersKnownOn(gpu0, "") {
		t.Error("GPU 0's holders known with a claim on it unresolved")
	}
}

// TestClientDRAConsumedCapacitySplitOverContainers: the containers of one
// allocation split what it consumed equally, as they split a device they
// share equally: pod ml/pair's containers main and side both use claim big,
// which consumed 40Gi of 80Gi memory (.5) and 60 of 100 cores (.6), so each
// holds .5 / 2 = .25 memory and .6 / 2 = .3 cores; ml/small alone holds all
// of its 20Gi and 10 cores, .25 and .1. Σ memory .75, Σ cores .7: the
// pod's two containers together hold what its claim consumed, not twice it.
func TestClientDRAConsumedCapacitySplitOverContainers(t *testing.T) {
	slices := fakeSlices{nvRef("gpu-0"): {Type: "gpu", UUID: gpu0, PlacementStart: -1,
		Capacity: map[string]float64{"memory": 80 << 30, "cores": 100}}}
	share := func(id string) *string { return &id }
	claims := attribution.NewStaticClaims([]attribution.ResourceClaim{
		attribution.NewResourceClaim("ml", "small", []attribution.ClaimResult{{Request: "gpu", Driver: nvDriver, Pool: nodePool, Device: "gpu-0",
			ShareID: share("s1"), ConsumedCapacity: map[string]string{"memory": "20Gi", "cores": "10"}}}),
		attribution.NewResourceClaim("ml", "big", []attribution.ClaimResult{{Request: "gpu", Driver: nvDriver, Pool: nodePool, Device: "gpu-0",
			ShareID: share("s2"), ConsumedCapacity: map[string]string{"memory": "40Gi", "cores": "60"}}}),
	})
	h := newHarness(t, func(c *attribution.Config) { c.Slices, c.Claims = slices, claims })
	claimOf := func(ctrName, claim, shareID string) kubeletsim.Container {
		return kubeletsim.Container{Name: ctrName, Claims: []kubeletsim.Claim{{Name: claim, Namespace: "ml", Devices: []kubeletsim.ClaimDevice{sharedDev("gpu-0", shareID)}}}}
	}
	h.sim.SetPods([]kubeletsim.Pod{
		pod("ml", "small", claimOf("main", "small", "s1")),
		pod("ml", "pair", claimOf("main", "big", "s2"), claimOf("side", "big", "s2")),
	})
	s := h.refresh(t)
	dra := func(p, c, claim, shareID string, mem, cores float64) attribution.Holder {
		return attribution.Holder{Namespace: "ml", Pod: p, Container: c, Resource: nvDriver, Sharing: attribution.DRA,
			Replicas: 1, Claim: claim, ShareID: shareID, Fractional: true, Memory: mem, Cores: cores}
	}
	want := map[string][]attribution.Holder{gpu0: {
		dra("pair", "main", "big", "s2", 0.25, 0.3), dra("pair", "side", "big", "s2", 0.25, 0.3),
		dra("small", "main", "small", "s1", 0.25, 0.1),
	}}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders:\n got %+v\nwant %+v", s.Holders, want)
	}
}

// TestPodViewKeepsOnlyWhatItReads: labels and annotations other than HAMi's
// and KAI's are dropped, and a huge annotation does not parse.
func TestPodViewKeepsOnlyWhatItReads(t *testing.T) {
	v := attribution.NewPodView(true, []attribution.Pod{{Namespace: "b", Name: "x",
		Labels:      map[string]string{"runai-gpu-group/g": "g", "team": "x", "app": "a"},
		Annotations: map[string]string{"gpu-fraction": "0.5", "kubectl.kubernetes.io/last-applied-configuration": "{…}", "hami.io/vgpu-devices-allocated": strings.Repeat("x", 70<<10)},
	}, {Namespace: "a", Name: "y"}}, "")
	if v.Pods[0].Name != "y" {
		t.Errorf("pods not sorted: %+v", v.Pods)
	}
	p := v.Pods[1]
	if !reflect.DeepEqual(p.Labels, map[string]string{"runai-gpu-group/g": "g", "app": "a"}) || len(p.Annotations) != 2 || p.Annotations["gpu-fraction"] != "0.5" ||
		len(p.Annotations["hami.io/vgpu-devices-allocated"]) > 64 {
		t.Errorf("kept %+v %+v", p.Labels, p.Annotations)
	}
}
