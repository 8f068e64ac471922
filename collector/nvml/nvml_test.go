package nvml

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gputally/gputally/collector"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func TestNewWithoutLibrary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lib      gonvml.Interface
		notFound bool
		want     []string
	}{
		{
			name:     "real loader, missing file",
			lib:      gonvml.New(gonvml.WithLibraryPath("/nonexistent/gputally-test/libnvidia-ml.so.1")),
			notFound: true,
			want:     []string{"libnvidia-ml.so.1", "--backend=sim"},
		},
		{
			// Every Func but Init is nil: any further call panics.
			name:     "mock library not found",
			lib:      &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }},
			notFound: true,
			want:     []string{"libnvidia-ml.so.1", "--backend=sim"},
		},
		{
			name: "driver not loaded",
			lib:  &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }},
			want: []string{"driver is not loaded", "--backend=sim"},
		},
		{
			name: "no permission",
			lib:  &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_NO_PERMISSION }},
			want: []string{"initialise NVML", "ERROR_NO_PERMISSION"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.lib, nil)
			if err == nil {
				b.Close()
				t.Fatal("New succeeded without a library")
			}
			if got := errors.Is(err, ErrLibraryNotFound); got != tc.notFound {
				t.Errorf("errors.Is(err, ErrLibraryNotFound) = %v, want %v (err: %v)", got, tc.notFound, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// newBackend returns a Backend over n and its first Inventory.
func newBackend(t testing.TB, n *fakeNode) (*Backend, collector.Inventory) {
	t.Helper()
	b, err := New(n.srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.srv.ShutdownFunc = func() gonvml.Return { return gonvml.SUCCESS }
	t.Cleanup(func() { b.Close() })
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return b, inv
}

// newSample sizes a Sample to inv as the collector's sampler does.
func newSample(inv collector.Inventory, now time.Time) *collector.Sample {
	s := &collector.Sample{Time: now, GPUs: make([]collector.GPUReading, len(inv.GPUs))}
	for i, g := range inv.GPUs {
		s.GPUs[i].Healthy = true
		if len(g.Instances) > 0 {
			s.GPUs[i].Instances = make([]collector.Values, len(g.Instances))
		}
	}
	return s
}

func sample(t testing.TB, b *Backend, inv collector.Inventory, now time.Time, errs collector.ErrorCounter) *collector.Sample {
	t.Helper()
	s := newSample(inv, now)
	if err := b.Sample(context.Background(), now, s, errs); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInventory(t *testing.T) {
	type migWant struct {
		profile         string
		gi, ci          int
		compute, memory int
		memMiB          uint64
	}
	for _, tc := range []struct {
		name   string
		node   *fakeNode
		model  string
		memMiB uint64
		mig    map[int][]migWant
	}{
		{
			name:   "dgxa100",
			node:   newFakeNode(dgxa100.New(), map[int][]int{1: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1}}),
			model:  "Mock NVIDIA A100-SXM4-40GB",
			memMiB: 40960,
			mig: map[int][]migWant{1: {
				{profile: "3g.20gb", gi: 0, compute: 3, memory: 4, memMiB: 19968},
				{profile: "2g.10gb", gi: 1, compute: 2, memory: 2, memMiB: 9856},
				{profile: "1g.5gb", gi: 2, compute: 1, memory: 1, memMiB: 4864},
				{profile: "1g.5gb+me", gi: 3, compute: 1, memory: 1, memMiB: 4864},
			}},
		},
		{
			name: "dgxh100",
			node: newFakeNode(dgxh100.New(), map[int][]int{
				2: {gonvml.GPU_INSTANCE_PROFILE_7_SLICE},
				5: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, gonvml.GPU_INSTANCE_PROFILE_1_SLICE},
			}),
			model:  "NVIDIA H100 80GB HBM3",
			memMiB: 81920,
			mig: map[int][]migWant{
				2: {{profile: "7g.80gb", gi: 0, compute: 7, memory: 8, memMiB: 81920}},
				5: {
					{profile: "3g.40gb", gi: 0, compute: 3, memory: 4, memMiB: 40960},
					{profile: "1g.20gb", gi: 1, compute: 1, memory: 2, memMiB: 20480},
					{profile: "1g.10gb", gi: 2, compute: 1, memory: 1, memMiB: 10240},
				},
			},
		},
		{
			name:   "dgxh200",
			node:   newFakeNode(dgxh200.New(), map[int][]int{0: {gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.GPU_INSTANCE_PROFILE_4_SLICE}}),
			model:  "NVIDIA H200 141GB HBM3e",
			memMiB: 144384,
			mig: map[int][]migWant{0: {
				{profile: "1g.18gb", gi: 0, compute: 1, memory: 1},
				{profile: "4g.71gb", gi: 1, compute: 4, memory: 4},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, inv := newBackend(t, tc.node)
			if inv.DriverVersion != "550.54.15" {
				t.Errorf("driver version %q", inv.DriverVersion)
			}
			if len(inv.GPUs) != 8 {
				t.Fatalf("%d GPUs, want 8", len(inv.GPUs))
			}
			for i, g := range inv.GPUs {
				if g.Index != i || g.Minor != i {
					t.Errorf("GPU %d: index %d minor %d", i, g.Index, g.Minor)
				}
				if want := tc.node.srv.Devices[i].(*server.Device).UUID; g.UUID != want {
					t.Errorf("GPU %d: UUID %q, want %q", i, g.UUID, want)
				}
				if want := strings.ToUpper("00000000:" + hex2(pciBuses[i]) + ":00.0"); g.PCIBusID != want {
					t.Errorf("GPU %d: PCI bus ID %q, want %q", i, g.PCIBusID, want)
				}
				if g.Model != tc.model || g.MemoryTotalMiB != tc.memMiB {
					t.Errorf("GPU %d: model %q memory %d MiB, want %q %d", i, g.Model, g.MemoryTotalMiB, tc.model, tc.memMiB)
				}
				want := tc.mig[i]
				if g.MIGEnabled != (want != nil) || len(g.Instances) != len(want) {
					t.Fatalf("GPU %d: MIG %v with %d instances, want %d", i, g.MIGEnabled, len(g.Instances), len(want))
				}
				for j, w := range want {
					got := g.Instances[j]
					if got.Profile != w.profile || got.GPUInstanceID != w.gi || got.ComputeInstanceID != w.ci ||
						got.ComputeSlices != w.compute || got.MemorySlices != w.memory || (w.memMiB != 0 && got.MemoryTotalMiB != w.memMiB) {
						t.Errorf("GPU %d instance %d: %+v, want %+v", i, j, got, w)
					}
					if !strings.HasPrefix(got.UUID, "MIG-") {
						t.Errorf("GPU %d instance %d: UUID %q", i, j, got.UUID)
					}
				}
			}
		})
	}
}

func hex2(b uint32) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4&0xf], digits[b&0xf]})
}

