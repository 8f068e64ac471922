package collector

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector/collectortest"
	"github.com/gputally/gputally/cost"
)

// ledgerTotals returns the latest snapshot's ledger series by device, holder
// pod and state ("GPU-aaaa/train-0/busy"), in seconds.
func ledgerTotals(t *testing.T, s *Sampler) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, tot := range s.Snapshot().Totals {
		m[tot.Device+"/"+tot.Holder.Pod+"/"+tot.State.String()] = tot.Seconds
	}
	return m
}

func checkSeconds(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-9*math.Max(w, 1) {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}

// TestLedgerLostFromTheTickThatSeesIt: GPU-aaaa, held by a busy pod, is seen
// lost by the sample at t0+2s. The interval that sample closes is lost — the
// loss happened within it, and nothing after a loss is busy — charged at
// capital only, though the last power read was 412.5 W.
func TestLedgerLostFromTheTickThatSeesIt(t *testing.T) {
	b := &fakeBackend{power: 412.5}
	s := NewSampler(b, SamplerOptions{Interval: time.Second, Now: fixedClock(t0), Holders: fakeHolders{podsOnNode},
		Ledger: cost.NewLedger(staticBook{cost.Default()})})
	ctx := context.Background()
	for k, lost := range []bool{false, false, true, true} {
		b.lost = lost
		if err := s.Tick(ctx, t0.Add(time.Duration(k)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	checkSeconds(t, ledgerTotals(t, s), map[string]float64{
		"GPU-aaaa/train-0/busy": 1, "GPU-aaaa//lost": 2, "GPU-aaaa/train-0/idle": 0,
	})
	for _, tot := range s.Snapshot().Totals {
		if tot.Device == "GPU-aaaa" && tot.State == cost.Lost {
			if want := 2 * 30000.0 / 26280 / 3600; math.Abs(tot.EUR-want) > 1e-12 {
				t.Errorf("lost EUR = %v, want %v (capital only)", tot.EUR, want)
			}
		}
	}
	for _, r := range s.Snapshot().Rates {
		if r.UUID == "GPU-aaaa" && r.Rate.Energy != 0 {
			t.Errorf("a lost GPU's energy rate = %v, want 0", r.Rate.Energy)
		}
	}
}

// TestLedgerBackendGapCapped: sampling at 1 s fails from t0+2s to t0+599s.
// The sample at t0+600s charges 2 s at its readings; the other 597 s of the
// 599 s gap are unknown: on the series of holders present both at the last
// good sample and at recovery, the rest with no holder. During the outage
// train-0 ended and train-1 took GPU-aaaa, and nb-b left MIG-2222 to nb-c:
// neither the pod that ended nor the one that started is charged for the gap.
// GPU-bbbb is split into two 3g.40gb: the free compute slice has no memory
// slice left, so with mig_weight compute each instance takes 3/7 + 1/7 × 3/6
// = 1/2 and the GPU has no unallocated part (by plain weight: 3/7 each, 1/7
// unallocated).
func TestLedgerBackendGapCapped(t *testing.T) {
	b := &fakeBackend{power: 300, mig: []MIGInstance{
		{UUID: "MIG-1111", GPUInstanceID: 2, Profile: "3g.40gb", ComputeSlices: 3, MemorySlices: 4},
		{UUID: "MIG-2222", GPUInstanceID: 9, Profile: "3g.40gb", ComputeSlices: 3, MemorySlices: 4},
	}}
	holders := &fakeHolders{podsOnNode}
	s := NewSampler(b, SamplerOptions{Interval: time.Second, Now: fixedClock(t0), Holders: holders,
		Ledger: cost.NewLedger(staticBook{cost.Default()})})
	recovered := &attribution.Snapshot{Up: true, LastSuccess: t0.Add(599 * time.Second), Holders: map[string][]attribution.Holder{
		"GPU-aaaa": {{Namespace: "ml", Pod: "train-1", Container: "trainer", Sharing: attribution.Exclusive, Replicas: 1, Share: 1}},
		"MIG-1111": podsOnNode.Holders["MIG-1111"],
		"MIG-2222": {podsOnNode.Holders["MIG-2222"][0],
			{Namespace: "dev", Pod: "nb-c", Container: "jupyter", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.5}},
	}}
	ctx := context.Background()
	for k := range 601 {
		b.failAll = nil
		if k >= 2 && k < 600 {
			b.failAll = errors.New("driver reset")
		}
		if k == 600 {
			holders.snap = recovered
		}
		_ = s.Tick(ctx, t0.Add(time.Duration(k)*time.Second))
	}
	got := ledgerTotals(t, s)
	checkSeconds(t, got, map[string]float64{
		"GPU-aaaa/train-1/busy": 2,
		"GPU-aaaa//unknown":     597,
		"GPU-aaaa//unallocated": 0,
		// GPU-bbbb: its one free compute slice is stranded.
		"GPU-bbbb//unallocated":  0,
		"MIG-1111/llm-0/busy":    3 * 0.5,
		"MIG-1111/llm-0/unknown": 597 * 0.5,
		// MIG-2222: nb-a held half at both ends; nb-b's and nb-c's halves
		// are unknown with no holder.
		"MIG-2222/nb-a/unknown": 597 * 0.5 / 2,
		"MIG-2222/nb-a/busy":    3 * 0.5 / 2,
		"MIG-2222/nb-c/busy":    2 * 0.5 / 2,
		"MIG-2222//unknown":     597 * 0.5 / 2,
	})
	// The holders that ended in the gap left with it (retention 5 min); those
	// that started have no unknown series.
	for _, k := range []string{"GPU-aaaa/train-0/busy", "MIG-2222/nb-b/busy", "GPU-aaaa/train-1/unknown", "MIG-2222/nb-c/unknown", "GPU-bbbb//unknown"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %v, want no such series", k, v)
		}
	}
}

// TestLedgerAttributionOffIsUnknown: without a holder source, held or not,
// a whole GPU's time is unknown, never unallocated.
func TestLedgerAttributionOffIsUnknown(t *testing.T) {
	s := NewSampler(&fakeBackend{power: 300}, SamplerOptions{Interval: time.Hour, Now: fixedClock(t0),
		Ledger: cost.NewLedger(staticBook{cost.Default()})})
	for k := range 2 {
		if err := s.Tick(context.Background(), t0.Add(time.Duration(k)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	got := ledgerTotals(t, s)
	checkSeconds(t, got, map[string]float64{
		"GPU-aaaa//unknown": 3600, "GPU-aaaa//unallocated": 0,
		"MIG-1111//unknown": 3600 * 3 / 7.0, "MIG-2222//unknown": 3600 / 7.0,
		"GPU-bbbb//unallocated": 3600 * 3 / 7.0, // slices in no instance
	})
}

// TestLedgerUnmappedDRAIsUnknown: the kubelet answers and MIG-1111 is held,
// but a DRA allocation of the node could not be mapped, so some device is held
// by someone unknown: GPU-aaaa (no mapped holder), the unheld MIG-2222 and
// GPU-bbbb's slices in no instance (the allocation may be a dynamic MIG
// instance the inventory lacks) are unknown, not unallocated. With every
// allocation mapped the same holders leave them unallocated. The kubelet
// advertises every device, so only the unmapped allocation makes them unknown.
func TestLedgerUnmappedDRAIsUnknown(t *testing.T) {
	held := map[string][]attribution.Holder{"MIG-1111": podsOnNode.Holders["MIG-1111"]}
	offered := map[string]int{"GPU-aaaa": 1, "MIG-1111": 1, "MIG-2222": 1}
	unmapped := []attribution.DRAAllocation{{Namespace: "lab", Pod: "nb-0", Container: "c", Claim: "gpu",
		Device: attribution.DRADeviceRef{Driver: attribution.DefaultDRADriver, Pool: "node-a", Device: "gpu-0"},
		Reason: "not in the node's ResourceSlices"}}
	for _, tc := range []struct {
		name     string
		unmapped []attribution.DRAAllocation
		want     map[string]float64
	}{
		{"an unmapped DRA allocation", unmapped, map[string]float64{
			"GPU-aaaa//unknown": 3600, "GPU-aaaa//unallocated": 0,
			"MIG-2222//unknown": 3600 / 7.0, "MIG-2222//unallocated": 0,
			"GPU-bbbb//unknown": 3600 * 3 / 7.0, "GPU-bbbb//unallocated": 0,
		}},
		{"every allocation mapped", nil, map[string]float64{
			"GPU-aaaa//unallocated": 3600, "MIG-2222//unallocated": 3600 / 7.0, "GPU-bbbb//unallocated": 3600 * 3 / 7.0,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &attribution.Snapshot{Up: true, LastSuccess: t0, Holders: held, Replicas: offered, UnmappedDRA: tc.unmapped}
			s := NewSampler(&fakeBackend{power: 400}, SamplerOptions{Interval: time.Hour, Now: fixedClock(t0),
				Holders: fakeHolders{snap}, Ledger: cost.NewLedger(staticBook{cost.Default()})})
			for k := range 2 {
				if err := s.Tick(context.Background(), t0.Add(time.Duration(k)*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			got := ledgerTotals(t, s)
			checkSeconds(t, got, tc.want)
			if tc.unmapped == nil && got["GPU-aaaa//unknown"]+got["MIG-2222//unknown"]+got["GPU-bbbb//unknown"] != 0 {
				t.Errorf("unknown time with every allocation mapped: %v", got)
			}
		})
	}
}

// TestLedgerUnadvertisedIsUnknown: the kubelet answers and nobody holds
// anything, but only what the node advertises is positively free. GPU-aaaa is
// unallocated when the kubelet lists it for a tracked resource or the
// ResourceSlices publish it, unknown when neither does (a device plugin not
// registered yet, an untracked resource name). On MIG GPU-bbbb, MIG-2222 is
// unallocated when published itself, or when a dynamic MIG device without a
// UUID (published as its GPU) may become it; unknown otherwise. MIG-1111 is
// held, hence advertised, throughout.
func TestLedgerUnadvertisedIsUnknown(t *testing.T) {
	held := map[string][]attribution.Holder{"MIG-1111": podsOnNode.Holders["MIG-1111"]}
	for _, tc := range []struct {
		name      string
		replicas  map[string]int
		published map[string]bool
		want      map[string]float64
	}{
		{"nothing advertised", nil, nil, map[string]float64{
			"GPU-aaaa//unknown": 3600, "GPU-aaaa//unallocated": 0,
			"MIG-2222//unknown": 3600 / 7.0, "MIG-2222//unallocated": 0,
		}},
		{"kubelet advertises GPU-aaaa only", map[string]int{"GPU-aaaa": 1}, nil, map[string]float64{
			"GPU-aaaa//unallocated": 3600, "MIG-2222//unknown": 3600 / 7.0, "MIG-2222//unallocated": 0,
		}},
		{"slices publish both", nil, map[string]bool{"GPU-aaaa": true, "MIG-2222": true}, map[string]float64{
			"GPU-aaaa//unallocated": 3600, "MIG-2222//unallocated": 3600 / 7.0,
		}},
		{"slices publish GPU-bbbb's dynamic MIG", nil, map[string]bool{"GPU-bbbb": true}, map[string]float64{
			"GPU-aaaa//unknown": 3600, "GPU-aaaa//unallocated": 0, "MIG-2222//unallocated": 3600 / 7.0,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &attribution.Snapshot{Up: true, LastSuccess: t0, Holders: held, Replicas: tc.replicas, DRAPublished: tc.published}
			s := NewSampler(&fakeBackend{power: 400}, SamplerOptions{Interval: time.Hour, Now: fixedClock(t0),
				Holders: fakeHolders{snap}, Ledger: cost.NewLedger(staticBook{cost.Default()})})
			for k := range 2 {
				if err := s.Tick(context.Background(), t0.Add(time.Duration(k)*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			checkSeconds(t, ledgerTotals(t, s), tc.want)
			// docs/cost.md: the H100's hour at 400 W, 1.309553 EUR, in
			// whichever state the seconds went to.
			for _, tot := range s.Snapshot().Totals {
				if tot.Device == "GPU-aaaa" && tot.Seconds > 0 && math.Abs(tot.EUR-1.309553) > 1e-6 {
					t.Errorf("GPU-aaaa %s = %.6f EUR, want 1.309553", tot.State, tot.EUR)
				}
			}
		})
	}
}

// TestLoneTimeSlicedHolderPaysByActivity: one pod holds one of four replicas
// and process accounting measures it at 30 %: it pays 0.30 + 0.70 × 1/4.
func TestLoneTimeSlicedHolderPaysByActivity(t *testing.T) {
	attr := &attribution.Snapshot{Up: true, Holders: map[string][]attribution.Holder{
		"GPU-ts": {{Namespace: "dev", Pod: "nb", Container: "c", Sharing: attribution.TimeSlicing, Replicas: 1, Share: 0.25}},
	}}
	usage := []DeviceUsage{{UUID: "GPU-ts", Holders: []HolderUsage{{Namespace: "dev", Pod: "nb", Container: "c", Utilization: 0.30}}}}
	got := holdersOf(nil, attr, "GPU-ts", usage)
	if len(got) != 1 || math.Abs(got[0].Share-0.475) > 1e-12 || got[0].Activity != 0.30 {
		t.Fatalf("holders = %+v, want one with share 0.475 and activity 0.30", got)
	}
	// Without process accounting the share is the replica share.
	if got := holdersOf(nil, attr, "GPU-ts", nil); len(got) != 1 || got[0].Share != 0.25 {
		t.Fatalf("holders without usage = %+v, want share 0.25", got)
	}
}

func TestHostableSlices(t *testing.T) {
	inst := func(p string, c, m int) MIGInstance {
		return MIGInstance{Profile: p, ComputeSlices: c, MemorySlices: m}
	}
	tests := []struct {
		name string
		gpu  GPU
		want cost.HostableSlices
	}{
		{"H100 2× 3g.40gb: the free compute slice is stranded",
			GPU{Model: "NVIDIA H100 80GB HBM3", MIGEnabled: true, Instances: []MIGInstance{inst("3g.40gb", 3, 4), inst("3g.40gb", 3, 4)}},
			cost.HostableSlices{Known: true}},
		{"H100 3g.40gb + 1g.10gb: 3 compute, 3 memory hostable",
			GPU{Model: "NVIDIA H100 80GB HBM3", MIGEnabled: true, Instances: []MIGInstance{inst("3g.40gb", 3, 4), inst("1g.10gb", 1, 1)}},
			cost.HostableSlices{Known: true, Compute: 3, Memory: 3}},
		{"no table for the model", GPU{Model: "NVIDIA GH200 480GB", MIGEnabled: true}, cost.HostableSlices{}},
		{"a profile the table lacks", GPU{Model: "NVIDIA H100 80GB HBM3", MIGEnabled: true, Instances: []MIGInstance{inst("5g.50gb", 5, 5)}}, cost.HostableSlices{}},
		{"not in MIG mode", GPU{Model: "NVIDIA H100 80GB HBM3"}, cost.HostableSlices{}},
	}
	for _, tt := range tests {
		if got := hostableSlices(tt.gpu); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// reconfigBackend is fakeBackend whose GPU 1 is reconfigured, once
// reconfigure is set, to its first instance only.
type reconfigBackend struct {
	fakeBackend
	reconfigure, reread bool
}

func (r *reconfigBackend) Inventory(ctx context.Context) (Inventory, error) {
	inv, err := r.fakeBackend.Inventory(ctx)
	if r.reconfigure {
		r.reread = true
		inv.GPUs[1].Instances = inv.GPUs[1].Instances[:1]
	}
	return inv, err
}

func (r *reconfigBackend) Sample(ctx context.Context, now time.Time, s *Sample, errs ErrorCounter) error {
	switch {
	case r.reconfigure && !r.reread:
		return ErrInventoryChanged
	case r.reread:
		s.GPUs[1].Values.Set(GREngineActive, 0.5)
		s.GPUs[1].Instances[0].Set(GREngineActive, 0.5)
		return nil
	}
	return r.fakeBackend.Sample(ctx, now, s, errs)
}

// TestRetainedInstanceKeepsItsLabels: after a MIG reconfiguration removes
// MIG-2222, its holders' series stay exported, with the instance's old
// identity labels, for the retention window, then go.
func TestRetainedInstanceKeepsItsLabels(t *testing.T) {
	b := &reconfigBackend{fakeBackend: fakeBackend{power: 300}}
	s := NewSampler(b, SamplerOptions{Interval: time.Second, Now: fixedClock(t0), Holders: fakeHolders{podsOnNode},
		Ledger: cost.NewLedger(staticBook{cost.Default()}, cost.WithRetention(time.Minute))})
	c := NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	series := func() string {
		text, err := collectortest.Text(reg)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "gputally_gpu_seconds_total{") && strings.Contains(line, `pod="nb-a"`) {
				out.WriteString(line + "\n")
			}
		}
		return out.String()
	}
	ctx := context.Background()
	for k := range 3 {
		if err := s.Tick(ctx, t0.Add(time.Duration(k)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	before := series()
	if !strings.Contains(before, `GPU_I_PROFILE="1g.10gb"`) {
		t.Fatalf("no series of nb-a on the 1g.10gb instance before the reconfiguration:\n%s", before)
	}
	b.reconfigure = true
	for k := 3; k < 62; k++ {
		if err := s.Tick(ctx, t0.Add(time.Duration(k)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := series(); got != before {
			t.Fatalf("tick %d: nb-a's retained series changed:\n%s\nwant\n%s", k, got, before)
		}
	}
	if err := s.Tick(ctx, t0.Add(62*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := series(); got != "" {
		t.Fatalf("nb-a's series outlived the retention window:\n%s", got)
	}
}

// layoutBackend is fakeBackend whose GPU 1 changes its MIG layout when mig is
// set: the next Sample reports the change, as a real backend does.
type layoutBackend struct {
	fakeBackend
	changed bool
}

func (b *layoutBackend) relayout(mig []MIGInstance) { b.mig, b.changed = mig, true }

func (b *layoutBackend) Sample(ctx context.Context, now time.Time, s *Sample, errs ErrorCounter) error {
	if b.changed {
		b.changed = false
		return ErrInventoryChanged
	}
	return b.fakeBackend.Sample(ctx, now, s, errs)
}

// TestRetainedAcrossReconfigurationsBetweenScrapes: MIG-3333 is created, held
// by nb-c and removed again by two reconfigurations between two scrapes. Its
// ledger series are exported at the second scrape with the labels it had,
// although no scrape ever saw it in an inventory.
func TestRetainedAcrossReconfigurationsBetweenScrapes(t *testing.T) {
	base := []MIGInstance{
		{UUID: "MIG-1111", GPUInstanceID: 2, Profile: "3g.40gb", ComputeSlices: 3, MemorySlices: 4},
		{UUID: "MIG-2222", GPUInstanceID: 9, Profile: "1g.10gb", ComputeSlices: 1, MemorySlices: 1},
	}
	b := &layoutBackend{fakeBackend: fakeBackend{power: 300, mig: base}}
	holders := &attribution.Snapshot{Up: true, LastSuccess: t0, Holders: map[string][]attribution.Holder{
		"MIG-3333": {{Namespace: "dev", Pod: "nb-c", Container: "jupyter", Resource: "nvidia.com/mig-1g.10gb", Sharing: attribution.MIG, Replicas: 1, Share: 1}},
	}}
	s := NewSampler(b, SamplerOptions{Interval: time.Second, Now: fixedClock(t0), Holders: fakeHolders{holders},
		Ledger: cost.NewLedger(staticBook{cost.Default()})})
	c := NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0))
	ctx := context.Background()
	tick := 0
	ticks := func(n int) {
		for range n {
			if err := s.Tick(ctx, t0.Add(time.Duration(tick)*time.Second)); err != nil {
				t.Fatal(err)
			}
			tick++
		}
	}
	ticks(2)
	if _, err := collectortest.Text(gathererOf(c)); err != nil { // the first scrape: MIG-3333 does not exist
		t.Fatal(err)
	}
	b.relayout(append(slices.Clone(base), MIGInstance{UUID: "MIG-3333", GPUInstanceID: 10, Profile: "1g.10gb", ComputeSlices: 1, MemorySlices: 1}))
	ticks(3)
	b.relayout(base)
	ticks(2)
	text, err := collectortest.Text(gathererOf(c))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "gputally_gpu_seconds_total{") && strings.Contains(line, `pod="nb-c"`) {
			got = append(got, line)
		}
	}
	if len(got) == 0 {
		t.Fatalf("nb-c's retained series on MIG-3333 are not exported:\n%s", text)
	}
	for _, l := range got {
		if !strings.Contains(l, `UUID="GPU-bbbb"`) || !strings.Contains(l, `GPU_I_ID="10"`) || !strings.Contains(l, `GPU_I_PROFILE="1g.10gb"`) {
			t.Errorf("series without MIG-3333's identity: %s", l)
		}
	}
}

// gathererOf is a registry holding only c.
func gathererOf(c *Collector) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}
