package dcgm

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

// sample takes one Sample sized to b's inventory, as the sampler does.
func sample(t *testing.T, b *Backend, errs collector.ErrorCounter) (collector.Sample, error) {
	t.Helper()
	inv, err := b.Inventory(context.Background())
	if err != nil {
		return collector.Sample{}, err
	}
	s := collector.Sample{GPUs: make([]collector.GPUReading, len(inv.GPUs))}
	for i, g := range inv.GPUs {
		s.GPUs[i].Healthy = true
		if len(g.Instances) > 0 {
			s.GPUs[i].Instances = make([]collector.Values, len(g.Instances))
		}
	}
	err = b.Sample(context.Background(), time.Time{}, &s, errs)
	return s, err
}

func mustSample(t *testing.T, b *Backend, errs collector.ErrorCounter) collector.Sample {
	t.Helper()
	s, err := sample(t, b, errs)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return s
}

func TestClassify(t *testing.T) {
	spec := func(f collector.Field) fieldSpec { return specs[f] }
	tests := []struct {
		name string
		spec fieldSpec
		v    fieldValue
		want float64
		verd verdict
	}{
		{"int64 reading", spec(collector.GPUTemp), i64(fiDevGPUTemp, 41), 41, valid},
		{"int64 blank", spec(collector.GPUTemp), i64(fiDevGPUTemp, int64Blank), 0, blank},
		{"int64 not found", spec(collector.TotalEnergy), i64(fiDevTotalEnergy, int64Blank+1), 0, blank},
		{"int64 not supported", spec(collector.TotalEnergy), i64(fiDevTotalEnergy, int64Blank+2), 0, unsupported},
		{"int64 not permissioned", spec(collector.PCIeReplay), i64(fiDevPCIeReplay, int64Blank+3), 0, unsupported},
		{"int32 blank in a small field", spec(collector.SMClock), i64(fiDevSMClock, int32Blank), 0, blank},
		{"int32 not supported in a small field", spec(collector.MemoryTemp), i64(fiDevMemoryTemp, int32Blank+2), 0, unsupported},
		{"int32 blank range is a reading in a counter", spec(collector.TotalEnergy), i64(fiDevTotalEnergy, int32Blank), int32Blank, valid},
		{"4294967295 in a gauge", spec(collector.FBUsed), i64(fiDevFBUsed, 4294967295), 0, blank},
		{"4294967295 in a counter", spec(collector.ECCSBEVolatile), i64(fiDevECCSBEVolTotal, 4294967295), 0, blank},
		{"negative", spec(collector.PCIeReplay), i64(fiDevPCIeReplay, -1), 0, blank},
		{"percent above 100", spec(collector.GPUUtil), i64(fiDevGPUUtil, 101), 0, blank},
		{"fp64 blank", spec(collector.PowerUsage), f64(fiDevPowerUsage, fp64Blank), 0, blank},
		{"fp64 not supported", spec(collector.GREngineActive), f64(fiProfGREngineActive, fp64Blank+2), 0, unsupported},
		{"fp64 NaN", spec(collector.SMActive), f64(fiProfSMActive, math.NaN()), 0, blank},
		{"ratio above 1", spec(collector.DRAMActive), f64(fiProfDRAMActive, 1.5), 0, blank},
		{"status not supported", spec(collector.GPUUtil), fieldValue{field: fiDevGPUUtil, status: stNotSupported}, 0, unsupported},
		{"status no data", spec(collector.GPUUtil), fieldValue{field: fiDevGPUUtil, status: stNoData}, 0, blank},
		{"status GPU lost", spec(collector.GPUUtil), fieldValue{field: fiDevGPUUtil, status: stGPUIsLost}, 0, lost},
		{"status generic error", spec(collector.GPUUtil), fieldValue{field: fiDevGPUUtil, status: -3}, 0, failed},
		{"string for a number", spec(collector.GPUUtil), str(fiDevGPUUtil, "12"), 0, failed},
		// Units: DCGM's units converted to the contract's.
		{"power W", spec(collector.PowerUsage), f64(fiDevPowerUsage, 312.25), 312.25, valid},
		{"energy mJ", spec(collector.TotalEnergy), i64(fiDevTotalEnergy, 9_876_543_210), 9_876_543_210, valid},
		{"framebuffer MiB", spec(collector.FBUsed), i64(fiDevFBUsed, 40536), 40536, valid},
		{"SM clock MHz", spec(collector.SMClock), i64(fiDevSMClock, 1410), 1410, valid},
		{"power violation ns to µs", spec(collector.PowerViolation), i64(fiDevPowerViolation, 1_500_000), 1500, valid},
		{"thermal violation ns to µs", spec(collector.ThermalViolation), i64(fiDevThermalViolation, 2_000), 2, valid},
		{"ratio", spec(collector.GREngineActive), f64(fiProfGREngineActive, 0.75), 0.75, valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, verd := classify(tt.spec, tt.v)
			if verd != tt.verd || (verd == valid && got != tt.want) {
				t.Errorf("classify = %v, %v; want %v, %v", got, verd, tt.want, tt.verd)
			}
		})
	}
}