// TestInventoryProfileByAttributes covers NVML refusing GPU instance lookups
// (unprivileged): the profile is then matched on slice count and memory size.
func TestInventoryProfileByAttributes(t *testing.T) {
	n := newFakeNode(dgxh100.New(), map[int][]int{0: {gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2}})
	n.srv.Devices[0].(*server.Device).GetGpuInstanceByIdFunc = func(int) (gonvml.GpuInstance, gonvml.Return) {
		return nil, gonvml.ERROR_NO_PERMISSION
	}
	_, inv := newBackend(t, n)
	var got []string
	for _, in := range inv.GPUs[0].Instances {
		got = append(got, in.Profile)
	}
	if strings.Join(got, ",") != "2g.20gb,1g.20gb" {
		t.Errorf("profiles %v, want [2g.20gb 1g.20gb]", got)
	}
}

func TestSampleUnits(t *testing.T) {
	n := newFakeNode(dgxa100.New(), map[int][]int{3: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_4_SLICE}})
	n.gpus[0].set(func(h *hw) {
		h.util = gonvml.Utilization{Gpu: 87, Memory: 41}
		h.mem = gonvml.Memory_v2{Total: 40960 * mib, Reserved: 613 * mib, Used: 20480*mib + 5, Free: 19867 * mib}
		h.temp, h.memTemp = 61, 73
		h.powerMW = 312_456
		h.energyMJ = 9_876_543_210
		h.smMHz, h.memMHz = 1410, 1215
		h.sbe, h.dbe = 3, 1
		h.replay = 17
		h.powerViolNS, h.thermalViolNS = 2_500_000, 7_000
	})
	n.migs[3][1].set(func(h *hw) { h.mem = gonvml.Memory_v2{Total: 19968 * mib, Used: 4096 * mib, Free: 15872 * mib} })
	b, inv := newBackend(t, n)
	errs := countErrs{}
	s := sample(t, b, inv, t0, errs)
	if len(errs) != 0 {
		t.Errorf("errors counted: %v", errs)
	}
	for _, tc := range []struct {
		f    collector.Field
		want float64
	}{
		{collector.GPUUtil, 87},
		{collector.MemCopyUtil, 41},
		{collector.FBUsed, 20480},
		{collector.FBFree, 19867},
		{collector.FBReserved, 613},
		{collector.GPUTemp, 61},
		{collector.MemoryTemp, 73},
		{collector.PowerUsage, 312.456},
		{collector.TotalEnergy, 9_876_543_210},
		{collector.SMClock, 1410},
		{collector.MemClock, 1215},
		{collector.ECCSBEVolatile, 3},
		{collector.ECCDBEVolatile, 1},
		{collector.PCIeReplay, 17},
		{collector.PowerViolation, 2500},
		{collector.ThermalViolation, 7},
		{collector.XIDLast, 0},
	} {
		got, ok := s.GPUs[0].Values.Get(tc.f)
		if !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("field %d = %v (present %v), want %v", tc.f, got, ok, tc.want)
		}
	}
	for _, f := range []collector.Field{collector.GREngineActive, collector.SMActive, collector.TensorActive, collector.DRAMActive} {
		if s.GPUs[0].Values.Has(f) {
			t.Errorf("field %d present; the NVML backend reads no profiling fields", f)
		}
	}
	// A MIG-enabled GPU has no utilization; its instances have framebuffer only.
	mg := s.GPUs[3]
	if mg.Values.Has(collector.GPUUtil) || mg.Values.Has(collector.MemCopyUtil) {
		t.Error("utilization read on a MIG-enabled GPU")
	}
	if n.gpus[3].count("utilization") != 0 {
		t.Error("GetUtilizationRates called on a MIG-enabled GPU")
	}
	if !mg.Values.Has(collector.PowerUsage) {
		t.Error("parent power absent on a MIG-enabled GPU")
	}
	inst := mg.Instances[1]
	for _, tc := range []struct {
		f    collector.Field
		want float64
	}{{collector.FBUsed, 4096}, {collector.FBFree, 15872}, {collector.FBReserved, 0}} {
		if got, ok := inst.Get(tc.f); !ok || got != tc.want {
			t.Errorf("MIG instance field %d = %v (present %v), want %v", tc.f, got, ok, tc.want)
		}
	}
	if inst.Has(collector.PowerUsage) || inst.Has(collector.GPUTemp) || inst.Has(collector.GPUUtil) {
		t.Error("parent-only field on a MIG instance")
	}
	for i, r := range s.GPUs {
		if r.Lost || !r.Healthy {
			t.Errorf("GPU %d: lost %v healthy %v", i, r.Lost, r.Healthy)
		}
	}
}

