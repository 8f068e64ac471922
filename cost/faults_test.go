package cost

import (
	"math"
	"testing"
	"time"
)

// The worked examples of docs/cost.md, "What is charged when things fail",
// with the built-in book. Expected numbers are computed by hand in the doc.

const h100 = "NVIDIA H100 80GB HBM3"

// TestFaultLostGPU: an H100 at 400 W held by a busy pod falls off the bus.
// From the tick that sees it lost, its capital accrues as lost with no holder,
// energy 0; the pod's series freeze and leave after the retention window.
func TestFaultLostGPU(t *testing.T) {
	pod := HolderKey{"ml", "train-0", "trainer"}
	gpu := []GPUState{{UUID: "GPU-h100", Model: h100, PowerW: 400, Activity: 0.9, HoldersKnown: true,
		Holders: []Holder{{Key: pod, Share: 1, Activity: math.NaN()}}}}
	l := NewLedger(&bookSource{Default()})
	l.Advance(0, gpu)
	l.Advance(time.Hour, gpu) // busy at 1.309553 EUR/h
	gpu[0].Lost, gpu[0].PowerW, gpu[0].Activity = true, math.NaN(), math.NaN()
	l.Advance(time.Minute, gpu) // lost: capital 1.141553 EUR/h only
	checkRate(t, l, "GPU-h100", Rate{Capital: 1.141552511415525})
	checkSeries(t, l, []wantSeries{
		{"GPU-h100", pod, Busy, 3600, 1.309552511415525},
		{"GPU-h100", pod, Idle, 0, 0},
		{"GPU-h100", HolderKey{}, Unallocated, 0, 0},
		{"GPU-h100", HolderKey{}, Lost, 60, 1.141552511415525 / 60},
	})
	// The holder's series stay frozen within the window, then go.
	l.Advance(3*time.Minute, gpu)
	if _, ok := totalsByKey(t, l)[seriesKey{"GPU-h100", pod, Busy}]; !ok {
		t.Error("the holder's series left before the retention window ended")
	}
	l.Advance(time.Minute, gpu)
	checkSeries(t, l, []wantSeries{
		{"GPU-h100", HolderKey{}, Unallocated, 0, 0},
		{"GPU-h100", HolderKey{}, Lost, 300, 1.141552511415525 / 12},
	})
	// A flat-priced GPU accrues its whole flat rate as lost.
	flat := NewLedger(&bookSource{mustParse(t, "models: [{match: .*, hourly_eur: 2.5}]\n")})
	flat.Advance(time.Hour, []GPUState{{UUID: "G", Model: "Tesla T4", PowerW: math.NaN(), Lost: true, HoldersKnown: true}})
	checkSeries(t, flat, []wantSeries{{"G", HolderKey{}, Unallocated, 0, 0}, {"G", HolderKey{}, Lost, 3600, 2.5}})
}

// TestFaultHoldersUnknown: attribution off or stale past stale-after (no
// holders known) — an A100 at 250 W is wholly unknown, never unallocated. A
// GPU the kubelet positively reports unheld stays unallocated, and a device
// with one known holder and an unmappable claim charges the rest as unknown.
func TestFaultHoldersUnknown(t *testing.T) {
	pod := HolderKey{"ml", "train-0", "main"}
	l := NewLedger(&bookSource{Default()})
	l.Advance(time.Hour, []GPUState{
		{UUID: "GPU-off", Model: "NVIDIA A100-SXM4-80GB", PowerW: 250, Activity: 0.02},
		{UUID: "GPU-free", Model: "NVIDIA A100-SXM4-80GB", PowerW: 250, Activity: 0.02, HoldersKnown: true},
		{UUID: "GPU-dra", Model: "NVIDIA A100-SXM4-80GB", PowerW: 250, Activity: 0.02,
			Holders: []Holder{{Key: pod, Share: 0.5, Activity: math.NaN()}}},
	})
	checkSeries(t, l, []wantSeries{
		{"GPU-off", HolderKey{}, Unallocated, 0, 0},
		{"GPU-off", HolderKey{}, Unknown, 3600, 0.6757762557077626},
		{"GPU-free", HolderKey{}, Unallocated, 3600, 0.6757762557077626},
		{"GPU-dra", pod, Idle, 1800, 0.6757762557077626 / 2},
		{"GPU-dra", pod, Busy, 0, 0},
		{"GPU-dra", HolderKey{}, Unallocated, 0, 0},
		{"GPU-dra", HolderKey{}, Unknown, 1800, 0.6757762557077626 / 2},
	})
}