// TestSampleValues checks every contract field through the fake: units as the
// contract has them, sentinels absent.
func TestSampleValues(t *testing.T) {
	n := a100Node(2)
	g0, g1 := gpuEnt(n.gpuOf(0)), gpuEnt(n.gpuOf(1))
	for _, v := range []fieldValue{
		i64(fiDevGPUUtil, 87), i64(fiDevMemCopyUtil, 30),
		i64(fiDevFBUsed, 30000), i64(fiDevFBFree, 10000), i64(fiDevFBReserved, 560),
		i64(fiDevGPUTemp, 61), i64(fiDevMemoryTemp, 70), f64(fiDevPowerUsage, 301.5),
		i64(fiDevTotalEnergy, 123_456_789), i64(fiDevSMClock, 1410), i64(fiDevMemClock, 1215),
		i64(fiDevXIDErrors, 31), i64(fiDevPCIeReplay, 4), i64(fiDevECCSBEVolTotal, 2), i64(fiDevECCDBEVolTotal, 1),
		i64(fiDevPowerViolation, 7_000_000), i64(fiDevThermalViolation, 3_000),
		f64(fiProfGREngineActive, 0.9), f64(fiProfSMActive, 0.8), f64(fiProfTensorActive, 0.5), f64(fiProfDRAMActive, 0.25),
	} {
		n.set(g0, v)
	}
	// GPU 1: sentinels everywhere.
	for _, v := range []fieldValue{
		i64(fiDevGPUUtil, int64Blank), i64(fiDevFBUsed, 4294967295), i64(fiDevGPUTemp, int32Blank),
		f64(fiDevPowerUsage, fp64Blank), i64(fiDevTotalEnergy, int64Blank+1), f64(fiProfGREngineActive, fp64Blank),
		i64(fiDevSMClock, int32Blank+1), i64(fiDevXIDErrors, int64Blank),
	} {
		n.set(g1, v)
	}
	b, _, _ := newTestBackend(t, n)
	errs := errCounts{}
	s := mustSample(t, b, errs)

	want := map[collector.Field]float64{
		collector.GPUUtil: 87, collector.MemCopyUtil: 30,
		collector.FBUsed: 30000, collector.FBFree: 10000, collector.FBReserved: 560,
		collector.GPUTemp: 61, collector.MemoryTemp: 70, collector.PowerUsage: 301.5,
		collector.TotalEnergy: 123_456_789, collector.SMClock: 1410, collector.MemClock: 1215,
		collector.XIDLast: 31, collector.PCIeReplay: 4, collector.ECCSBEVolatile: 2, collector.ECCDBEVolatile: 1,
		collector.PowerViolation: 7000, collector.ThermalViolation: 3,
		collector.GREngineActive: 0.9, collector.SMActive: 0.8, collector.TensorActive: 0.5, collector.DRAMActive: 0.25,
	}
	for f := range collector.NumFields {
		got, ok := s.GPUs[0].Values.Get(f)
		if w := want[f]; !ok || got != w {
			t.Errorf("GPU 0 field %d = %v, %v; want %v", f, got, ok, w)
		}
		if x, ok := s.GPUs[1].Values.Get(f); ok {
			t.Errorf("GPU 1 field %d = %v; want absent (sentinel)", f, x)
		}
	}
	if len(errs) != 0 {
		t.Errorf("errors counted: %v", errs)
	}
	if !s.GPUs[0].Healthy || s.GPUs[0].Lost {
		t.Errorf("GPU 0 healthy=%v lost=%v", s.GPUs[0].Healthy, s.GPUs[0].Lost)
	}
}

