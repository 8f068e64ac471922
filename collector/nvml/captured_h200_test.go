package nvml

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/dcgmnames"
)

// The real H200 of testdata/h200 (README.md there): one H200 SXM, MIG
// disabled, driver 580.159.04, read through this backend by `gputally
// exporter --backend=nvml --no-attribution.enabled --hostname=h200-node`.
const (
	capturedDir      = "testdata/h200"
	capturedUUID     = "GPU-f92f91fe-e863-5296-2b52-f18115bea8ef"
	capturedDriver   = "580.159.04"
	capturedModel    = "NVIDIA H200" // nvidia-smi's name; go-nvml's mock says "NVIDIA H200 141GB HBM3e"
	capturedMemMiB   = 143771        // memory.total in query.csv; the mock has 144384
	capturedBusID    = "00000000:00:06.0"
	capturedHost     = "h200-node"
	builtInPUE       = 1.4  // cost/default_book.yaml: defaults.pue
	builtInEURKWh    = 0.30 // defaults.energy_eur_per_kwh
	builtInIdleBelow = 0.05 // idle.threshold
)

// exporterFamilies are the families of the capture that cmd/gputally's
// registry adds around the collector (its build, its config reloads, its web
// server, Go and the process): no backend makes them.
var exporterFamilies = []string{"gputally_build_info", "gputally_config_last_reload_success_timestamp_seconds",
	"gputally_config_last_reload_successful", "gputally_web_auth_failures_total"}

// newerFamilies are families the collector gained after the capture's build
// (8af43f8): the mock writes them, the capture cannot hold them.
var newerFamilies = []string{"gputally_energy_joules_total"}

