package collector

import (
	"context"
	"errors"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector/collectortest"
	"github.com/gputally/gputally/cost"
)

// staticBook is a cost.BookSource with one book.
type staticBook struct{ b *cost.Book }

func (s staticBook) Book() *cost.Book { return s.b }

var update = flag.Bool("update", false, "rewrite golden files")

// fakeBackend is a two-GPU node: GPU 0 whole, GPU 1 in MIG mode with two instances.
type fakeBackend struct {
	calls   int
	lost    bool  // GPU 0 fell off the bus
	failAll error // Sample fails
	power   float64
	// mig is GPU 1's MIG layout; nil: a 3g.40gb and a 1g.10gb, which leave
	// 3 compute and 3 memory slices free, all hostable.
	mig []MIGInstance
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Inventory(context.Context) (Inventory, error) {
	mig := f.mig
	if mig == nil {
		mig = []MIGInstance{
			{UUID: "MIG-1111", GPUInstanceID: 2, Profile: "3g.40gb", ComputeSlices: 3, MemorySlices: 4},
			{UUID: "MIG-2222", GPUInstanceID: 9, Profile: "1g.10gb", ComputeSlices: 1, MemorySlices: 1},
		}
	}
	return Inventory{DriverVersion: "550.54.15", GPUs: []GPU{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa", PCIBusID: "00000000:07:00.0", Model: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: 81559},
		{Index: 1, Minor: 1, UUID: "GPU-bbbb", PCIBusID: "00000000:0F:00.0", Model: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: 81559, MIGEnabled: true,
			Instances: mig},
	}}, nil
}

func (f *fakeBackend) Sample(_ context.Context, _ time.Time, s *Sample, errs ErrorCounter) error {
	f.calls++
	if f.failAll != nil {
		return f.failAll
	}
	g0 := &s.GPUs[0]
	if f.lost {
		g0.Lost = true
		g0.Healthy = false
	} else {
		g0.Values.Set(GPUUtil, 87)
		g0.Values.Set(FBUsed, 40000)
		g0.Values.Set(FBFree, 41559)
		g0.Values.Set(PowerUsage, f.power)
		g0.Values.Set(TotalEnergy, 123456789)
		g0.Values.Set(GPUTemp, 61)
		g0.XIDs = []XIDCount{{XID: 13, Count: 2}, {XID: 79, Count: 1}}
		g0.Values.Set(XIDLast, 79)
	}
	g1 := &s.GPUs[1]
	g1.Values.Set(PowerUsage, 300)
	g1.Values.Set(GPUTemp, 55)
	g1.Values.Set(GREngineActive, 0.5)
	g1.ProcessesKnown = true
	g1.Processes = []Process{{PID: 42, GPUInstanceID: 9, UsedMemoryBytes: 1 << 30, Utilization: math.NaN()}}
	g1.Instances[0].Set(FBUsed, 1000)
	g1.Instances[0].Set(FBFree, 39000)
	g1.Instances[0].Set(GREngineActive, 0.25)
	// Instance 1 reports no activity field: the ledger falls back to processes.
	g1.Instances[1].Set(FBUsed, 10)
	errs.Inc("memory_temperature")
	return nil
}

func (f *fakeBackend) Close() error { return nil }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// fakeHolders is a HolderSource with fixed holders.
type fakeHolders struct{ snap *attribution.Snapshot }

func (f fakeHolders) Current() *attribution.Snapshot { return f.snap }

// podsOnNode: GPU-aaaa exclusive to one container; MIG-1111 held by a
// container; MIG-2222 time-sliced by two (no pod labels on its series).
var podsOnNode = &attribution.Snapshot{
	Up: true, LastSuccess: t0.Add(-2 * time.Second),
	Holders: map[string][]attribution.Holder{
		"GPU-aaaa": {{Namespace: "ml", Pod: "train-0", Container: "trainer", Resource: "nvidia.com/gpu", Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
		"MIG-1111": {{Namespace: "serve", Pod: "llm-0", Container: "server", Resource: "nvidia.com/mig-3g.40gb", Sharing: attribution.MIG, Replicas: 1, Share: 1}},
		"MIG-2222": {
			{Namespace: "dev", Pod: "nb-a", Container: "jupyter", Resource: "nvidia.com/mig-1g.10gb", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5},
			{Namespace: "dev", Pod: "nb-b", Container: "jupyter", Resource: "nvidia.com/mig-1g.10gb", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5},
		},
	},
	UnknownIDs: 3,
}

// staleAttribution is what the attribution client publishes once its last
// success is older than stale-after: no holders.
var staleAttribution = &attribution.Snapshot{Up: false, LastSuccess: t0.Add(-10 * time.Minute), UnknownIDs: 3}

func TestCollectorGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend *fakeBackend
		holders HolderSource
		ledger  bool
	}{
		{"node", &fakeBackend{power: 412.5}, nil, false},
		{"lost_gpu", &fakeBackend{power: 412.5, lost: true}, nil, false},
		{"backend_down", &fakeBackend{failAll: errors.New("driver not loaded")}, nil, false},
		{"attributed_with_ledger", &fakeBackend{power: 412.5}, fakeHolders{podsOnNode}, true},
		// GPU-aaaa is lost: its hour is capital only, state lost, no pod labels.
		{"lost_gpu_with_ledger", &fakeBackend{power: 412.5, lost: true}, fakeHolders{podsOnNode}, true},
		// The kubelet has not answered for longer than stale-after: no
		// holders, so held time is unknown; GPU-bbbb's free slices stay unallocated.
		{"attribution_stale_with_ledger", &fakeBackend{power: 412.5}, fakeHolders{staleAttribution}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two samples an hour apart, at an interval of an hour: the
			// second charges the whole hour at its readings.
			opts := SamplerOptions{Interval: time.Hour, Now: fixedClock(t0), Holders: tc.holders}
			if tc.ledger {
				opts.Ledger = cost.NewLedger(staticBook{cost.Default()})
			}
			s := NewSampler(tc.backend, opts)
			_ = s.Tick(context.Background(), t0.Add(-time.Hour))
			_ = s.Tick(context.Background(), t0)
			for _, names := range collectortest.Namings {
				c := NewCollector(s, Node{Hostname: "node-a", Names: names}, fixedClock(t0.Add(1500*time.Millisecond)))
				collectortest.CompareGolden(t, c, collectortest.GoldenFile("testdata", tc.name, names), *update)
				collectortest.CompareGather(t, c)
			}
		})
	}
}