func TestNotSupported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    string
		absent  []collector.Field
		present []collector.Field
		calls   map[string]int // calls after three samples
	}{
		{name: "power", call: "power", absent: []collector.Field{collector.PowerUsage}, calls: map[string]int{"power": 1}},
		{name: "energy", call: "energy", absent: []collector.Field{collector.TotalEnergy}, calls: map[string]int{"energy": 1}},
		{name: "ecc disabled", call: "ecc_sbe", absent: []collector.Field{collector.ECCSBEVolatile}, present: []collector.Field{collector.ECCDBEVolatile}, calls: map[string]int{"ecc_sbe": 1, "ecc_dbe": 3}},
		{name: "memory temperature field", call: "memory_temperature", absent: []collector.Field{collector.MemoryTemp}, calls: map[string]int{"field_values": 1}},
		{name: "violation", call: "thermal_violation", absent: []collector.Field{collector.ThermalViolation}, present: []collector.Field{collector.PowerViolation}, calls: map[string]int{"thermal_violation": 1}},
		{
			name: "memory v2 falls back to v1", call: "memory_v2",
			absent: []collector.Field{collector.FBReserved}, present: []collector.Field{collector.FBUsed, collector.FBFree},
			calls: map[string]int{"memory_v2": 1, "memory": 4}, // one more by Inventory
		},
		{name: "utilization", call: "utilization", absent: []collector.Field{collector.GPUUtil, collector.MemCopyUtil}, calls: map[string]int{"utilization": 1}},
		{name: "pcie replay", call: "pcie_replay", absent: []collector.Field{collector.PCIeReplay}, calls: map[string]int{"pcie_replay": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(dgxh100.New(), nil)
			n.gpus[0].set(func(h *hw) { h.ret[tc.call] = gonvml.ERROR_NOT_SUPPORTED })
			b, inv := newBackend(t, n)
			errs := countErrs{}
			var s *collector.Sample
			for i := range 3 {
				s = sample(t, b, inv, t0.Add(time.Duration(i)*time.Second), errs)
			}
			if len(errs) != 0 {
				t.Errorf("NOT_SUPPORTED counted as errors: %v", errs)
			}
			for _, f := range tc.absent {
				if s.GPUs[0].Values.Has(f) {
					t.Errorf("field %d present", f)
				}
				if !s.GPUs[1].Values.Has(f) {
					t.Errorf("field %d absent on a GPU that supports it", f)
				}
			}
			for _, f := range tc.present {
				if !s.GPUs[0].Values.Has(f) {
					t.Errorf("field %d absent", f)
				}
			}
			for call, want := range tc.calls {
				if got := n.gpus[0].count(call); got != want {
					t.Errorf("%s called %d times in 3 samples, want %d", call, got, want)
				}
			}
		})
	}
}

