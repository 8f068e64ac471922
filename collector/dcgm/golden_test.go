package dcgm

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/collectortest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// t0 is the time of the golden node's second tick (the NVML golden's too).
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// dgxA100Node mirrors the NVML backend's golden DGX A100 node
// (collector/nvml/golden_test.go): the same UUIDs, PCI addresses, model, MIG
// layout and readings, expressed in DCGM's units, plus the profiling fields
// only DCGM has. DCGM's GPU ids run backwards against the NVML indexes.
func dgxA100Node() *fakeNode {
	const gpuMiB = 40960
	buses := []uint32{0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd}
	n := newFakeNode()
	for i := range 8 {
		id := uint(7 - i)
		e := gpuEnt(id)
		n.gpus = append(n.gpus, id)
		n.infos[id] = deviceInfo{
			UUID:          fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", 0xa0+i, i),
			PCIBusID:      fmt.Sprintf("00000000:%02X:00.0", buses[i]),
			Model:         "Mock NVIDIA A100-SXM4-40GB",
			DriverVersion: "550.54.15",
			FBTotalMiB:    gpuMiB,
		}
		used := int64(1024 * (i + 1))
		for _, v := range []fieldValue{
			i64(fiDevNVMLIndex, int64(i)), i64(fiDevMinorNumber, int64(i)), i64(fiDevMIGMode, 0),
			i64(fiDevGPUUtil, int64(10*i)), i64(fiDevMemCopyUtil, int64(5*i)),
			i64(fiDevFBUsed, used), i64(fiDevFBReserved, 512), i64(fiDevFBFree, gpuMiB-512-used),
			i64(fiDevGPUTemp, int64(40+i)), i64(fiDevMemoryTemp, int64(50+i)),
			f64(fiDevPowerUsage, 90+25.5*float64(i)), i64(fiDevTotalEnergy, 1_000_000_000+1_000_000*int64(i)),
			i64(fiDevSMClock, 1410), i64(fiDevMemClock, 1593), i64(fiDevXIDErrors, 0),
			i64(fiDevPCIeReplay, int64(i%3)), i64(fiDevECCSBEVolTotal, 0), i64(fiDevECCDBEVolTotal, 0),
			i64(fiDevPowerViolation, 1_000_000*int64(i)), i64(fiDevThermalViolation, 0),
			f64(fiProfGREngineActive, 0.1*float64(i)), f64(fiProfSMActive, 0.08*float64(i)),
			f64(fiProfTensorActive, 0.05*float64(i)), f64(fiProfDRAMActive, 0.02*float64(i)),
		} {
			n.set(e, v)
		}
	}
	// MIG: GPU 1 with 3g.20gb, 2g.10gb, 1g.5gb, 1g.5gb; GPU 6 with 7g.40gb.
	type gi struct {
		gpu, id, profile, slices int
		name                     string
		mib                      int64
	}
	layout := []gi{
		{1, 0, 2, 3, "3g.20gb", 19968}, {1, 1, 1, 2, "2g.10gb", 9856}, {1, 2, 0, 1, "1g.5gb", 4864}, {1, 3, 0, 1, "1g.5gb", 4864},
		{6, 0, 4, 7, "7g.40gb", 40192},
	}
	for k, g := range layout {
		parent := uint(7 - g.gpu)
		ent := uint(20 - k) // DCGM's GPU instance entity ids are node-wide
		n.addInstance(parent, ent, uint(g.id), uint(g.profile), uint(g.slices), g.name,
			fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", 0xa0+g.gpu, g.id), g.mib)
		used := 100 * int64(g.id+1)
		for _, v := range []fieldValue{
			i64(fiDevFBUsed, used), i64(fiDevFBFree, g.mib-used), i64(fiDevFBReserved, 0),
			f64(fiProfGREngineActive, 0.25*float64(g.id)), f64(fiProfSMActive, 0.2*float64(g.id)),
			f64(fiProfTensorActive, 0.125*float64(g.id)), f64(fiProfDRAMActive, 0.0625*float64(g.id)),
		} {
			n.set(giEnt(ent), v)
		}
		// DCGM does not report GPU utilization on a GPU in MIG mode.
		n.set(gpuEnt(parent), i64(fiDevGPUUtil, int64Blank))
		n.set(gpuEnt(parent), i64(fiDevMemCopyUtil, int64Blank))
	}
	return n
}

func TestGoldenExposition(t *testing.T) {
	n := dgxA100Node()
	clock := &fakeClock{t: t0.Add(-2 * time.Second)}
	b, err := newBackend(Options{Now: clock.Now}, n.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := collector.NewSampler(b, collector.SamplerOptions{Now: func() time.Time { return t0 }})
	if err := s.Tick(context.Background(), t0.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	// Between the ticks GPU 3 raises XID 31, as on the NVML golden node.
	n.xids = append(n.xids, fieldValue{entity: gpuEnt(4), field: fiDevXIDErrors, typ: typeInt64, i64: 31, ts: t0.Add(-time.Second / 2)})
	n.set(gpuEnt(4), i64(fiDevXIDErrors, 31))
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	for _, names := range collectortest.Namings {
		c := collector.NewCollector(s, collector.Node{Hostname: "dgx-a100-01", Names: names}, func() time.Time { return t0.Add(500 * time.Millisecond) })
		collectortest.CompareGolden(t, c, collectortest.GoldenFile("testdata", "dgxa100", names), *update)
	}
}

// TestGoldenMatchesNVML compares the DCGM golden with the NVML backend's golden
// of the same node: every series both backends export must carry the same
// labels and value, and the DCGM backend must export every device metric the
// NVML backend does.
func TestGoldenMatchesNVML(t *testing.T) {
	dcgm := readExposition(t, filepath.Join("testdata", "dgxa100.golden.prom"))
	nvml := readExposition(t, filepath.Join("..", "nvml", "testdata", "dgxa100.golden.prom"))

	// Metrics whose labels or values name the backend or its signal, not the device.
	differ := map[string]bool{
		"gputally_up": true, "gputally_sample_age_seconds": true, "gputally_sample_duration_seconds": true,
	}
	compared := 0
	for _, name := range slices.Sorted(maps.Keys(nvml)) {
		if differ[name] {
			continue
		}
		want, got := nvml[name], dcgm[name]
		if got == nil {
			if strings.HasPrefix(name, "DCGM_FI_DEV_") || name == "gputally_gpu_healthy" || name == "gputally_gpu_info" {
				t.Errorf("%s: exported by the NVML backend, not by the DCGM backend", name)
			}
			continue
		}
		if name == "gputally_gpu_info" {
			// idle_signal differs by design: DCGM supplies DCGM_FI_PROF_GR_ENGINE_ACTIVE.
			want, got = dropLabel(want, "idle_signal"), dropLabel(got, "idle_signal")
		}
		for _, key := range slices.Sorted(maps.Keys(want)) {
			g, ok := got[key]
			switch {
			case !ok:
				t.Errorf("%s{%s}: in the NVML golden only", name, key)
			case g != want[key]:
				t.Errorf("%s{%s} = %v; NVML has %v", name, key, g, want[key])
			default:
				compared++
			}
		}
		for key := range got {
			if _, ok := want[key]; !ok {
				t.Errorf("%s{%s}: in the DCGM golden only", name, key)
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d series compared; the goldens hardly overlap", compared)
	}
}

// readExposition parses a text exposition into metric name → labels → value.
func readExposition(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]map[string]float64{}
	for name, mf := range mfs {
		series := map[string]float64{}
		for _, m := range mf.GetMetric() {
			series[labelKey(m.GetLabel())] = metricValue(m)
		}
		out[name] = series
	}
	return out
}

func labelKey(ls []*dto.LabelPair) string {
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// dropLabel removes one label from every key of series.
func dropLabel(series map[string]float64, label string) map[string]float64 {
	out := map[string]float64{}
	for key, v := range series {
		var keep []string
		for part := range strings.SplitSeq(key, ",") {
			if !strings.HasPrefix(part, label+"=") {
				keep = append(keep, part)
			}
		}
		out[strings.Join(keep, ",")] = v
	}
	return out
}
