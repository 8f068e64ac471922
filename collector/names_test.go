package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/dcgmnames"
)

// h200Backend is one H200 whose readings are those of
// nvml/testdata/h200/metrics-busy.prom, a real H200 exported under the 4.8
// names (its violation counter in µs, as backends read it).
type h200Backend struct{}

func (h200Backend) Name() string { return "fake" }

func (h200Backend) Inventory(context.Context) (Inventory, error) {
	return Inventory{DriverVersion: "580.159.04", GPUs: []GPU{{
		UUID: "GPU-f92f91fe-e863-5296-2b52-f18115bea8ef", PCIBusID: "00000000:00:06.0", Model: "NVIDIA H200", MemoryTotalMiB: 143771,
	}}}, nil
}

func (h200Backend) Sample(_ context.Context, _ time.Time, s *Sample, _ ErrorCounter) error {
	v := &s.GPUs[0].Values
	for f, x := range map[Field]float64{
		GPUUtil: 100, MemCopyUtil: 23, FBUsed: 1010, FBFree: 142145, FBReserved: 615, GPUTemp: 64, MemoryTemp: 54,
		PowerUsage: 691.842, TotalEnergy: 3.748873e+07, SMClock: 1455, MemClock: 3201, XIDLast: 0, PCIeReplay: 0,
		ECCSBEVolatile: 0, ECCDBEVolatile: 0, PowerViolation: 4.6174166976e+07, ThermalViolation: 0,
		GREngineActive: 0.9982915483240103, SMActive: 0.9646394208628686, TensorActive: 0.9365552720975359, DRAMActive: 0.16026856463104644,
	} {
		v.Set(f, x)
	}
	s.GPUs[0].Healthy = true
	return nil
}

func (h200Backend) Close() error { return nil }

// TestNamingsOfOneReading exports the real H200's readings under both
// namings. The 4.8 values are the capture's (the violation counter in ns, as
// DCGM gives it: the capture's µs × 1000); the 4.10 values are converted by
// hand, and FB_CAPACITY_BYTES is the H200's 143,771 MiB in bytes.
func TestNamingsOfOneReading(t *testing.T) {
	s := NewSampler(h200Backend{}, SamplerOptions{Now: fixedClock(t0)})
	if err := s.Tick(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		names  dcgmnames.Naming
		driver string
		want   map[string]float64 // metric name → value
	}{
		{dcgmnames.Legacy, "DCGM_FI_DRIVER_VERSION", map[string]float64{
			"DCGM_FI_DEV_GPU_UTIL":                 100,
			"DCGM_FI_DEV_MEM_COPY_UTIL":            23,
			"DCGM_FI_DEV_FB_USED":                  1010,
			"DCGM_FI_DEV_FB_FREE":                  142145,
			"DCGM_FI_DEV_FB_RESERVED":              615,
			"DCGM_FI_DEV_GPU_TEMP":                 64,
			"DCGM_FI_DEV_MEMORY_TEMP":              54,
			"DCGM_FI_DEV_POWER_USAGE":              691.842,
			"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 3.748873e+07,
			"DCGM_FI_DEV_SM_CLOCK":                 1455,
			"DCGM_FI_DEV_MEM_CLOCK":                3201,
			"DCGM_FI_DEV_XID_ERRORS":               0,
			"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":      0,
			"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":        0,
			"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":        0,
			"DCGM_FI_DEV_POWER_VIOLATION":          4.6174166976e+10, // 46,174,166.976 µs × 1000 ns/µs
			"DCGM_FI_DEV_THERMAL_VIOLATION":        0,
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE":        0.9982915483240103,
			"DCGM_FI_PROF_SM_ACTIVE":               0.9646394208628686,
			"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":      0.9365552720975359,
			"DCGM_FI_PROF_DRAM_ACTIVE":             0.16026856463104644,
		}},
		{dcgmnames.Current, "DCGM_FI_SYSTEM_DRIVER_VERSION", map[string]float64{
			"DCGM_FI_DEV_GPU_UTIL_RATIO":                     1,                 // 100 % ÷ 100
			"DCGM_FI_DEV_MEMORY_UTIL_RATIO":                  0.23,              // 23 % ÷ 100
			"DCGM_FI_DEV_FB_USED_BYTES":                      1.05906176e+09,    // 1010 MiB × 1,048,576
			"DCGM_FI_DEV_FB_FREE_BYTES":                      1.4904983552e+11,  // 142,145 MiB × 1,048,576
			"DCGM_FI_DEV_FB_RESERVED_BYTES":                  6.4487424e+08,     // 615 MiB × 1,048,576
			"DCGM_FI_DEV_FB_CAPACITY_BYTES":                  1.50754820096e+11, // 143,771 MiB × 1,048,576
			"DCGM_FI_DEV_GPU_TEMP_CELSIUS":                   64,
			"DCGM_FI_DEV_MEMORY_TEMP_CELSIUS":                54,
			"DCGM_FI_DEV_BOARD_POWER_WATTS":                  691.842,
			"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL":            37488.73,  // 37,488,730 mJ ÷ 1000
			"DCGM_FI_DEV_SM_CLOCK_HERTZ":                     1.455e+09, // 1455 MHz × 10^6
			"DCGM_FI_DEV_MEMORY_CLOCK_HERTZ":                 3.201e+09, // 3201 MHz × 10^6
			"DCGM_FI_DEV_XID_ERROR":                          0,
			"DCGM_FI_DEV_PCIE_REPLAY_TOTAL":                  0,
			"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":                  0,
			"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":                  0,
			"DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL":   46.174166976, // 46,174,166.976 µs ÷ 10^6
			"DCGM_FI_DEV_GPU_THERMAL_THROTTLE_SECONDS_TOTAL": 0,
			"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO":              0.9982915483240103,
			"DCGM_FI_PROF_SM_UTIL_RATIO":                     0.9646394208628686,
			"DCGM_FI_PROF_TENSOR_UTIL_RATIO":                 0.9365552720975359,
			"DCGM_FI_PROF_DRAM_UTIL_RATIO":                   0.16026856463104644,
		}},
	} {
		t.Run(c.names.String(), func(t *testing.T) {
			col := NewCollector(s, Node{Hostname: "h200", Names: c.names}, fixedClock(t0))
			got := map[string]float64{}
			for _, mf := range col.Gather() {
				name := mf.GetName()
				if !strings.HasPrefix(name, "DCGM_") {
					continue
				}
				if f, _, _ := dcgmnames.ByName(name); (f.Type == dcgmnames.Counter) != (mf.GetType() == dto.MetricType_COUNTER) {
					t.Errorf("%s is a %s", name, mf.GetType())
				}
				for _, m := range mf.GetMetric() {
					if v := labelOf(m, c.driver); v != "580.159.04" {
						t.Errorf("%s: %s=%q", name, c.driver, v)
					}
					got[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
			for name, want := range c.want {
				if v, ok := got[name]; !ok || v != want {
					t.Errorf("%s = %v (written: %v), want %v", name, v, ok, want)
				}
			}
			for name := range got {
				if _, ok := c.want[name]; !ok {
					t.Errorf("%s written under %s", name, c.names)
				}
			}
		})
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, p := range m.GetLabel() {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}