func TestReadErrorCountedAndRetried(t *testing.T) {
	n := newFakeNode(dgxh100.New(), nil)
	n.gpus[1].set(func(h *hw) { h.ret["temperature"] = gonvml.ERROR_UNKNOWN; h.temp = 50 })
	b, inv := newBackend(t, n)
	errs := countErrs{}
	sample(t, b, inv, t0, errs)
	s := sample(t, b, inv, t0.Add(time.Second), errs)
	if errs["temperature"] != 2 || len(errs) != 1 {
		t.Errorf("errors %v, want temperature: 2", errs)
	}
	if s.GPUs[1].Values.Has(collector.GPUTemp) {
		t.Error("failed temperature present")
	}
	if !s.GPUs[1].Values.Has(collector.PowerUsage) || !s.GPUs[0].Values.Has(collector.GPUTemp) {
		t.Error("one failed field hid others")
	}
	n.gpus[1].set(func(h *hw) { delete(h.ret, "temperature") })
	s = sample(t, b, inv, t0.Add(2*time.Second), errs)
	if got, ok := s.GPUs[1].Values.Get(collector.GPUTemp); !ok || got != 50 {
		t.Errorf("temperature after recovery = %v, %v", got, ok)
	}
}

func TestGPULost(t *testing.T) {
	n := newFakeNode(dgxh100.New(), map[int][]int{4: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_3_SLICE}})
	n.gpus[4].set(func(h *hw) {
		h.procs = []gonvml.ProcessInfo{{Pid: 10, UsedGpuMemory: mib, GpuInstanceId: 1, ComputeInstanceId: 0}}
	})
	b, inv := newBackend(t, n)
	errs := countErrs{}
	for _, gpu := range []int{2, 4} {
		t.Run(inv.GPUs[gpu].UUID, func(t *testing.T) {
			s := sample(t, b, inv, t0, errs)
			if s.GPUs[gpu].Lost || !s.GPUs[gpu].Values.Has(collector.PowerUsage) {
				t.Fatal("GPU lost before the fault")
			}
			// The GPU falls off the bus in the middle of a sample: the power read fails.
			n.gpus[gpu].set(func(h *hw) { h.ret["power"] = gonvml.ERROR_GPU_IS_LOST })
			s = sample(t, b, inv, t0.Add(time.Second), errs)
			n.gpus[gpu].set(func(h *hw) { h.lost = true })
			r := s.GPUs[gpu]
			if !r.Lost || r.Healthy {
				t.Errorf("lost %v healthy %v, want lost and unhealthy", r.Lost, r.Healthy)
			}
			for f := range collector.NumFields {
				if r.Values.Has(f) {
					t.Errorf("field %d present on a lost GPU", f)
				}
			}
			for j, v := range r.Instances {
				for f := range collector.NumFields {
					if v.Has(f) {
						t.Errorf("instance %d field %d present on a lost GPU", j, f)
					}
				}
			}
			if r.ProcessesKnown || len(r.Processes) != 0 {
				t.Error("processes listed on a lost GPU")
			}
			for i, other := range s.GPUs {
				if i != gpu && !other.Lost && !other.Values.Has(collector.PowerUsage) {
					t.Errorf("GPU %d lost its power reading with GPU %d", i, gpu)
				}
			}
			before := n.gpus[gpu].count("memory_v2") + n.gpus[gpu].count("temperature")
			s = sample(t, b, inv, t0.Add(2*time.Second), errs)
			if after := n.gpus[gpu].count("memory_v2") + n.gpus[gpu].count("temperature"); after != before {
				t.Errorf("a lost GPU was read again: %d calls, was %d", after, before)
			}
			if !s.GPUs[gpu].Lost {
				t.Error("lost GPU recovered by itself")
			}
		})
	}
	if len(errs) != 0 {
		t.Errorf("a lost GPU counted errors: %v", errs)
	}
}