func TestInventory(t *testing.T) {
	n := a100Node(3)
	n.addInstance(n.gpuOf(1), 9, 2, 2, 3, "3g.20gb", "MIG-11111111-2222-3333-4444-555555555555", 19968)
	n.addInstance(n.gpuOf(1), 4, 9, 0, 1, "", "", 4864) // no name, no UUID from DCGM
	n.addInstance(n.gpuOf(1), 5, 13, 7, 1, "MIG 1g.5gb+me", "<<<NOT_SUPPORTED>>>", 4864)
	b, _, _ := newTestBackend(t, n)
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DriverVersion != "550.54.15" || len(inv.GPUs) != 3 {
		t.Fatalf("inventory = %+v", inv)
	}
	for i, g := range inv.GPUs {
		if g.Index != i || g.Minor != i || g.UUID != n.infos[n.gpuOf(i)].UUID || g.MemoryTotalMiB != 40960 {
			t.Errorf("GPU %d = %+v; want index, minor %d and the UUID of DCGM GPU %d", i, g, i, n.gpuOf(i))
		}
		if g.MIGEnabled != (i == 1) {
			t.Errorf("GPU %d MIGEnabled = %v", i, g.MIGEnabled)
		}
	}
	want := []collector.MIGInstance{
		{GPUInstanceID: 2, Profile: "3g.20gb", UUID: "MIG-11111111-2222-3333-4444-555555555555", ComputeSlices: 3, MemorySlices: 4, MemoryTotalMiB: 19968},
		{GPUInstanceID: 9, Profile: "1g.5gb", ComputeSlices: 1, MemorySlices: 1, MemoryTotalMiB: 4864},
		{GPUInstanceID: 13, Profile: "1g.5gb+me", ComputeSlices: 1, MemorySlices: 1, MemoryTotalMiB: 4864},
	}
	got := inv.GPUs[1].Instances
	if len(got) != len(want) {
		t.Fatalf("instances = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instance %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}

// TestMIGEntityMapping checks that values of FE_GPU_I entities land on their
// parent GPU's instance with the right GPU_I_ID, and that parent-only fields
// of instances are not read.
func TestMIGEntityMapping(t *testing.T) {
	n := a100Node(2)
	parent := n.gpuOf(1)
	// DCGM entity ids are global and unordered; GPU instance ids are per GPU.
	n.addInstance(parent, 7, 1, 0, 1, "1g.5gb", "MIG-a", 4864)
	n.addInstance(parent, 3, 2, 2, 3, "3g.20gb", "MIG-b", 19968)
	n.set(giEnt(7), i64(fiDevFBUsed, 100))
	n.set(giEnt(7), f64(fiProfGREngineActive, 0.1))
	n.set(giEnt(3), i64(fiDevFBUsed, 300))
	n.set(giEnt(3), f64(fiProfGREngineActive, 0.3))
	n.set(giEnt(3), f64(fiDevPowerUsage, 99)) // parent-only: never read on an instance
	n.set(gpuEnt(parent), f64(fiDevPowerUsage, 250))
	n.set(gpuEnt(parent), f64(fiProfGREngineActive, 0.4))

	b, _, _ := newTestBackend(t, n)
	s := mustSample(t, b, errCounts{})
	inst := s.GPUs[1].Instances
	if len(inst) != 2 || len(s.GPUs[0].Instances) != 0 {
		t.Fatalf("instances per GPU = %d, %d", len(s.GPUs[0].Instances), len(inst))
	}
	tests := []struct {
		inst   int
		field  collector.Field
		want   float64
		absent bool
	}{
		{0, collector.FBUsed, 100, false}, // GPU_I_ID 1
		{0, collector.GREngineActive, 0.1, false},
		{1, collector.FBUsed, 300, false}, // GPU_I_ID 2
		{1, collector.GREngineActive, 0.3, false},
		{1, collector.PowerUsage, 0, true},
		{1, collector.FBFree, 0, true},
	}
	for _, tt := range tests {
		got, ok := inst[tt.inst].Get(tt.field)
		if ok == tt.absent || (ok && got != tt.want) {
			t.Errorf("instance %d field %d = %v, %v; want %v (absent %v)", tt.inst, tt.field, got, ok, tt.want, tt.absent)
		}
	}
	if got, _ := s.GPUs[1].Values.Get(collector.PowerUsage); got != 250 {
		t.Errorf("parent power = %v; want 250", got)
	}
	if got, _ := s.GPUs[1].Values.Get(collector.GREngineActive); got != 0.4 {
		t.Errorf("parent GR engine active = %v; want 0.4", got)
	}
	inv, _ := b.Inventory(context.Background())
	if ids := []int{inv.GPUs[1].Instances[0].GPUInstanceID, inv.GPUs[1].Instances[1].GPUInstanceID}; ids[0] != 1 || ids[1] != 2 {
		t.Errorf("GPU_I_IDs = %v; want [1 2]", ids)
	}

	// A MIG reconfiguration is an inventory change.
	n.addInstance(parent, 8, 5, 0, 1, "1g.5gb", "MIG-c", 4864)
	if _, err := sample(t, b, errCounts{}); !errors.Is(err, collector.ErrInventoryChanged) {
		t.Errorf("Sample after MIG change: %v; want ErrInventoryChanged", err)
	}
}

// TestUnsupportedFields: a field a device does not support is absent, logged
// once, and neither an error nor a log line on later ticks.
func TestUnsupportedFields(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(n *fakeNode)
		field    collector.Field
		logLine  string
		watches  int // Watch calls
		profiled bool
	}{
		{
			name: "profiling module unavailable",
			setup: func(n *fakeNode) {
				n.watchErr = func(fields []uint16) error {
					for _, f := range fields {
						if isProfiling(f) {
							return &statusError{op: "watch", code: stModuleNotLoaded, msg: "module not loaded"}
						}
					}
					return nil
				}
				for _, id := range n.gpus {
					n.set(gpuEnt(id), f64(fiProfGREngineActive, 0.5)) // never asked for
				}
			},
			field: collector.GREngineActive, logLine: "DCGM profiling fields unavailable", watches: 2,
		},
		{
			name: "field not supported by the device",
			setup: func(n *fakeNode) {
				for _, id := range n.gpus {
					n.set(gpuEnt(id), i64(fiDevMemoryTemp, int64Blank+2))
				}
			},
			field: collector.MemoryTemp, logLine: "DCGM_FI_DEV_MEMORY_TEMP", watches: 1, profiled: true,
		},
		{
			name: "profiling field not supported (status)",
			setup: func(n *fakeNode) {
				for _, id := range n.gpus {
					n.set(gpuEnt(id), fieldValue{field: fiProfDRAMActive, status: stNotSupported})
				}
			},
			field: collector.DRAMActive, logLine: "DCGM_FI_PROF_DRAM_ACTIVE", watches: 1, profiled: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := a100Node(4)
			for _, id := range n.gpus {
				n.set(gpuEnt(id), i64(fiDevGPUTemp, 50))
			}
			tt.setup(n)
			b, _, logs := newTestBackend(t, n)
			errs := errCounts{}
			for tick := range 3 {
				s := mustSample(t, b, errs)
				for i, r := range s.GPUs {
					if x, ok := r.Values.Get(tt.field); ok {
						t.Errorf("tick %d GPU %d: field present (%v); want absent", tick, i, x)
					}
					if _, ok := r.Values.Get(collector.GPUTemp); !ok {
						t.Errorf("tick %d GPU %d: temperature absent; the other fields must continue", tick, i)
					}
				}
			}
			if got := logs.count(tt.logLine); got != 1 {
				t.Errorf("%d log lines with %q; want 1\n%s", got, tt.logLine, logs.buf.String())
			}
			if len(errs) != 0 {
				t.Errorf("errors counted: %v", errs)
			}
			if len(n.watched) != tt.watches || b.profiling != tt.profiled {
				t.Errorf("watches = %d, profiling = %v; want %d, %v", len(n.watched), b.profiling, tt.watches, tt.profiled)
			}
		})
	}
}

func TestLostGPU(t *testing.T) {
	tests := []struct {
		name string
		lose func(n *fakeNode, id uint)
	}{
		{"entity status lost", func(n *fakeNode, id uint) { n.lostGPUs[id] = true }},
		{"field status GPU is lost", func(n *fakeNode, id uint) {
			n.set(gpuEnt(id), fieldValue{field: fiDevGPUTemp, status: stGPUIsLost})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := a100Node(4)
			for _, id := range n.gpus {
				n.set(gpuEnt(id), i64(fiDevGPUTemp, 50))
				n.set(gpuEnt(id), f64(fiDevPowerUsage, 200))
			}
			b, _, logs := newTestBackend(t, n)
			mustSample(t, b, errCounts{})

			tt.lose(n, n.gpuOf(2))
			for range 2 {
				s := mustSample(t, b, errCounts{})
				for i, r := range s.GPUs {
					_, hasPower := r.Values.Get(collector.PowerUsage)
					if i == 2 {
						if !r.Lost || r.Healthy || hasPower {
							t.Errorf("lost GPU: lost=%v healthy=%v power present=%v; want true, false, false", r.Lost, r.Healthy, hasPower)
						}
						continue
					}
					if r.Lost || !r.Healthy || !hasPower {
						t.Errorf("GPU %d: lost=%v healthy=%v power present=%v; the others must continue", i, r.Lost, r.Healthy, hasPower)
					}
				}
			}
			if got := logs.count("GPU lost"); got != 1 {
				t.Errorf("%d 'GPU lost' log lines; want 1", got)
			}
		})
	}
}

// TestHostengineDrop: a dropped connection fails Sample with ErrDisconnected,
// closes the client once, and reconnects with exponential backoff measured on
// the injected clock.
func TestHostengineDrop(t *testing.T) {
	n := a100Node(2)
	for _, id := range n.gpus {
		n.set(gpuEnt(id), i64(fiDevGPUTemp, 50))
	}
	b, clock, _ := newTestBackend(t, n)
	mustSample(t, b, errCounts{})

	n.down = true
	steps := []struct {
		advance time.Duration
		up      bool // the hostengine is back before this step
		dials   int  // total dials after the step
		wantErr error
	}{
		{0, false, 1, ErrDisconnected},                      // the drop: no dial yet
		{500 * time.Millisecond, false, 1, ErrDisconnected}, // within 1s backoff: no dial
		{500 * time.Millisecond, false, 2, ErrDisconnected}, // 1s: dial fails, next in 2s
		{time.Second, false, 2, ErrDisconnected},
		{time.Second, false, 3, ErrDisconnected}, // 2s: fails, next in 4s
		{3 * time.Second, false, 3, ErrDisconnected},
		{time.Second, false, 4, ErrDisconnected},     // 4s: fails, next in 8s (the maximum)
		{8 * time.Second, false, 5, ErrDisconnected}, // 8s: fails, next in 8s
		{7 * time.Second, true, 5, ErrDisconnected},  // back, but the backoff holds
		{time.Second, true, 6, nil},                  // reconnects and samples
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		if st.up {
			n.down = false
		}
		s, err := sample(t, b, errCounts{})
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
			t.Fatalf("step %d: Sample error %v; want %v", i, err, st.wantErr)
		}
		if n.dials != st.dials {
			t.Errorf("step %d: %d dials; want %d", i, n.dials, st.dials)
		}
		if err == nil {
			if _, ok := s.GPUs[0].Values.Get(collector.GPUTemp); !ok {
				t.Errorf("step %d: no temperature after reconnect", i)
			}
		}
	}
	if n.closes != 1 {
		t.Errorf("%d Close calls; want 1 (the dropped connection; never after a failed dial)", n.closes)
	}
	// After a successful reconnect the backoff starts again at the minimum.
	if b.backoff != 0 {
		t.Errorf("backoff after reconnect = %v; want 0", b.backoff)
	}
}