// TestCapturedH200 holds the NVML backend, driven by go-nvml's dgxh200 mock
// server, to the real H200's capture. First the capture itself, against
// what nvidia-smi read at the same moments (units, not the backend's
// word for them):
//
//   - DCGM_FI_DEV_POWER_VIOLATION is in µs: idle, it is nvidia-smi -q's
//     "SW Power Capping : 30259810 us" (NVML's ns / 1000, to the µs);
//   - FB_USED + FB_FREE + FB_RESERVED is memory.total (143,771 MiB) within
//     1 MiB (each is rounded down to the MiB): idle 0 + 143,155 + 615, busy
//     1,010 + 142,145 + 615, both 143,770;
//   - GPU_UTIL and MEM_COPY_UTIL are utilization.gpu and .memory, in %;
//   - the energy component of gputally_gpu_hourly_cost_eur is the power,
//     W / 1000 × PUE 1.4 × 0.30 EUR/kWh (the built-in book): busy 691.842 W,
//     0.29057364 EUR/h; idle 79.437 W, 0.03336354 EUR/h;
//   - busy, DCGM_FI_PROF_GR_ENGINE_ACTIVE (GPM) is above the idle threshold
//     0.05; idle it is 0.
//
// Then the mock: a dgxh200 server with one GPU named and sized as the real
// one, each capture's readings fed to it in NVML's units (mW, mJ, ns, bytes,
// %), read twice (GPM needs two samples) with the built-in book's ledger.
// Its exposition under dcgm-exporter 4.8's names, the capture's, has the
// capture's families (those a backend makes), of the same types, every
// series with the same labels, and every device field and hourly cost
// component with the capture's value — the violation counters × 1000: the
// capture, from before the names were dcgmnames', wrote them in µs, the 4.8
// names now write DCGM's ns.
func TestCapturedH200(t *testing.T) {
	smi := readFile(t, "nvidia-smi.txt")
	capping := regexp.MustCompile(`SW Power Capping\s+:\s+(\d+) us`).FindStringSubmatch(smi)
	if capping == nil {
		t.Fatal("nvidia-smi.txt has no SW Power Capping line")
	}
	query := readQuery(t)
	for _, moment := range []string{"idle", "busy"} {
		t.Run(moment, func(t *testing.T) {
			real := readExposition(t, "metrics-"+moment+".prom")
			q := query[moment]
			field := func(fams map[string]*dto.MetricFamily, name string) float64 { return valueOf(only(t, fams, name, "")) }

			// The capture against nvidia-smi.
			if moment == "idle" {
				us, _ := strconv.ParseFloat(capping[1], 64)
				if v := field(real, "DCGM_FI_DEV_POWER_VIOLATION"); math.Floor(v) != us {
					t.Errorf("DCGM_FI_DEV_POWER_VIOLATION %v, want nvidia-smi's SW Power Capping %v us", v, us)
				}
			}
			if sum := field(real, "DCGM_FI_DEV_FB_USED") + field(real, "DCGM_FI_DEV_FB_FREE") + field(real, "DCGM_FI_DEV_FB_RESERVED"); math.Abs(sum-q["memory.total [MiB]"]) > 1 {
				t.Errorf("framebuffer used + free + reserved = %v MiB, want memory.total %v within 1 MiB", sum, q["memory.total [MiB]"])
			}
			if u, m := field(real, "DCGM_FI_DEV_GPU_UTIL"), field(real, "DCGM_FI_DEV_MEM_COPY_UTIL"); u != q["utilization.gpu [%]"] || m != q["utilization.memory [%]"] {
				t.Errorf("utilization %v %%, memory %v %%; nvidia-smi %v, %v", u, m, q["utilization.gpu [%]"], q["utilization.memory [%]"])
			}
			checkCostAndActivity(t, "the capture", real, moment)

			// The mock held to the capture.
			mock := mockExposition(t, real, dcgmnames.Legacy)
			checkCostAndActivity(t, "the mock", mock, moment)
			for name, want := range real {
				if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") || slices.Contains(exporterFamilies, name) {
					continue
				}
				got := mock[name]
				if got == nil {
					t.Errorf("%s: the real H200 has it, the mock does not", name)
					continue
				}
				if got.GetType() != want.GetType() {
					t.Errorf("%s: type %s, the real H200's %s", name, got.GetType(), want.GetType())
				}
				if g, w := labelSets(got), labelSets(want); !slices.Equal(g, w) {
					t.Errorf("%s: series\n%s\nthe real H200's\n%s", name, strings.Join(g, "\n"), strings.Join(w, "\n"))
				}
				if strings.HasPrefix(name, "DCGM_FI_") || name == "gputally_gpu_hourly_cost_eur" || name == "gputally_gpu_info" || name == "gputally_gpu_healthy" || name == "gputally_up" {
					for _, m := range want.GetMetric() {
						w, g := valueOf(m), valueOf(seriesOf(got, m))
						if name == "DCGM_FI_DEV_POWER_VIOLATION" || name == "DCGM_FI_DEV_THERMAL_VIOLATION" {
							w *= 1000 // µs → ns
						}
						if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
							t.Errorf("%s{%s} = %v, the real H200's %v", name, labelKey(m), g, w)
						}
					}
				}
			}
			for name := range mock {
				if real[name] == nil && !slices.Contains(newerFamilies, name) {
					t.Errorf("%s: the mock has it, the real H200 does not", name)
				}
			}
		})
	}
}