func TestAllGPUsFailing(t *testing.T) {
	n := newFakeNode(dgxh100.New(), nil)
	b, inv := newBackend(t, n)
	for _, h := range n.gpus {
		h.set(func(h *hw) {
			for _, c := range []string{"utilization", "memory_v2", "temperature", "memory_temperature", "field_values", "power", "energy", "sm_clock", "mem_clock", "ecc_sbe", "ecc_dbe", "pcie_replay", "power_violation", "thermal_violation", "processes", "gpm"} {
				h.ret[c] = gonvml.ERROR_UNKNOWN
			}
		})
	}
	if err := b.Sample(context.Background(), t0, newSample(inv, t0), countErrs{}); err == nil {
		t.Error("Sample succeeded with every read failing")
	}
	// All GPUs lost is a valid reading: every GPU unhealthy.
	for _, h := range n.gpus {
		h.set(func(h *hw) { h.lost = true })
	}
	s := newSample(inv, t0)
	if err := b.Sample(context.Background(), t0, s, countErrs{}); err != nil {
		t.Fatalf("Sample with every GPU lost: %v", err)
	}
	for i, r := range s.GPUs {
		if !r.Lost || r.Healthy {
			t.Errorf("GPU %d: lost %v healthy %v", i, r.Lost, r.Healthy)
		}
	}
}

func TestXIDEvents(t *testing.T) {
	n := newFakeNode(dgxa100.New(), map[int][]int{6: {gonvml.GPU_INSTANCE_PROFILE_7_SLICE}})
	b, inv := newBackend(t, n)
	errs := countErrs{}
	dev := func(i int) gonvml.Device { return n.srv.Devices[i] }
	xid := func(i int, code uint64) gonvml.EventData {
		return gonvml.EventData{Device: dev(i), EventType: gonvml.EventTypeXidCriticalError, EventData: code, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32}
	}
	n.events.push(xid(2, 13), xid(2, 31), xid(2, 13), xid(5, 79))
	s := sample(t, b, inv, t0, errs)
	want := map[int][]collector.XIDCount{2: {{XID: 13, Count: 2}, {XID: 31, Count: 1}}, 5: {{XID: 79, Count: 1}}}
	check := func(s *collector.Sample, healthy map[int]bool, last map[int]float64) {
		t.Helper()
		for i, r := range s.GPUs {
			if got, w := r.XIDs, want[i]; len(got) != len(w) || (len(w) > 0 && !equalXIDs(got, w)) {
				t.Errorf("GPU %d XIDs %v, want %v", i, got, w)
			}
			wantHealthy := true
			if h, ok := healthy[i]; ok {
				wantHealthy = h
			}
			if r.Healthy != wantHealthy {
				t.Errorf("GPU %d healthy %v, want %v", i, r.Healthy, wantHealthy)
			}
			if got, _ := r.Values.Get(collector.XIDLast); got != last[i] {
				t.Errorf("GPU %d last XID %v, want %v", i, got, last[i])
			}
		}
	}
	// XID 13 and 31 are application errors: the GPU stays healthy; 79 is critical.
	check(s, map[int]bool{5: false}, map[int]float64{2: 13, 5: 79})

	s = sample(t, b, inv, t0.Add(time.Second), errs)
	check(s, nil, map[int]float64{2: 13, 5: 79}) // health returns: XID 79 is not repeated

	n.events.push(xid(2, 48))
	want[2] = []collector.XIDCount{{XID: 13, Count: 2}, {XID: 31, Count: 1}, {XID: 48, Count: 1}}
	s = sample(t, b, inv, t0.Add(2*time.Second), errs)
	check(s, map[int]bool{2: false}, map[int]float64{2: 48, 5: 79})

	for _, w := range n.events.waits {
		if w != 0 {
			t.Fatalf("event wait with a %d ms timeout: the sampler must not block", w)
		}
	}
	// A second inventory registers no GPU twice and keeps the counts.
	before := len(n.events.registered)
	inv2, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if before != 8 || len(n.events.registered) != 8 || n.events.created != 1 {
		t.Errorf("registrations %d then %d, event sets %d; want 8, 8, 1", before, len(n.events.registered), n.events.created)
	}
	for _, r := range n.events.registered {
		if r.types != gonvml.EventTypeXidCriticalError|gonvml.EventMigConfigChange {
			t.Errorf("GPU %s registered for events %#x", r.uuid, r.types)
		}
	}
	s = sample(t, b, inv2, t0.Add(3*time.Second), errs)
	check(s, nil, map[int]float64{2: 48, 5: 79})
	if len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
}

func equalXIDs(a, b []collector.XIDCount) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMIGChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *fakeNode)
	}{
		{"config change event", func(n *fakeNode) {
			n.events.push(gonvml.EventData{Device: n.srv.Devices[1], EventType: gonvml.EventMigConfigChange})
		}},
		{"instance destroyed", func(n *fakeNode) {
			n.migs[1][0].set(func(h *hw) { h.ret["memory_v2"] = gonvml.ERROR_NOT_FOUND })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(dgxh100.New(), map[int][]int{1: {gonvml.GPU_INSTANCE_PROFILE_1_SLICE}})
			b, inv := newBackend(t, n)
			sample(t, b, inv, t0, countErrs{})
			tc.change(n)
			err := b.Sample(context.Background(), t0, newSample(inv, t0), countErrs{})
			if !errors.Is(err, collector.ErrInventoryChanged) {
				t.Errorf("Sample after a MIG change: %v, want ErrInventoryChanged", err)
			}
		})
	}
}