func TestSamplerDoesNotCallBackendOnScrape(t *testing.T) {
	b := &fakeBackend{power: 100}
	s := NewSampler(b, SamplerOptions{Now: fixedClock(t0)})
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(s, Node{Hostname: "node-a"}, nil))
	before := b.calls
	for range 200 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if b.calls != before {
		t.Fatalf("scrapes called the backend %d times; want 0", b.calls-before)
	}
}

func TestSamplerPublishesImmutableSnapshots(t *testing.T) {
	b := &fakeBackend{power: 100}
	s := NewSampler(b, SamplerOptions{Now: fixedClock(t0)})
	if s.Ready() {
		t.Fatal("ready before the first tick")
	}
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	first := s.Snapshot()
	b.power = 200
	if err := s.Tick(context.Background(), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if p, _ := first.Sample.GPUs[0].Values.Get(PowerUsage); p != 100 {
		t.Fatalf("first snapshot changed after the next tick: power %v", p)
	}
	if p, _ := s.Snapshot().Sample.GPUs[0].Values.Get(PowerUsage); p != 200 {
		t.Fatalf("latest power %v, want 200", p)
	}
	if got := s.Snapshot().Errors["memory_temperature"]; got != 2 {
		t.Fatalf("errors counted %d, want 2", got)
	}
}

// changingBackend reports ErrInventoryChanged once, then a new layout.
type changingBackend struct {
	fakeBackend
	inventories int
	changed     bool
}

func (c *changingBackend) Inventory(ctx context.Context) (Inventory, error) {
	c.inventories++
	inv, err := c.fakeBackend.Inventory(ctx)
	if c.inventories > 1 {
		inv.GPUs[1].Instances = inv.GPUs[1].Instances[:1]
	}
	return inv, err
}

func (c *changingBackend) Sample(ctx context.Context, now time.Time, s *Sample, errs ErrorCounter) error {
	if !c.changed {
		c.changed = true
		return ErrInventoryChanged
	}
	if len(s.GPUs[1].Instances) != 1 {
		return errors.New("sample not sized to the new inventory")
	}
	s.GPUs[1].Instances[0].Set(FBUsed, 5)
	return nil
}

func TestSamplerRereadsInventoryOnChange(t *testing.T) {
	b := &changingBackend{}
	s := NewSampler(b, SamplerOptions{Now: fixedClock(t0)})
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if b.inventories != 2 {
		t.Fatalf("inventory read %d times, want 2", b.inventories)
	}
	if n := len(s.Snapshot().Inventory.GPUs[1].Instances); n != 1 {
		t.Fatalf("snapshot has %d instances, want 1", n)
	}
}

func TestActivitySignals(t *testing.T) {
	s := NewSampler(&fakeBackend{power: 1}, SamplerOptions{Now: fixedClock(t0)})
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	act := s.Snapshot().Activity
	for _, tc := range []struct {
		name   string
		got    Activity
		ratio  float64
		signal Signal
	}{
		{"whole GPU by utilization", act[0], 0.87, SignalGPUUtil},
		{"MIG parent by GR engine", act[1], 0.5, SignalGREngine},
		{"MIG instance by GR engine", act[1].Instances[0], 0.25, SignalGREngine},
		{"MIG instance by processes", act[1].Instances[1], 1, SignalProcesses},
	} {
		if tc.got.Signal != tc.signal || math.Abs(tc.got.Ratio-tc.ratio) > 1e-12 {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, tc.got.Ratio, tc.got.Signal, tc.ratio, tc.signal)
		}
	}
}