// TestFaultBackendGap: two H100s at 400 W; the backend fails for ten
// minutes at a 1 s interval. The recovery sample covers at most 2 s; the other
// 598 s are unknown, charged at HeldThroughout the last good sample and the
// recovery one. GPU-a's exclusive holder held it at both ends: its 598 s are
// unknown on its series (the holder is known, its activity is not). On GPU-b,
// dev/nb held a quarter at both ends (and half at recovery: it keeps the
// smaller share); dev/old's quarter ended and dev/new's quarter started within
// the gap, so neither is charged for it: the other 3/4 are unknown with no
// holder. dev/old's series left after the 5-minute retention.
func TestFaultBackendGap(t *testing.T) {
	pod := HolderKey{"serving", "llm-0", "server"}
	nb, old, started := HolderKey{"dev", "nb", "jupyter"}, HolderKey{"dev", "old", "jupyter"}, HolderKey{"dev", "new", "jupyter"}
	gpus := func(b ...Holder) []GPUState {
		return []GPUState{
			{UUID: "GPU-a", Model: h100, PowerW: 400, Activity: 0.8, HoldersKnown: true,
				Holders: []Holder{{Key: pod, Share: 1, Activity: math.NaN()}}},
			{UUID: "GPU-b", Model: h100, PowerW: 400, Activity: 0.8, HoldersKnown: true, Holders: b},
		}
	}
	before := gpus(Holder{Key: nb, Share: 0.25, Activity: math.NaN()}, Holder{Key: old, Share: 0.25, Activity: math.NaN()})
	after := gpus(Holder{Key: nb, Share: 0.5, Activity: math.NaN()}, Holder{Key: started, Share: 0.25, Activity: math.NaN()})
	l := NewLedger(&bookSource{Default()})
	l.Advance(0, before)
	l.AdvanceUnmeasured(598*time.Second, HeldThroughout(nil, before, after))
	l.Advance(2*time.Second, after)
	const rate = 1.309552511415525 // EUR/h
	checkSeries(t, l, []wantSeries{
		{"GPU-a", pod, Unknown, 598, 0.21753122272957887},
		{"GPU-a", pod, Busy, 2, 0.0007275291730086251},
		{"GPU-a", pod, Idle, 0, 0},
		{"GPU-a", HolderKey{}, Unallocated, 0, 0},
		{"GPU-b", nb, Unknown, 149.5, rate * 598 / 3600 / 4},
		{"GPU-b", HolderKey{}, Unknown, 448.5, rate * 598 / 3600 * 3 / 4},
		{"GPU-b", nb, Busy, 1, rate / 3600},
		{"GPU-b", nb, Idle, 0, 0},
		{"GPU-b", started, Busy, 0.5, rate / 3600 / 2},
		{"GPU-b", started, Idle, 0, 0},
		{"GPU-b", HolderKey{}, Unallocated, 0.5, rate / 3600 / 2},
	})
	for _, tot := range l.AppendTotals(nil) {
		if tot.State == Unknown && (tot.Holder == old || tot.Holder == started) {
			t.Errorf("%s, which held GPU-b at one end of the gap only, has unknown %v s", tot.Holder.Pod, tot.Seconds)
		}
	}
}