func TestProcesses(t *testing.T) {
	n := newFakeNode(dgxh100.New(), map[int][]int{1: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_3_SLICE}})
	n.gpus[0].set(func(h *hw) {
		h.procs = []gonvml.ProcessInfo{
			{Pid: 4242, UsedGpuMemory: 3 << 30, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32},
			{Pid: 17, UsedGpuMemory: math.MaxUint64, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32},
		}
		h.procUtil = []gonvml.ProcessUtilizationSample{
			{Pid: 4242, TimeStamp: 1000, SmUtil: 20},
			{Pid: 4242, TimeStamp: 2000, SmUtil: 65},
		}
	})
	n.gpus[1].set(func(h *hw) {
		h.procs = []gonvml.ProcessInfo{
			{Pid: 300, UsedGpuMemory: 1 << 30, GpuInstanceId: 1, ComputeInstanceId: 0},
			{Pid: 200, UsedGpuMemory: 2 << 30, GpuInstanceId: 0, ComputeInstanceId: 0},
		}
		h.ret["process_utilization"] = gonvml.ERROR_NOT_SUPPORTED
	})
	b, inv := newBackend(t, n)
	errs := countErrs{}
	s := sample(t, b, inv, t0, errs)

	p := s.GPUs[0].Processes
	if !s.GPUs[0].ProcessesKnown || len(p) != 2 {
		t.Fatalf("processes %+v", p)
	}
	if p[0].PID != 17 || p[0].UsedMemoryBytes != 0 || !math.IsNaN(p[0].Utilization) || p[0].GPUInstanceID != -1 {
		t.Errorf("process without memory or samples: %+v", p[0])
	}
	if p[1].PID != 4242 || p[1].UsedMemoryBytes != 3<<30 || p[1].Utilization != 0.65 || p[1].GPUInstanceID != -1 {
		t.Errorf("process with the newest sample at 65%%: %+v", p[1])
	}
	m := s.GPUs[1].Processes
	if len(m) != 2 || m[0].PID != 200 || m[0].GPUInstanceID != 0 || m[1].PID != 300 || m[1].GPUInstanceID != 1 || !math.IsNaN(m[1].Utilization) {
		t.Errorf("MIG processes %+v", m)
	}
	if !s.GPUs[2].ProcessesKnown || len(s.GPUs[2].Processes) != 0 {
		t.Errorf("idle GPU: known %v processes %v", s.GPUs[2].ProcessesKnown, s.GPUs[2].Processes)
	}

	// The next sample asks only for samples newer than the last one seen.
	n.gpus[0].set(func(h *hw) {
		h.procUtil = append(h.procUtil, gonvml.ProcessUtilizationSample{Pid: 4242, TimeStamp: 3000, SmUtil: 5})
	})
	s = sample(t, b, inv, t0.Add(time.Second), errs)
	if got := s.GPUs[0].Processes[1].Utilization; got != 0.05 {
		t.Errorf("utilization after a new sample %v, want 0.05", got)
	}
	s = sample(t, b, inv, t0.Add(2*time.Second), errs)
	if got := s.GPUs[0].Processes[1].Utilization; !math.IsNaN(got) {
		t.Errorf("utilization without a new sample %v, want NaN", got)
	}
	if got := n.gpus[0].procUtilSince; len(got) != 3 || got[0] != 0 || got[1] != 2000 || got[2] != 3000 {
		t.Errorf("process utilization asked since %v, want [0 2000 3000]", got)
	}
	if n.gpus[1].count("process_utilization") != 1 {
		t.Errorf("unsupported process utilization asked %d times", n.gpus[1].count("process_utilization"))
	}
	if n.gpus[2].count("process_utilization") != 0 {
		t.Error("process utilization asked on a GPU without processes")
	}
	if len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
}