// TestCapturedH200UnderNewNames reads the busy capture's readings through
// the mock again and exports them under dcgm-exporter 4.10's names: every
// value is the capture's, converted by hand to the base unit.
func TestCapturedH200UnderNewNames(t *testing.T) {
	mock := mockExposition(t, readExposition(t, "metrics-busy.prom"), dcgmnames.Current)
	for name, want := range map[string]float64{
		"DCGM_FI_DEV_GPU_UTIL_RATIO":                     1,                  // 100 % ÷ 100
		"DCGM_FI_DEV_MEMORY_UTIL_RATIO":                  0.23,               // 23 % ÷ 100
		"DCGM_FI_DEV_FB_USED_BYTES":                      1_059_061_760,      // 1,010 MiB × 1,048,576
		"DCGM_FI_DEV_FB_FREE_BYTES":                      149_049_835_520,    // 142,145 MiB × 1,048,576
		"DCGM_FI_DEV_FB_RESERVED_BYTES":                  644_874_240,        // 615 MiB × 1,048,576
		"DCGM_FI_DEV_FB_CAPACITY_BYTES":                  150_754_820_096,    // memory.total 143,771 MiB × 1,048,576
		"DCGM_FI_DEV_SM_CLOCK_HERTZ":                     1_455_000_000,      // 1,455 MHz
		"DCGM_FI_DEV_MEMORY_CLOCK_HERTZ":                 3_201_000_000,      // 3,201 MHz
		"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL":            37_488.73,          // 37,488,730 mJ ÷ 1000
		"DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL":   46.174166976,       // 46,174,166.976 µs ÷ 10^6
		"DCGM_FI_DEV_GPU_THERMAL_THROTTLE_SECONDS_TOTAL": 0,                  // 0 µs
		"DCGM_FI_DEV_BOARD_POWER_WATTS":                  691.842,            // W stays W
		"DCGM_FI_DEV_GPU_TEMP_CELSIUS":                   64,                 // °C stays °C
		"DCGM_FI_DEV_MEMORY_TEMP_CELSIUS":                54,                 //
		"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO":              0.9982915483240103, // a ratio stays a ratio
	} {
		got := valueOf(only(t, mock, name, ""))
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
		if labelValue(only(t, mock, name, ""), dcgmnames.CurrentDriverLabel) != capturedDriver {
			t.Errorf("%s: no %s=%q", name, dcgmnames.CurrentDriverLabel, capturedDriver)
		}
	}
}