// TestMIGInstanceWithoutSignalsIsUnknown: a MIG instance that reports no
// activity field falls back to its compute processes only when the backend
// listed them. Without a process list the instance is unknown (NaN, signal
// none), not idle: a list that was not read is not an empty list.
func TestMIGInstanceWithoutSignalsIsUnknown(t *testing.T) {
	inv := Inventory{GPUs: []GPU{{UUID: "GPU-bbbb", MIGEnabled: true, Instances: []MIGInstance{
		{UUID: "MIG-1111", GPUInstanceID: 2, Profile: "3g.40gb", ComputeSlices: 3, MemorySlices: 4},
		{UUID: "MIG-2222", GPUInstanceID: 9, Profile: "1g.10gb", ComputeSlices: 1, MemorySlices: 1},
	}}}}
	for _, tc := range []struct {
		name   string
		known  bool
		procs  []Process
		ratio  [2]float64 // NaN: unknown
		signal [2]Signal
	}{
		{"processes not listed", false, nil, [2]float64{math.NaN(), math.NaN()}, [2]Signal{SignalNone, SignalNone}},
		// A stale list the backend did not vouch for changes nothing.
		{"processes not listed, stale list", false, []Process{{PID: 7, GPUInstanceID: 9}}, [2]float64{math.NaN(), math.NaN()}, [2]Signal{SignalNone, SignalNone}},
		{"no process runs", true, nil, [2]float64{0, 0}, [2]Signal{SignalProcesses, SignalProcesses}},
		{"a process in GPU instance 9", true, []Process{{PID: 7, GPUInstanceID: 9}}, [2]float64{0, 1}, [2]Signal{SignalProcesses, SignalProcesses}},
	} {
		s := newSample(inv, t0)
		s.GPUs[0].Values.Set(GREngineActive, 0.1) // the parent's signal does not stand in for an instance's
		s.GPUs[0].ProcessesKnown, s.GPUs[0].Processes = tc.known, tc.procs
		act := activities(inv, s)[0].Instances
		for j, a := range act {
			want := tc.ratio[j]
			if a.Signal != tc.signal[j] || (math.IsNaN(want) != math.IsNaN(a.Ratio)) || (!math.IsNaN(want) && a.Ratio != want) {
				t.Errorf("%s: instance %d = %v %v, want %v %v", tc.name, j, a.Ratio, a.Signal, want, tc.signal[j])
			}
		}
	}
}

func TestLedgerSeriesOutliveAFailedSample(t *testing.T) {
	b := &fakeBackend{power: 300}
	s := NewSampler(b, SamplerOptions{Now: fixedClock(t0), Holders: fakeHolders{podsOnNode}, Ledger: cost.NewLedger(staticBook{cost.Default()})})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0)))
	count := func() int {
		n, err := testutil.GatherAndCount(reg, "gputally_cost_eur_total", "gputally_gpu_hourly_cost_eur")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for k := range 2 {
		if err := s.Tick(context.Background(), t0.Add(time.Duration(k)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	before := count()
	b.failAll = errors.New("driver reset")
	if err := s.Tick(context.Background(), t0.Add(2*time.Second)); err == nil {
		t.Fatal("the failing sample did not fail")
	}
	if after := count(); before == 0 || after != before {
		t.Fatalf("%d ledger series while the backend fails, %d before; want them kept", after, before)
	}
}