func TestClose(t *testing.T) {
	n := newFakeNode(dgxa100.New(), nil)
	shutdowns := 0
	b, err := New(n.srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.srv.ShutdownFunc = func() gonvml.Return { shutdowns++; return gonvml.SUCCESS }
	if _, err := b.Inventory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if shutdowns != 1 || n.events.freed != 1 || n.inits != 1 {
		t.Errorf("init %d, shutdown %d, event set freed %d; want 1 each", n.inits, shutdowns, n.events.freed)
	}
}

func TestProfileName(t *testing.T) {
	for _, tc := range []struct {
		id       int
		slices   uint32
		memMiB   uint64
		totalMiB uint64
		want     string
		eighths  int
	}{
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 4864, 40536, "1g.5gb", 1},       // A100-SXM4-40GB as the driver reports it
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 9856, 40536, "1g.10gb", 2}, //
		{gonvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, 40192, 40536, "7g.40gb", 8},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 9856, 81559, "1g.10gb", 1}, // H100 80GB
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 9856, 81559, "1g.10gb+me", 1},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 19968, 81559, "1g.20gb", 2},
		{gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 40448, 81559, "3g.40gb", 4},
		{gonvml.GPU_INSTANCE_PROFILE_4_SLICE, 4, 40448, 81559, "4g.40gb", 4},
		{gonvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, 80896, 81559, "7g.80gb", 8},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 16384, 143771, "1g.18gb", 1}, // H200 141GB
		{gonvml.GPU_INSTANCE_PROFILE_2_SLICE, 2, 33280, 143771, "2g.35gb", 2},
		{gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 71424, 143771, "3g.71gb", 4},
		{gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, 2, 33280, 143771, "2g.35gb+me.all", 2},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 18432, 144384, "1g.18gb", 1}, // go-nvml's H200 mock: nominal sizes
		{gonvml.GPU_INSTANCE_PROFILE_4_SLICE, 4, 72704, 144384, "4g.71gb", 4},
	} {
		p := gonvml.GpuInstanceProfileInfo{Id: uint32(tc.id), SliceCount: tc.slices, MemorySizeMB: tc.memMiB}
		total := tc.totalMiB * mib
		if got := profileName(p, total); got != tc.want {
			t.Errorf("profile %d, %d MiB of %d MiB: %q, want %q", tc.id, tc.memMiB, tc.totalMiB, got, tc.want)
		}
		if got := memorySlices(tc.memMiB, total); got != tc.eighths {
			t.Errorf("memory slices of %q: %d, want %d", tc.want, got, tc.eighths)
		}
	}
}