// TestHeldThroughout: only holders at both ends keep a share, the smaller;
// a MIG instance matches by UUID; a GPU or instance new at recovery keeps none.
func TestHeldThroughout(t *testing.T) {
	a, b := HolderKey{"ns", "a", "c"}, HolderKey{"ns", "b", "c"}
	before := []GPUState{
		{UUID: "GPU-1", Holders: []Holder{{Key: a, Share: 0.75}, {Key: b, Share: 0.25}}},
		{UUID: "GPU-2", MIG: true, Instances: []Instance{{UUID: "MIG-x", Holders: []Holder{{Key: a, Share: 1}}}}},
	}
	after := []GPUState{
		{UUID: "GPU-3", Holders: []Holder{{Key: a, Share: 1}}},
		{UUID: "GPU-2", MIG: true, Instances: []Instance{{UUID: "MIG-y", Holders: []Holder{{Key: a, Share: 1}}},
			{UUID: "MIG-x", Holders: []Holder{{Key: a, Share: 0.5}, {Key: b, Share: 0.5}}}}},
		{UUID: "GPU-1", PowerW: 300, Holders: []Holder{{Key: b, Share: 0.5}, {Key: a, Share: 0.5}}},
	}
	got := HeldThroughout(nil, before, after)
	got = HeldThroughout(got, before, after) // reusing dst gives the same
	if len(got) != 3 || got[0].UUID != "GPU-3" || len(got[0].Holders) != 0 {
		t.Fatalf("a GPU new at recovery: %+v, want GPU-3 with no holders", got)
	}
	if in := got[1].Instances; len(in) != 2 || len(in[0].Holders) != 0 || len(in[1].Holders) != 1 || in[1].Holders[0] != (Holder{Key: a, Share: 0.5}) {
		t.Errorf("MIG instances = %+v, want MIG-y with none, MIG-x with a at 0.5", in)
	}
	if h := got[2].Holders; got[2].PowerW != 300 || len(h) != 2 || h[0] != (Holder{Key: b, Share: 0.25}) || h[1] != (Holder{Key: a, Share: 0.5}) {
		t.Errorf("GPU-1 = %+v, want the recovery readings, b at 0.25 and a at 0.5", got[2])
	}
	if &after[2].Holders[0] == &got[2].Holders[0] {
		t.Error("HeldThroughout shares after's holders array")
	}
}

// TestFaultFreeReplicas: one pod holds one of the four time-slicing replicas
// of an A100 at 300 W and is 30 % active. It pays for its activity plus a
// quarter of the unused time, 0.30 + 0.70 × 1/4 = 0.475; the rest is unallocated.
func TestFaultFreeReplicas(t *testing.T) {
	pod := HolderKey{"dev-alice", "notebook-0", "jupyter"}
	shares := ActivityShares(nil, []float64{0.30}, []float64{0.25})
	if !within(shares[0], 0.475) {
		t.Fatalf("lone holder's share = %v, want 0.475", shares[0])
	}
	l := NewLedger(&bookSource{Default()})
	l.Advance(time.Hour, []GPUState{{UUID: "GPU-ts", Model: "NVIDIA A100-PCIE-40GB", PowerW: 300, Activity: 0.30,
		HoldersKnown: true, Holders: []Holder{{Key: pod, Share: shares[0], Activity: 0.30}}}})
	checkSeries(t, l, []wantSeries{
		{"GPU-ts", pod, Busy, 1710, 0.3309687214611872},
		{"GPU-ts", pod, Idle, 0, 0},
		{"GPU-ts", HolderKey{}, Unallocated, 1890, 0.36580753424657536},
	})
}

