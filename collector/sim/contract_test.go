package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/dcgmnames"
)

// dcgmExporterFamilies are the DCGM-named families of the metric contract
// (docs/metrics.md), with whether dcgm-exporter and gputally export them per
// MIG instance too. FB capacity is written under 4.10's names only.
var dcgmExporterFamilies = map[dcgmnames.Family]bool{
	dcgmnames.GPUUtil: false, dcgmnames.MemCopyUtil: false,
	dcgmnames.FBUsed: true, dcgmnames.FBFree: true, dcgmnames.FBReserved: true, dcgmnames.FBCapacity: true,
	dcgmnames.GPUTemp: false, dcgmnames.MemoryTemp: false,
	dcgmnames.Power: false, dcgmnames.Energy: false,
	dcgmnames.SMClock: false, dcgmnames.MemClock: false,
	dcgmnames.XID: false, dcgmnames.PCIeReplay: false,
	dcgmnames.ECCSBEVolatile: false, dcgmnames.ECCDBEVolatile: false,
	dcgmnames.PowerViolation: false, dcgmnames.ThermalViolation: false,
	dcgmnames.GREngineActive: true, dcgmnames.SMActive: true,
	dcgmnames.TensorActive: true, dcgmnames.DRAMActive: true,
}

// dcgmExporterLabels are the label sets of a DCGM_* series as dcgm-exporter
// (4.8.3 and later) writes them, names and case as written: a GPU's identity
// and driver (the label DCGM_FI_DRIVER_VERSION up to 4.8,
// DCGM_FI_SYSTEM_DRIVER_VERSION from 4.9), a MIG instance's GPU instance, and
// the pod labels of the container the kubelet maps the device to. hostname is
// `Hostname` up to 4.8.2.
func dcgmExporterLabels(hostname string, names dcgmnames.Naming) (gpu, mig, pod []string) {
	gpu = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", hostname, names.DriverLabel()}
	return gpu, []string{"GPU_I_PROFILE", "GPU_I_ID"}, []string{"container", "namespace", "pod"}
}

// TestDCGMExporterLabelContract holds every DCGM-named family of the built-in
// node (whole GPUs, MIG instances, exclusive holders) to dcgm-exporter's label
// sets, under 4.10's and 4.8's names and in both spellings of the node label.
func TestDCGMExporterLabelContract(t *testing.T) {
	s, host, clock := defaultScenarioHour(t)
	for _, names := range []dcgmnames.Naming{dcgmnames.Current, dcgmnames.Legacy} {
		families := map[string]bool{}
		for f, onMIG := range dcgmExporterFamilies {
			if f != dcgmnames.FBCapacity || names == dcgmnames.Current {
				families[f.Name(names)] = onMIG
			}
		}
		for _, tc := range []struct {
			node  collector.Node
			label string
		}{
			{collector.Node{Hostname: host, Names: names}, "hostname"},
			{collector.Node{Hostname: host, LegacyHostnameLabel: true, Names: names}, "Hostname"},
		} {
			t.Run(names.String()+"/"+tc.label, func(t *testing.T) {
				checkLabelContract(t, collector.NewCollector(s, tc.node, clock.Now), families, tc.label, names)
			})
		}
	}
}

// checkLabelContract fails t when a DCGM_* family c writes is not one of
// families (name → per MIG instance too), has a label set dcgm-exporter does
// not write, or is missing; or when a label set has no series at all.
func checkLabelContract(t *testing.T, c *collector.Collector, families map[string]bool, hostname string, names dcgmnames.Naming) {
	gpu, mig, pod := dcgmExporterLabels(hostname, names)
	allowed := map[bool][]string{ // per MIG instance or not → label sets, sorted and joined
		false: {key(gpu), key(gpu, pod)},
		true:  {key(gpu), key(gpu, pod), key(gpu, mig), key(gpu, mig, pod)},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sets := map[string]int{}
	for _, f := range gathered {
		onMIG, ok := families[f.GetName()]
		if !ok {
			if strings.HasPrefix(f.GetName(), "DCGM_") {
				t.Errorf("%s: not a family of the contract", f.GetName())
			}
			continue
		}
		seen[f.GetName()] = true
		for _, m := range f.GetMetric() {
			var labels []string
			for _, p := range m.GetLabel() {
				labels = append(labels, p.GetName())
			}
			k := key(labels)
			if !slices.Contains(allowed[onMIG], k) {
				t.Errorf("%s has labels %s; dcgm-exporter %s writes one of %q", f.GetName(), k, names, allowed[onMIG])
			}
			sets[k]++
		}
	}
	for name := range families {
		if !seen[name] {
			t.Errorf("%s: no series on the built-in node", name)
		}
	}
	for _, want := range allowed[true] {
		if sets[want] == 0 {
			t.Errorf("no series with labels %s: the fixture does not cover that label set", want)
		}
	}
}

// key is the sorted, comma-joined union of label name lists.
func key(lists ...[]string) string {
	all := slices.Concat(lists...)
	slices.Sort(all)
	return strings.Join(all, ",")
}
