package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
)

// t0 is a Monday 00:00 UTC.
var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func newDefault(t testing.TB, opts Options) *Backend {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = t0
	}
	b, err := New(Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleAt samples b at now, reading a changed inventory as the sampler does.
func sampleAt(t testing.TB, b *Backend, now time.Time) collector.Sample {
	t.Helper()
	var s collector.Sample
	err := b.Sample(context.Background(), now, &s, nil)
	if errors.Is(err, collector.ErrInventoryChanged) {
		err = b.Sample(context.Background(), now, &s, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleOnce(t *testing.T, b *Backend) {
	s := sampleAt(t, b, t0.Add(90*time.Minute))
	if len(s.GPUs) != len(b.inv.GPUs) {
		t.Fatalf("%d readings for %d GPUs", len(s.GPUs), len(b.inv.GPUs))
	}
}

func get(t testing.TB, v *collector.Values, f collector.Field) float64 {
	t.Helper()
	x, ok := v.Get(f)
	if !ok {
		t.Fatalf("field %d absent", f)
	}
	return x
}

func TestInventory(t *testing.T) {
	b := newDefault(t, Options{})
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gpuUUID := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	migUUID := regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	busID := regexp.MustCompile(`^[0-9A-F]{8}:[0-9A-F]{2}:00\.0$`)
	seen := map[string]bool{}
	for i, g := range inv.GPUs {
		if g.Index != i || g.Minor != i || !gpuUUID.MatchString(g.UUID) || !busID.MatchString(g.PCIBusID) || g.MemoryTotalMiB != 81559 {
			t.Errorf("GPU %d: %+v", i, g)
		}
		if seen[g.UUID] || seen[g.PCIBusID] {
			t.Errorf("GPU %d repeats a UUID or bus ID", i)
		}
		seen[g.UUID], seen[g.PCIBusID] = true, true
		gis := map[int]bool{}
		for _, in := range g.Instances {
			if !migUUID.MatchString(in.UUID) || seen[in.UUID] || gis[in.GPUInstanceID] {
				t.Errorf("GPU %d instance %+v: bad or repeated UUID or GPU instance ID", i, in)
			}
			seen[in.UUID], gis[in.GPUInstanceID] = true, true
		}
	}
	if got := inv.GPUs[6].Instances; len(got) != 3 || got[0].Profile != "3g.40gb" || got[0].MemoryTotalMiB != 40448 || got[0].ComputeSlices != 3 || got[0].MemorySlices != 4 {
		t.Errorf("GPU 6 instances %+v", got)
	}
	if inv.DriverVersion != "550.90.07" {
		t.Errorf("driver %q", inv.DriverVersion)
	}
}

func TestSampleIsDeterministic(t *testing.T) {
	times := []time.Time{t0.Add(time.Minute), t0.Add(3*time.Hour + 7*time.Second), t0.Add(26*time.Hour + 1234*time.Millisecond)}
	a, b := newDefault(t, Options{}), newDefault(t, Options{})
	other := newDefault(t, Options{Seed: 12345})
	for _, now := range times {
		sa, sb, so := sampleAt(t, a, now), sampleAt(t, b, now), sampleAt(t, other, now)
		if !reflect.DeepEqual(sa, sb) {
			t.Fatalf("two backends of one seed differ at %v", now)
		}
		if reflect.DeepEqual(sa.GPUs, so.GPUs) {
			t.Fatalf("another seed gives the same readings at %v", now)
		}
		if again := sampleAt(t, a, now); !reflect.DeepEqual(sa, again) {
			t.Fatalf("sampling %v twice differs", now)
		}
	}
	if a.inv.GPUs[0].UUID == other.inv.GPUs[0].UUID {
		t.Error("another seed gives the same UUIDs")
	}
}

// TestVirtualTimeMatchesAnySchedule samples one backend every 30 s (virtual time)
// and another only now and then, out of order: the readings at common times, the
// cumulative counters included, must be identical.
func TestVirtualTimeMatchesAnySchedule(t *testing.T) {
	dense, sparse := newDefault(t, Options{}), newDefault(t, Options{})
	want := map[time.Duration]collector.Sample{}
	var s collector.Sample
	s.GPUs = make([]collector.GPUReading, 8)
	for d := time.Duration(0); d <= 6*time.Hour; d += 30 * time.Second {
		if err := dense.Sample(context.Background(), t0.Add(d), &s, nil); err != nil {
			t.Fatal(err)
		}
		if d%(90*time.Minute) == 0 {
			want[d] = clone(s)
		}
	}
	for _, d := range []time.Duration{6 * time.Hour, 90 * time.Minute, 0, 270 * time.Minute, 3 * time.Hour} {
		got := sampleAt(t, sparse, t0.Add(d))
		if !reflect.DeepEqual(got, want[d]) {
			e1, _ := got.GPUs[0].Values.Get(collector.TotalEnergy)
			e2, _ := want[d].GPUs[0].Values.Get(collector.TotalEnergy)
			t.Fatalf("at +%v sparse sampling differs from dense (energy %v vs %v)", d, e1, e2)
		}
	}
}

func clone(s collector.Sample) collector.Sample {
	c := collector.Sample{Time: s.Time, GPUs: make([]collector.GPUReading, len(s.GPUs))}
	for i, g := range s.GPUs {
		c.GPUs[i] = g
		c.GPUs[i].XIDs = append([]collector.XIDCount(nil), g.XIDs...)
		c.GPUs[i].Processes = append([]collector.Process(nil), g.Processes...)
		c.GPUs[i].Instances = append([]collector.Values(nil), g.Instances...)
	}
	return c
}

// TestPatterns samples the default node every minute for a day and checks each
// device behaves as its workload says.
func TestPatterns(t *testing.T) {
	b := newDefault(t, Options{})
	type stats struct{ min, max, sum float64 }
	acts := make([]stats, 8)
	for i := range acts {
		acts[i] = stats{min: math.Inf(1), max: math.Inf(-1)}
	}
	var morning, afternoon float64 // GPU 1 (inference) at 02–04 and 14–16 UTC
	busyMinutes := 0               // GPU 2 (time-sliced, one bursty developer) above 50 %
	var s collector.Sample
	for d := time.Duration(0); d < 24*time.Hour; d += time.Minute {
		if err := b.Sample(context.Background(), t0.Add(d), &s, nil); err != nil {
			t.Fatal(err)
		}
		for i := range s.GPUs {
			a := get(t, &s.GPUs[i].Values, collector.GREngineActive)
			acts[i].min, acts[i].max, acts[i].sum = math.Min(acts[i].min, a), math.Max(acts[i].max, a), acts[i].sum+a
		}
		a1 := get(t, &s.GPUs[1].Values, collector.GREngineActive)
		switch h := d.Hours(); {
		case h >= 2 && h < 4:
			morning += a1
		case h >= 14 && h < 16:
			afternoon += a1
		}
		if get(t, &s.GPUs[2].Values, collector.GREngineActive) > 0.5 {
			busyMinutes++
		}
		// The idle pod's GPU: allocated, framebuffer held, nothing running.
		if u := get(t, &s.GPUs[3].Values, collector.GPUUtil); u != 0 {
			t.Fatalf("idle GPU 3 at %v%% utilization", u)
		}
		if fb := get(t, &s.GPUs[3].Values, collector.FBUsed); fb != 21000 {
			t.Fatalf("idle GPU 3 holds %v MiB, want 21000", fb)
		}
	}
	mean := func(i int) float64 { return acts[i].sum / (24 * 60) }
	if acts[0].min < 0.85 || acts[0].max > 0.97 {
		t.Errorf("training GPU 0 activity in [%v, %v], want within [0.85, 0.97]", acts[0].min, acts[0].max)
	}
	if acts[3].max != 0 || acts[5].max != 0 {
		t.Errorf("idle GPU 3 / unallocated GPU 5 peak activity %v / %v, want 0", acts[3].max, acts[5].max)
	}
	if afternoon < 2*morning {
		t.Errorf("inference GPU 1: afternoon activity %v not well above night %v", afternoon, morning)
	}
	if busyMinutes < 20 || mean(2) > 0.2 {
		t.Errorf("bursty GPU 2: %d busy minutes, mean %v; want bursts and a low mean", busyMinutes, mean(2))
	}
	if mean(6) <= 0 || mean(6) >= mean(0) {
		t.Errorf("MIG GPU 6 mean activity %v, want between 0 and training's %v", mean(6), mean(0))
	}
}

func TestMIGReadings(t *testing.T) {
	b := newDefault(t, Options{})
	s := sampleAt(t, b, t0.Add(15*time.Hour))
	for i, r := range s.GPUs {
		g := b.inv.GPUs[i]
		if g.MIGEnabled == r.Values.Has(collector.GPUUtil) || g.MIGEnabled == r.Values.Has(collector.MemCopyUtil) {
			t.Errorf("GPU %d (MIG %v): GPU_UTIL present %v", i, g.MIGEnabled, r.Values.Has(collector.GPUUtil))
		}
		for _, f := range []collector.Field{collector.FBUsed, collector.FBFree, collector.FBReserved, collector.GPUTemp, collector.MemoryTemp,
			collector.PowerUsage, collector.TotalEnergy, collector.SMClock, collector.MemClock, collector.XIDLast, collector.PCIeReplay,
			collector.ECCSBEVolatile, collector.ECCDBEVolatile, collector.PowerViolation, collector.ThermalViolation,
			collector.GREngineActive, collector.SMActive, collector.TensorActive, collector.DRAMActive} {
			if !r.Values.Has(f) {
				t.Errorf("GPU %d lacks field %d", i, f)
			}
		}
		if len(r.Instances) != len(g.Instances) {
			t.Fatalf("GPU %d: %d instance readings for %d instances", i, len(r.Instances), len(g.Instances))
		}
		var used float64
		for j := range r.Instances {
			v := &r.Instances[j]
			for _, f := range []collector.Field{collector.GPUUtil, collector.PowerUsage, collector.TotalEnergy, collector.GPUTemp, collector.SMClock} {
				if v.Has(f) {
					t.Errorf("GPU %d instance %d carries parent-only field %d", i, j, f)
				}
			}
			u, f, res := get(t, v, collector.FBUsed), get(t, v, collector.FBFree), get(t, v, collector.FBReserved)
			if u+f+res != float64(g.Instances[j].MemoryTotalMiB) {
				t.Errorf("GPU %d instance %d: used+free+reserved = %v, want %d", i, j, u+f+res, g.Instances[j].MemoryTotalMiB)
			}
			used += u
			for _, f := range []collector.Field{collector.GREngineActive, collector.SMActive, collector.TensorActive, collector.DRAMActive} {
				if x := get(t, v, f); x < 0 || x > 1 {
					t.Errorf("GPU %d instance %d field %d = %v outside 0–1", i, j, f, x)
				}
			}
		}
		u, f, res := get(t, &r.Values, collector.FBUsed), get(t, &r.Values, collector.FBFree), get(t, &r.Values, collector.FBReserved)
		if u+f+res != float64(g.MemoryTotalMiB) {
			t.Errorf("GPU %d: used+free+reserved = %v, want %d", i, u+f+res, g.MemoryTotalMiB)
		}
		if g.MIGEnabled && u != used {
			t.Errorf("GPU %d: parent FB used %v, instances %v", i, u, used)
		}
	}
	// GPU 6's instance 2 is unassigned: idle, empty.
	if a := get(t, &s.GPUs[6].Instances[2], collector.GREngineActive); a != 0 {
		t.Errorf("unassigned instance active %v", a)
	}
	if a := get(t, &s.GPUs[6].Instances[0], collector.GREngineActive); a <= 0 {
		t.Errorf("inference instance at 15:00 idle")
	}
}

func TestProcesses(t *testing.T) {
	b := newDefault(t, Options{})
	s := sampleAt(t, b, t0.Add(15*time.Hour))
	// GPU 0: the training pod's two processes split its framebuffer.
	ps := s.GPUs[0].Processes
	if len(ps) != 2 || ps[0].PID != 31337 || ps[1].PID != 31338 || ps[0].GPUInstanceID != -1 {
		t.Fatalf("GPU 0 processes %+v", ps)
	}
	fb := get(t, &s.GPUs[0].Values, collector.FBUsed)
	if got := float64(ps[0].UsedMemoryBytes+ps[1].UsedMemoryBytes) / (1 << 20); math.Abs(got-fb) > 1 {
		t.Errorf("processes use %v MiB, GPU %v MiB", got, fb)
	}
	// GPU 2: three time-sliced pods, utilizations add up to the GPU's.
	ps = s.GPUs[2].Processes
	if len(ps) != 3 {
		t.Fatalf("GPU 2 processes %+v", ps)
	}
	var sum float64
	for _, p := range ps {
		sum += p.Utilization
	}
	if gr := get(t, &s.GPUs[2].Values, collector.GREngineActive); math.Abs(sum-gr) > 1e-9 {
		t.Errorf("time-sliced processes use %v, GPU %v", sum, gr)
	}
	// GPU 5: unallocated, no processes. GPU 6: one per held instance, with its GI ID.
	if len(s.GPUs[5].Processes) != 0 {
		t.Errorf("unallocated GPU has processes %+v", s.GPUs[5].Processes)
	}
	ps = s.GPUs[6].Processes
	if len(ps) != 2 || ps[0].GPUInstanceID != b.inv.GPUs[6].Instances[0].GPUInstanceID || ps[1].GPUInstanceID != b.inv.GPUs[6].Instances[1].GPUInstanceID {
		t.Errorf("GPU 6 processes %+v", ps)
	}
}

func TestCountersAreMonotonic(t *testing.T) {
	b := newDefault(t, Options{})
	counters := []collector.Field{collector.TotalEnergy, collector.PowerViolation, collector.ThermalViolation,
		collector.PCIeReplay, collector.ECCSBEVolatile, collector.ECCDBEVolatile}
	prev := make([][]float64, 8)
	var s collector.Sample
	for d := time.Duration(0); d < 24*time.Hour; d += 11 * time.Second {
		if err := b.Sample(context.Background(), t0.Add(d), &s, nil); err != nil {
			t.Fatal(err)
		}
		for i := range s.GPUs {
			for j, f := range counters {
				x := get(t, &s.GPUs[i].Values, f)
				if prev[i] == nil {
					prev[i] = make([]float64, len(counters))
				} else if x < prev[i][j] {
					t.Fatalf("GPU %d field %d went from %v to %v at +%v", i, f, prev[i][j], x, d)
				}
				prev[i][j] = x
			}
		}
	}
	if prev[0][1] == 0 {
		t.Error("the training GPU never hit its power limit in a day")
	}
}

// TestEnergyIsIntegralOfPower checks the energy counter against the reported power,
// which is linear between knots, sampled at every knot.
func TestEnergyIsIntegralOfPower(t *testing.T) {
	b := newDefault(t, Options{})
	prevT := t0.Add(10*time.Hour + 1300*time.Millisecond)
	s := sampleAt(t, b, prevT)
	e0 := get(t, &s.GPUs[0].Values, collector.TotalEnergy)
	prevP := get(t, &s.GPUs[0].Values, collector.PowerUsage)
	var joules float64
	for now := prevT.Truncate(5 * time.Second).Add(5 * time.Second); now.Before(t0.Add(11 * time.Hour)); now = now.Add(5 * time.Second) {
		s = sampleAt(t, b, now)
		p := get(t, &s.GPUs[0].Values, collector.PowerUsage)
		joules += (prevP + p) / 2 * now.Sub(prevT).Seconds()
		prevT, prevP = now, p
	}
	e1 := get(t, &s.GPUs[0].Values, collector.TotalEnergy)
	if got := (e1 - e0) / 1000; math.Abs(got-joules)/joules > 1e-5 {
		t.Errorf("energy grew %v J, power integrates to %v J", got, joules)
	}
}

func TestActivityScale(t *testing.T) {
	const scenario = `seed: 3
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
workloads:
  - {name: full, pattern: inference, fb_mib: 6000}
  - {name: light, pattern: inference, fb_mib: 6000, activity_scale: 0.2}
pods:
  - {namespace: a, pod: full-0, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, workload: full}
  - {namespace: a, pod: light-0, container: c, resource: nvidia.com/gpu, device: {gpu: 1}, workload: light}
`
	sc, err := Parse([]byte(scenario), "scale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	b, err := New(sc, Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := b.Inventory(context.Background())
	var peakFull, peakLight float64
	for now := start; now.Before(start.Add(24 * time.Hour)); now = now.Add(5 * time.Minute) {
		s := collector.Sample{GPUs: make([]collector.GPUReading, len(inv.GPUs))}
		if err := b.Sample(context.Background(), now, &s, nil); err != nil {
			t.Fatal(err)
		}
		full, _ := s.GPUs[0].Values.Get(collector.GREngineActive)
		light, _ := s.GPUs[1].Values.Get(collector.GREngineActive)
		peakFull, peakLight = max(peakFull, full), max(peakLight, light)
	}
	if peakFull < 0.5 || peakLight > 0.2 || peakLight < 0.05 {
		t.Errorf("peak activity %.3f unscaled, %.3f at scale 0.2", peakFull, peakLight)
	}
	if _, err := Parse([]byte(strings.Replace(scenario, "activity_scale: 0.2", "activity_scale: 1.5", 1)), "bad.yaml"); err == nil ||
		!strings.Contains(err.Error(), "bad.yaml:7: workloads[1].activity_scale") {
		t.Errorf("activity_scale 1.5: %v, want an error at bad.yaml:7 naming workloads[1].activity_scale", err)
	}
}

// podsAt returns the node's pod allocations at since after the backend's
// start — the scenario's pods running then, in scenario order, then the
// jobs' — and its allocatable devices per resource, sorted by resource.
func (b *Backend) podsAt(since time.Duration) ([]Allocation, []Allocatable) {
	return b.allocations(b.running(int64(since))), b.allocatable(int64(since))
}

// startFiles starts b's kubelet in virtual time and returns what it wrote at
// b's start: its procfs and pod log directory, in memory.
func startFiles(t *testing.T, b *Backend) (files attribution.Files, proc, logs string) {
	t.Helper()
	k, err := StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k.Files(), k.ProcRoot, k.PodLogsDir
}
