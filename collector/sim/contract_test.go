package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/collector"
)

// dcgmExporterFamilies are the DCGM-named families of the metric contract
// (docs/metrics.md), with whether dcgm-exporter and gputally export them per
// MIG instance too.
var dcgmExporterFamilies = map[string]bool{
	"DCGM_FI_DEV_GPU_UTIL": false, "DCGM_FI_DEV_MEM_COPY_UTIL": false,
	"DCGM_FI_DEV_FB_USED": true, "DCGM_FI_DEV_FB_FREE": true, "DCGM_FI_DEV_FB_RESERVED": true,
	"DCGM_FI_DEV_GPU_TEMP": false, "DCGM_FI_DEV_MEMORY_TEMP": false,
	"DCGM_FI_DEV_POWER_USAGE": false, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": false,
	"DCGM_FI_DEV_SM_CLOCK": false, "DCGM_FI_DEV_MEM_CLOCK": false,
	"DCGM_FI_DEV_XID_ERRORS": false, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": false,
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": false, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": false,
	"DCGM_FI_DEV_POWER_VIOLATION": false, "DCGM_FI_DEV_THERMAL_VIOLATION": false,
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE": true, "DCGM_FI_PROF_SM_ACTIVE": true,
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": true, "DCGM_FI_PROF_DRAM_ACTIVE": true,
}

// dcgmExporterLabels are the label sets of a DCGM_* series as dcgm-exporter 4.8
// (4.8.3 and later) writes them, names and case as written: a GPU's identity
// and driver, a MIG instance's GPU instance, and the pod labels of the
// container the kubelet maps the device to. hostname is `Hostname` up to 4.8.2.
func dcgmExporterLabels(hostname string) (gpu, mig, pod []string) {
	gpu = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", hostname, "DCGM_FI_DRIVER_VERSION"}
	return gpu, []string{"GPU_I_PROFILE", "GPU_I_ID"}, []string{"container", "namespace", "pod"}
}

// TestDCGMExporterLabelContract holds every DCGM-named family of the built-in
// node (whole GPUs, MIG instances, exclusive holders) to dcgm-exporter 4.8's
// label sets, in both spellings of the node label.
func TestDCGMExporterLabelContract(t *testing.T) {
	s, host, clock := defaultScenarioHour(t)
	for _, tc := range []struct {
		node  collector.Node
		label string
	}{
		{collector.Node{Hostname: host}, "hostname"},
		{collector.Node{Hostname: host, LegacyHostnameLabel: true}, "Hostname"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			gpu, mig, pod := dcgmExporterLabels(tc.label)
			allowed := map[bool][]string{ // per MIG instance or not → label sets, sorted and joined
				false: {key(gpu), key(gpu, pod)},
				true:  {key(gpu), key(gpu, pod), key(gpu, mig), key(gpu, mig, pod)},
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(collector.NewCollector(s, tc.node, clock.Now))
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			sets := map[string]int{}
			for _, f := range families {
				onMIG, ok := dcgmExporterFamilies[f.GetName()]
				if !ok {
					if strings.HasPrefix(f.GetName(), "DCGM_") {
						t.Errorf("%s: not a family of the contract", f.GetName())
					}
					continue
				}
				seen[f.GetName()] = true
				for _, m := range f.GetMetric() {
					var names []string
					for _, p := range m.GetLabel() {
						names = append(names, p.GetName())
					}
					k := key(names)
					if !slices.Contains(allowed[onMIG], k) {
						t.Errorf("%s has labels %s; dcgm-exporter 4.8 writes one of %q", f.GetName(), k, allowed[onMIG])
					}
					sets[k]++
				}
			}
			for name := range dcgmExporterFamilies {
				if !seen[name] {
					t.Errorf("%s: no series on the built-in node", name)
				}
			}
			for _, want := range allowed[true] {
				if sets[want] == 0 {
					t.Errorf("no series with labels %s: the fixture does not cover that label set", want)
				}
			}
		})
	}
}

// key is the sorted, comma-joined union of label name lists.
func key(lists ...[]string) string {
	all := slices.Concat(lists...)
	slices.Sort(all)
	return strings.Join(all, ",")
}