func TestReconnectWithOtherDevices(t *testing.T) {
	n := a100Node(2)
	b, clock, _ := newTestBackend(t, n)
	mustSample(t, b, errCounts{})
	n.down = true
	if _, err := sample(t, b, errCounts{}); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("Sample: %v", err)
	}
	// The hostengine comes back on a node with one more GPU.
	*n = *withDials(a100Node(3), n)
	clock.Advance(time.Second)
	s := collector.Sample{GPUs: make([]collector.GPUReading, 2)}
	if err := b.Sample(context.Background(), time.Time{}, &s, errCounts{}); !errors.Is(err, collector.ErrInventoryChanged) {
		t.Fatalf("Sample after reconnect: %v; want ErrInventoryChanged", err)
	}
	inv, err := b.Inventory(context.Background())
	if err != nil || len(inv.GPUs) != 3 {
		t.Fatalf("Inventory = %d GPUs, %v; want 3", len(inv.GPUs), err)
	}
	mustSample(t, b, errCounts{})
}

// withDials carries old's connection bookkeeping over to n.
func withDials(n, old *fakeNode) *fakeNode {
	n.dials, n.failedDials, n.closes, n.open = old.dials, old.failedDials, old.closes, old.open
	return n
}

func TestXIDsAndHealth(t *testing.T) {
	n := a100Node(2)
	n.addInstance(n.gpuOf(1), 0, 1, 0, 1, "1g.5gb", "MIG-x", 4864)
	b, clock, _ := newTestBackend(t, n)
	t0 := clock.Now()
	n.xids = []fieldValue{
		{entity: gpuEnt(n.gpuOf(0)), field: fiDevXIDErrors, typ: typeInt64, i64: 31, ts: t0.Add(time.Second)},
		{entity: gpuEnt(n.gpuOf(0)), field: fiDevXIDErrors, typ: typeInt64, i64: 31, ts: t0.Add(2 * time.Second)},
		{entity: gpuEnt(n.gpuOf(0)), field: fiDevXIDErrors, typ: typeInt64, i64: 13, ts: t0.Add(3 * time.Second)},
		{entity: gpuEnt(n.gpuOf(1)), field: fiDevXIDErrors, typ: typeInt64, i64: int64Blank, ts: t0.Add(3 * time.Second)},
	}
	n.incidents = []healthIncident{
		{entity: gpuEnt(n.gpuOf(0)), failure: false, message: "power throttling"},
		{entity: giEnt(0), failure: true, message: "double-bit ECC"},
	}
	s := mustSample(t, b, errCounts{})
	wantXIDs := []collector.XIDCount{{XID: 13, Count: 1}, {XID: 31, Count: 2}}
	if got := s.GPUs[0].XIDs; !equalXIDs(got, wantXIDs) || len(s.GPUs[1].XIDs) != 0 {
		t.Errorf("XIDs = %v, %v; want %v, none", got, s.GPUs[1].XIDs, wantXIDs)
	}
	if !s.GPUs[0].Healthy || s.GPUs[1].Healthy {
		t.Errorf("healthy = %v, %v; want true (a warning), false (a failure on its MIG instance)", s.GPUs[0].Healthy, s.GPUs[1].Healthy)
	}

	// Later events add to the counts; old ones are not counted twice.
	n.xids = append(n.xids, fieldValue{entity: gpuEnt(n.gpuOf(0)), field: fiDevXIDErrors, typ: typeInt64, i64: 79, ts: t0.Add(5 * time.Second)})
	n.incidents = nil
	s = mustSample(t, b, errCounts{})
	wantXIDs = []collector.XIDCount{{XID: 13, Count: 1}, {XID: 31, Count: 2}, {XID: 79, Count: 1}}
	if got := s.GPUs[0].XIDs; !equalXIDs(got, wantXIDs) {
		t.Errorf("XIDs = %v; want %v", got, wantXIDs)
	}
	if !s.GPUs[1].Healthy {
		t.Error("GPU 1 still unhealthy after the incident cleared")
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

func TestNewFailures(t *testing.T) {
	tests := []struct {
		name    string
		node    func() *fakeNode
		wantErr error
		wantMsg []string
	}{
		{
			name:    "no libdcgm",
			node:    func() *fakeNode { n := a100Node(1); n.libMissing = true; return n },
			wantErr: ErrLibraryNotFound,
			wantMsg: []string{"libdcgm.so.4", "--backend=nvml", "--backend=sim"},
		},
		{
			name:    "hostengine unreachable",
			node:    func() *fakeNode { n := a100Node(1); n.down = true; return n },
			wantMsg: []string{"connect to DCGM"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node()
			b, err := newBackend(Options{}, n.dial)
			if err == nil {
				b.Close()
				t.Fatal("newBackend succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v; want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && errors.Is(err, ErrLibraryNotFound) {
				t.Errorf("error %v wraps ErrLibraryNotFound", err)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
			if n.closes != 0 || n.open != 0 {
				t.Errorf("Close called %d times after a failed Init", n.closes)
			}
		})
	}
}

func TestDiscoverFailureClosesConnection(t *testing.T) {
	n := a100Node(1)
	n.watchErr = func([]uint16) error { return &statusError{op: "watch", code: -3, msg: "generic"} }
	if _, err := newBackend(Options{}, n.dial); err == nil {
		t.Fatal("newBackend succeeded")
	}
	if n.dials != 1 || n.closes != 1 || n.open != 0 {
		t.Errorf("dials %d, closes %d, open %d; want 1, 1, 0", n.dials, n.closes, n.open)
	}
}

func TestHealthWatchesUnavailable(t *testing.T) {
	n := a100Node(2)
	n.healthErr = &statusError{op: "set health watches", code: stNotSupported, msg: "not supported"}
	n.incidents = []healthIncident{{entity: gpuEnt(n.gpuOf(0)), failure: true}} // never read
	b, _, logs := newTestBackend(t, n)
	errs := errCounts{}
	for range 3 {
		s := mustSample(t, b, errs)
		if !s.GPUs[0].Healthy || !s.GPUs[1].Healthy {
			t.Errorf("healthy = %v, %v; want true without health watches", s.GPUs[0].Healthy, s.GPUs[1].Healthy)
		}
	}
	if n.healthChecks != 0 || len(errs) != 0 {
		t.Errorf("%d health checks, errors %v; want none", n.healthChecks, errs)
	}
	if got := logs.count("health watches unavailable"); got != 1 {
		t.Errorf("%d log lines; want 1", got)
	}
}

// FuzzClassify: whatever DCGM returns, a value the backend keeps is a finite,
// non-negative number in the contract's range, never a blank.
func FuzzClassify(f *testing.F) {
	f.Add(uint8(0), int64(41), 0.0, 0)
	f.Add(uint8(8), int64(int64Blank), 0.0, 0)
	f.Add(uint8(7), int64(0), fp64Blank+2, 0)
	f.Add(uint8(15), int64(4294967295), 0.0, 0)
	f.Add(uint8(17), int64(0), 1.0000001, 0)
	f.Add(uint8(2), int64(int32Blank+2), 0.0, -6)
	f.Fuzz(func(t *testing.T, field uint8, i int64, d float64, status int) {
		s := specs[int(field)%len(specs)]
		for _, v := range []fieldValue{
			{field: s.id, typ: typeInt64, i64: i, status: status},
			{field: s.id, typ: typeDouble, f64: d, status: status},
		} {
			x, verd := classify(s, v)
			if verd != valid {
				continue
			}
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("%s: %+v kept as %v", s.dcgm, v, x)
			}
			if s.max != 0 && x > s.max*s.scale {
				t.Fatalf("%s: %+v kept as %v above %v", s.dcgm, v, x, s.max)
			}
			if v.typ == typeDouble && v.f64 >= fp64Blank || v.typ == typeInt64 && v.i64 >= int64Blank {
				t.Fatalf("%s: blank %+v kept as %v", s.dcgm, v, x)
			}
		}
	})
}