func TestPCIBusID(t *testing.T) {
	var withString gonvml.PciInfo
	copy(withString.BusId[:], cChars("00000000:b7:00.0"))
	for _, tc := range []struct {
		in   gonvml.PciInfo
		want string
	}{
		{withString, "00000000:B7:00.0"},
		{gonvml.PciInfo{Domain: 1, Bus: 0x4e, Device: 3}, "00000001:4E:03.0"},
	} {
		if got := pciBusID(tc.in); got != tc.want {
			t.Errorf("pciBusID(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFieldValue(t *testing.T) {
	neg := int32(-5)
	for _, tc := range []struct {
		typ  gonvml.ValueType
		raw  [8]byte
		want float64
		ok   bool
	}{
		{gonvml.VALUE_TYPE_UNSIGNED_INT, [8]byte{73}, 73, true},
		{gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, [8]byte{0, 1}, 256, true},
		{gonvml.VALUE_TYPE_SIGNED_INT, [8]byte{byte(neg), byte(neg >> 8), byte(neg >> 16), byte(neg >> 24)}, -5, true},
		{gonvml.VALUE_TYPE_DOUBLE, [8]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, 1.5, true},
		{gonvml.VALUE_TYPE_COUNT, [8]byte{1}, 0, false},
	} {
		got, ok := fieldValue(gonvml.FieldValue{ValueType: uint32(tc.typ), Value: tc.raw})
		if got != tc.want || ok != tc.ok {
			t.Errorf("type %d: %v %v, want %v %v", tc.typ, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGPM(t *testing.T) {
	t.Run("hopper", func(t *testing.T) {
		n := newFakeNode(dgxh100.New(), map[int][]int{3: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE}})
		n.gpus[0].set(func(h *hw) { h.gpm = [4]float64{62.5, 40, 12, 33} })
		n.migs[3][1].set(func(h *hw) { h.gpm = [4]float64{100, 90, 0, 5} })
		n.gpus[1].set(func(h *hw) { h.ret["gpm"] = gonvml.ERROR_NOT_SUPPORTED })
		b, inv := newBackend(t, n)
		errs := countErrs{}
		s := sample(t, b, inv, t0, errs)
		for _, f := range []collector.Field{collector.GREngineActive, collector.SMActive, collector.TensorActive, collector.DRAMActive} {
			if s.GPUs[0].Values.Has(f) || s.GPUs[3].Instances[1].Has(f) {
				t.Errorf("field %d present after one GPM sample; it needs two", f)
			}
		}
		s = sample(t, b, inv, t0.Add(time.Second), errs)
		for _, tc := range []struct {
			v    *collector.Values
			f    collector.Field
			want float64
		}{
			{&s.GPUs[0].Values, collector.GREngineActive, 0.625},
			{&s.GPUs[0].Values, collector.SMActive, 0.4},
			{&s.GPUs[0].Values, collector.TensorActive, 0.12},
			{&s.GPUs[0].Values, collector.DRAMActive, 0.33},
			{&s.GPUs[3].Instances[1], collector.GREngineActive, 1},
			{&s.GPUs[3].Instances[1], collector.SMActive, 0.9},
			{&s.GPUs[3].Instances[0], collector.GREngineActive, 0},
		} {
			if got, ok := tc.v.Get(tc.f); !ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("field %d = %v (present %v), want %v", tc.f, got, ok, tc.want)
			}
		}
		if s.GPUs[3].Values.Has(collector.GREngineActive) {
			t.Error("GPM read on a MIG-enabled parent; its instances carry it")
		}
		if s.GPUs[1].Values.Has(collector.GREngineActive) || n.gpus[1].count("gpm") != 1 {
			t.Errorf("unsupported GPM: present %v, asked %d times", s.GPUs[1].Values.Has(collector.GREngineActive), n.gpus[1].count("gpm"))
		}
		if len(errs) != 0 {
			t.Errorf("errors %v", errs)
		}
		// 7 whole GPUs and 2 instances, two buffers each.
		if n.gpmAllocated != 18 {
			t.Errorf("%d GPM buffers allocated, want 18", n.gpmAllocated)
		}
		b.Close()
		if n.gpmFreed != n.gpmAllocated {
			t.Errorf("%d of %d GPM buffers freed", n.gpmFreed, n.gpmAllocated)
		}
	})
	t.Run("ampere", func(t *testing.T) {
		n := newFakeNode(dgxa100.New(), nil)
		b, inv := newBackend(t, n)
		sample(t, b, inv, t0, countErrs{})
		s := sample(t, b, inv, t0.Add(time.Second), countErrs{})
		if s.GPUs[0].Values.Has(collector.GREngineActive) || n.gpmAllocated != 0 || n.gpus[0].count("gpm") != 0 {
			t.Error("GPM used on a GPU that does not support it")
		}
	})
}

func TestInventoryLeavesOutUnreadableGPU(t *testing.T) {
	n := newFakeNode(dgxh100.New(), nil)
	n.gpus[3].set(func(h *hw) { h.lost = true })
	n.gpus[5].set(func(h *hw) { h.ret["memory"] = gonvml.ERROR_GPU_IS_LOST })
	b, inv := newBackend(t, n)
	if len(inv.GPUs) != 7 {
		t.Fatalf("%d GPUs, want 7: the one without a UUID is left out", len(inv.GPUs))
	}
	for _, g := range inv.GPUs {
		if g.Index == 3 {
			t.Error("GPU 3 listed without a UUID")
		}
	}
	s := sample(t, b, inv, t0, countErrs{})
	for i, r := range s.GPUs {
		if want := inv.GPUs[i].Index == 5; r.Lost != want {
			t.Errorf("GPU %d: lost %v, want %v", inv.GPUs[i].Index, r.Lost, want)
		}
	}
	if n.gpus[5].count("power") != 0 {
		t.Error("a GPU lost during the inventory was read")
	}
}

// TestXIDEventReadFailureLoggedOnce: a failing event wait is counted every
// sample but logged once per failure streak.
func TestXIDEventReadFailureLoggedOnce(t *testing.T) {
	n := newFakeNode(dgxa100.New(), nil)
	var logs strings.Builder
	b, err := New(n.srv, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	n.srv.ShutdownFunc = func() gonvml.Return { return gonvml.SUCCESS }
	t.Cleanup(func() { b.Close() })
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	errs := countErrs{}
	n.events.mu.Lock()
	n.events.fail = gonvml.ERROR_UNKNOWN
	n.events.mu.Unlock()
	for k := range 3 {
		sample(t, b, inv, t0.Add(time.Duration(k)*time.Second), errs)
	}
	n.events.mu.Lock()
	n.events.fail = gonvml.SUCCESS
	n.events.mu.Unlock()
	sample(t, b, inv, t0.Add(3*time.Second), errs)
	n.events.mu.Lock()
	n.events.fail = gonvml.ERROR_UNKNOWN
	n.events.mu.Unlock()
	sample(t, b, inv, t0.Add(4*time.Second), errs)
	if errs["xid_events"] != 4 {
		t.Errorf("xid_events errors %d, want 4", errs["xid_events"])
	}
	if got := strings.Count(logs.String(), "reading XID events failed"); got != 2 {
		t.Errorf("%d warnings for two failure streaks, want 2:\n%s", got, logs.String())
	}
}