// checkCostAndActivity checks the energy component against the power, and
// the activity against the idle threshold, of one exposition.
func checkCostAndActivity(t *testing.T, what string, fams map[string]*dto.MetricFamily, moment string) {
	t.Helper()
	power := valueOf(only(t, fams, "DCGM_FI_DEV_POWER_USAGE", ""))
	energy := valueOf(only(t, fams, "gputally_gpu_hourly_cost_eur", "energy"))
	if want := power / 1000 * builtInPUE * builtInEURKWh; math.Abs(energy-want) > 1e-12 {
		t.Errorf("%s: energy %v EUR/h at %v W, want %v", what, energy, power, want)
	}
	gr := valueOf(only(t, fams, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", ""))
	if moment == "busy" && gr <= builtInIdleBelow || moment == "idle" && gr != 0 {
		t.Errorf("%s, %s: DCGM_FI_PROF_GR_ENGINE_ACTIVE %v; want above %v busy, 0 idle", what, moment, gr, builtInIdleBelow)
	}
}

// mockExposition is the exposition of the NVML backend over a dgxh200 mock
// server of one GPU, the real one's name, size and identity, reading what
// the capture real read.
func mockExposition(t *testing.T, real map[string]*dto.MetricFamily, names dcgmnames.Naming) map[string]*dto.MetricFamily {
	t.Helper()
	cfg := gpus.H200_SXM5_141GB
	cfg.Name, cfg.MemoryMB = capturedModel, capturedMemMiB
	srv := dgxh200.NewWithGPUs(cfg)
	srv.DriverVersion = capturedDriver
	n := newFakeNode(srv, nil)
	d := srv.Devices[0].(*server.Device)
	d.GetUUIDFunc = func() (string, gonvml.Return) { return capturedUUID, gonvml.SUCCESS }
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		p := gonvml.PciInfo{Bus: 0x00, Device: 0x06}
		copy(p.BusId[:], cChars(capturedBusID))
		return p, gonvml.SUCCESS
	}
	v := func(name string) float64 { return valueOf(only(t, real, name, "")) }
	// NVML's units: power mW, energy mJ, violation time ns, memory bytes,
	// utilization and GPM metrics %.
	n.gpus[0].set(func(h *hw) {
		h.util = gonvml.Utilization{Gpu: uint32(v("DCGM_FI_DEV_GPU_UTIL")), Memory: uint32(v("DCGM_FI_DEV_MEM_COPY_UTIL"))}
		h.mem = gonvml.Memory_v2{Total: capturedMemMiB * mib, Used: uint64(v("DCGM_FI_DEV_FB_USED")) * mib,
			Free: uint64(v("DCGM_FI_DEV_FB_FREE")) * mib, Reserved: uint64(v("DCGM_FI_DEV_FB_RESERVED")) * mib}
		h.temp, h.memTemp = uint32(v("DCGM_FI_DEV_GPU_TEMP")), uint32(v("DCGM_FI_DEV_MEMORY_TEMP"))
		h.powerMW = uint32(math.Round(v("DCGM_FI_DEV_POWER_USAGE") * 1000))
		h.energyMJ = uint64(v("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
		h.smMHz, h.memMHz = uint32(v("DCGM_FI_DEV_SM_CLOCK")), uint32(v("DCGM_FI_DEV_MEM_CLOCK"))
		h.sbe, h.dbe = uint64(v("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")), uint64(v("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"))
		h.replay = int(v("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"))
		h.powerViolNS = uint64(math.Round(v("DCGM_FI_DEV_POWER_VIOLATION") * 1000))
		h.thermalViolNS = uint64(math.Round(v("DCGM_FI_DEV_THERMAL_VIOLATION") * 1000))
		h.gpm = [4]float64{100 * v("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), 100 * v("DCGM_FI_PROF_SM_ACTIVE"),
			100 * v("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), 100 * v("DCGM_FI_PROF_DRAM_ACTIVE")}
	})
	b, err := New(srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	book, err := cost.NewStore(cost.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := collector.NewSampler(b, collector.SamplerOptions{Now: fixedClock(t0), Ledger: cost.NewLedger(book)})
	for _, at := range []time.Time{t0.Add(-time.Second), t0} {
		if err := s.Tick(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewCollector(s, collector.Node{Hostname: capturedHost, Names: names}, fixedClock(t0.Add(500*time.Millisecond))))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(capturedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readExposition(t *testing.T, name string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(readFile(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fams
}

// readQuery reads query.csv: per moment ("idle", "busy"), the GPU's row by
// column, its number without the unit.
func readQuery(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	var moment string
	var header []string
	sc := bufio.NewScanner(strings.NewReader(readFile(t, "query.csv")))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# "):
			moment, header = strings.TrimPrefix(line, "# "), nil
		case header == nil:
			header = strings.Split(line, ", ")
		case out[moment] == nil && strings.HasPrefix(line, "0, "):
			row := map[string]float64{}
			for i, cell := range strings.Split(line, ", ") {
				if x, err := strconv.ParseFloat(strings.Fields(cell)[0], 64); err == nil && i < len(header) {
					row[header[i]] = x
				}
			}
			out[moment] = row
		}
	}
	if out["idle"] == nil || out["busy"] == nil {
		t.Fatalf("query.csv: rows %v, want idle and busy", out)
	}
	return out
}

// only returns the one series of family name (with component, when set).
func only(t *testing.T, fams map[string]*dto.MetricFamily, name, component string) *dto.Metric {
	t.Helper()
	var found []*dto.Metric
	for _, m := range fams[name].GetMetric() {
		if component == "" || labelValue(m, "component") == component {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s (component %q): %d series, want 1", name, component, len(found))
	}
	return found[0]
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// labelKey is a series' labels as text, sorted by name.
func labelKey(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	slices.Sort(ls)
	return strings.Join(ls, ",")
}

// labelSets are the label sets of a family's series, sorted.
func labelSets(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		out = append(out, labelKey(m))
	}
	slices.Sort(out)
	return out
}

// seriesOf returns f's series with m's labels; nil when there is none.
func seriesOf(f *dto.MetricFamily, m *dto.Metric) *dto.Metric {
	for _, s := range f.GetMetric() {
		if labelKey(s) == labelKey(m) {
			return s
		}
	}
	return nil
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return math.NaN()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