// TestFaultStrandedMIG: an H100 at 400 W split into two 3g.40gb, both held
// and busy. The free compute slice has no memory slice left: no instance can
// use it, so with mig_weight compute each instance pays 3/7 + 1/7 × 3/6 = 1/2.
// With hostable slices (the default scenario's GPU 6: 3g.40gb + 2× 1g.10gb,
// 2 compute slices free that a 2g.20gb could use) the free slices stay unallocated.
func TestFaultStrandedMIG(t *testing.T) {
	a, b := HolderKey{"serving", "embed-0", "server"}, HolderKey{"serving", "embed-1", "server"}
	const rate = 1.309552511415525
	inst := func(uuid string, c, m int, h HolderKey) Instance {
		return Instance{UUID: uuid, ComputeSlices: c, MemorySlices: m, Activity: 0.5, HoldersKnown: true,
			Holders: []Holder{{Key: h, Share: 1, Activity: math.NaN()}}}
	}
	l := NewLedger(&bookSource{Default()})
	l.Advance(time.Hour, []GPUState{
		{UUID: "GPU-2x3g", Model: h100, PowerW: 400, MIG: true, HoldersKnown: true, Hostable: HostableSlices{Known: true},
			Instances: []Instance{inst("MIG-a", 3, 4, a), inst("MIG-b", 3, 4, b)}},
		{UUID: "GPU-6", Model: h100, PowerW: 400, MIG: true, HoldersKnown: true, Hostable: HostableSlices{Known: true, Compute: 2, Memory: 2},
			Instances: []Instance{inst("MIG-3g", 3, 4, a), inst("MIG-1g", 1, 1, b), {UUID: "MIG-1g-free", ComputeSlices: 1, MemorySlices: 1, Activity: 0, HoldersKnown: true}}},
	})
	checkSeries(t, l, []wantSeries{
		{"GPU-2x3g", HolderKey{}, Unallocated, 0, 0},
		{"MIG-a", a, Busy, 1800, 0.6547762557077625},
		{"MIG-b", b, Busy, 1800, 0.6547762557077625},
		{"MIG-a", a, Idle, 0, 0}, {"MIG-b", b, Idle, 0, 0},
		{"MIG-a", HolderKey{}, Unallocated, 0, 0}, {"MIG-b", HolderKey{}, Unallocated, 0, 0},

		{"GPU-6", HolderKey{}, Unallocated, 3600 * 2 / 7.0, rate * 2 / 7},
		{"MIG-3g", a, Busy, 3600 * 3 / 7.0, rate * 3 / 7},
		{"MIG-1g", b, Busy, 3600 / 7.0, rate / 7},
		{"MIG-1g-free", HolderKey{}, Unallocated, 3600 / 7.0, rate / 7},
		{"MIG-3g", a, Idle, 0, 0}, {"MIG-1g", b, Idle, 0, 0},
		{"MIG-3g", HolderKey{}, Unallocated, 0, 0}, {"MIG-1g", HolderKey{}, Unallocated, 0, 0},
	})
}

// TestFaultShortJobRetention: a job holds an H100 at 400 W for 2 minutes at
// a 1 s interval, then ends. Its series keep their final values (120 s busy,
// 0.043652 EUR) for the 5-minute retention window and then go; a pod of the
// same name that comes back within the window continues its counters, one
// that comes back later starts from 0.
func TestFaultShortJobRetention(t *testing.T) {
	job := HolderKey{"ci", "build-0", "main"}
	held := []GPUState{{UUID: "GPU-ci", Model: h100, PowerW: 400, Activity: 0.9, HoldersKnown: true,
		Holders: []Holder{{Key: job, Share: 1, Activity: math.NaN()}}}}
	free := []GPUState{{UUID: "GPU-ci", Model: h100, PowerW: 400, Activity: 0, HoldersKnown: true}}
	const rate = 1.309552511415525
	l := NewLedger(&bookSource{Default()})
	l.Advance(0, held)
	for range 120 {
		l.Advance(time.Second, held)
	}
	for range 299 {
		l.Advance(time.Second, free)
	}
	checkSeries(t, l, []wantSeries{
		{"GPU-ci", job, Busy, 120, 0.0436517503805175},
		{"GPU-ci", job, Idle, 0, 0},
		{"GPU-ci", HolderKey{}, Unallocated, 299, rate * 299 / 3600},
	})
	l.Advance(time.Second, free) // 5 minutes since the job was last held
	checkSeries(t, l, []wantSeries{{"GPU-ci", HolderKey{}, Unallocated, 300, rate * 300 / 3600}})
	l.Advance(time.Second, held) // a new build-0: from 0
	checkSeries(t, l, []wantSeries{
		{"GPU-ci", job, Busy, 1, rate / 3600},
		{"GPU-ci", job, Idle, 0, 0},
		{"GPU-ci", HolderKey{}, Unallocated, 300, rate * 300 / 3600},
	})
	l.Advance(time.Minute, free)
	l.Advance(time.Second, held) // back within the window: continues
	checkSeries(t, l, []wantSeries{
		{"GPU-ci", job, Busy, 2, 2 * rate / 3600},
		{"GPU-ci", job, Idle, 0, 0},
		{"GPU-ci", HolderKey{}, Unallocated, 360, rate * 360 / 3600},
	})

	// WithRetention sets the window; a MIG instance that leaves is retained too.
	short := NewLedger(&bookSource{Default()}, WithRetention(10*time.Second))
	migGPU := func(insts ...Instance) []GPUState {
		return []GPUState{{UUID: "GPU-m", Model: h100, PowerW: 400, MIG: true, HoldersKnown: true, Instances: insts}}
	}
	one := Instance{UUID: "MIG-x", ComputeSlices: 7, MemorySlices: 8, Activity: 0.9, HoldersKnown: true,
		Holders: []Holder{{Key: job, Share: 1, Activity: math.NaN()}}}
	short.Advance(time.Second, migGPU(one))
	short.Advance(9*time.Second, migGPU())
	if _, ok := totalsByKey(t, short)[seriesKey{"MIG-x", job, Busy}]; !ok {
		t.Error("a MIG instance's series left before its 10 s window ended")
	}
	short.Advance(time.Second, migGPU())
	checkSeries(t, short, []wantSeries{{"GPU-m", HolderKey{}, Unallocated, 10, rate * 10 / 3600}})
}

// TestFaultUnmappedDRA: an hour on H100s at 400 W while a DRA allocation of
// the node cannot be mapped (docs/cost.md). The whole GPU no mapped holder
// holds is unknown; on the MIG GPU the held 3g.40gb is busy, while the unheld
// 1g.10gb and the 3/7 of slices in no instance are unknown: nothing is
// unallocated. The same MIG GPU with only the kubelet's holders unknown
// (FreeSlicesMayBeHeld false) keeps its free slices unallocated.
func TestFaultUnmappedDRA(t *testing.T) {
	pod := HolderKey{"serving", "llm-0", "server"}
	migGPU := func(uuid string, mayBeHeld bool) GPUState {
		return GPUState{UUID: uuid, Model: h100, PowerW: 400, Activity: 0.8, MIG: true, FreeSlicesMayBeHeld: mayBeHeld,
			Hostable: HostableSlices{Known: true, Compute: 3, Memory: 3},
			Instances: []Instance{
				{UUID: "MIG-" + uuid + "-3g", ComputeSlices: 3, MemorySlices: 4, Activity: 0.8,
					Holders: []Holder{{Key: pod, Share: 1, Activity: math.NaN()}}},
				{UUID: "MIG-" + uuid + "-1g", ComputeSlices: 1, MemorySlices: 1, Activity: 0.8},
			}}
	}
	l := NewLedger(&bookSource{Default()})
	l.Advance(time.Hour, []GPUState{
		{UUID: "GPU-whole", Model: h100, PowerW: 400, Activity: 0.8},
		migGPU("GPU-dra", true),
		migGPU("GPU-stale", false),
	})
	const rate = 1.309552511415525 // EUR/h
	checkSeries(t, l, []wantSeries{
		{"GPU-whole", HolderKey{}, Unallocated, 0, 0},
		{"GPU-whole", HolderKey{}, Unknown, 3600, rate},
		{"GPU-dra", HolderKey{}, Unallocated, 0, 0},
		{"GPU-dra", HolderKey{}, Unknown, 3600 * 3 / 7.0, rate * 3 / 7},
		{"MIG-GPU-dra-3g", pod, Busy, 3600 * 3 / 7.0, rate * 3 / 7},
		{"MIG-GPU-dra-3g", pod, Idle, 0, 0},
		{"MIG-GPU-dra-3g", HolderKey{}, Unallocated, 0, 0},
		{"MIG-GPU-dra-1g", HolderKey{}, Unallocated, 0, 0},
		{"MIG-GPU-dra-1g", HolderKey{}, Unknown, 3600 / 7.0, rate / 7},
		{"GPU-stale", HolderKey{}, Unallocated, 3600 * 3 / 7.0, rate * 3 / 7},
		{"MIG-GPU-stale-3g", pod, Busy, 3600 * 3 / 7.0, rate * 3 / 7},
		{"MIG-GPU-stale-3g", pod, Idle, 0, 0},
		{"MIG-GPU-stale-3g", HolderKey{}, Unallocated, 0, 0},
		{"MIG-GPU-stale-1g", HolderKey{}, Unallocated, 0, 0},
		{"MIG-GPU-stale-1g", HolderKey{}, Unknown, 3600 / 7.0, rate / 7},
	})
}
