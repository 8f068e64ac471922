package collector

import (
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/dcgmnames"
)

// deviceMetric describes how one Field is exported: as family, named and in
// the unit of the naming the Collector writes (dcgmnames).
type deviceMetric struct {
	field  Field
	family dcgmnames.Family
	// legacyHelp is the HELP text of the legacy name, as the reference
	// exporter's collector file writes it; the current name's is the
	// family's.
	legacyHelp string
	// toOld converts the Field's unit to the family's legacy unit: 1 but
	// for the violation counters, which backends read in µs and DCGM
	// gives in ns.
	toOld float64
	onMIG bool // also exported per MIG instance
}

// deviceMetrics are the DCGM-compatible device metrics: their families, and
// the HELP texts of the legacy names as the reference exporter publishes them.
var deviceMetrics = []deviceMetric{
	{GPUUtil, dcgmnames.GPUUtil, "GPU utilization (in %).", 1, false},
	{MemCopyUtil, dcgmnames.MemCopyUtil, "Memory utilization (in %).", 1, false},
	{FBUsed, dcgmnames.FBUsed, "Frame buffer memory used (in MiB).", 1, true},
	{FBFree, dcgmnames.FBFree, "Frame buffer memory free (in MiB).", 1, true},
	{FBReserved, dcgmnames.FBReserved, "Frame buffer memory reserved (in MiB).", 1, true},
	{GPUTemp, dcgmnames.GPUTemp, "GPU temperature (in C).", 1, false},
	{MemoryTemp, dcgmnames.MemoryTemp, "Memory temperature (in C).", 1, false},
	{PowerUsage, dcgmnames.Power, "Power draw (in W).", 1, false},
	{TotalEnergy, dcgmnames.Energy, "Total energy consumption since boot (in mJ).", 1, false},
	{SMClock, dcgmnames.SMClock, "SM clock frequency (in MHz).", 1, false},
	{MemClock, dcgmnames.MemClock, "Memory clock frequency (in MHz).", 1, false},
	{XIDLast, dcgmnames.XID, "Value of the last XID error encountered.", 1, false},
	{PCIeReplay, dcgmnames.PCIeReplay, "Total number of PCIe retries.", 1, false},
	{ECCSBEVolatile, dcgmnames.ECCSBEVolatile, "Total number of single-bit volatile ECC errors.", 1, false},
	{ECCDBEVolatile, dcgmnames.ECCDBEVolatile, "Total number of double-bit volatile ECC errors.", 1, false},
	{PowerViolation, dcgmnames.PowerViolation, "Throttling duration due to power constraints (in ns).", 1e3, false},
	{ThermalViolation, dcgmnames.ThermalViolation, "Throttling duration due to thermal constraints (in ns).", 1e3, false},
	{GREngineActive, dcgmnames.GREngineActive, "Ratio of time the graphics engine is active.", 1, true},
	{SMActive, dcgmnames.SMActive, "The ratio of cycles an SM has at least 1 warp assigned.", 1, true},
	{TensorActive, dcgmnames.TensorActive, "Ratio of cycles the tensor (HMMA) pipe is active.", 1, true},
	{DRAMActive, dcgmnames.DRAMActive, "Ratio of cycles the device memory interface is active sending or receiving data.", 1, true},
}

// deviceDesc is a deviceMetric as one Collector writes it: its families per
// label set, the conversion from the Field's unit to the written unit (value
// × mul / div; a factor below 1 divides, so that 37 % is 0.37 exactly), and
// the value type. Built once, in NewCollector.
type deviceDesc struct {
	descs     descSet
	mul, div  float64
	valueType prometheus.ValueType
	onMIG     bool
}

func (m deviceMetric) desc(l labelScheme, n dcgmnames.Naming) deviceDesc {
	help := m.family.Help
	if n == dcgmnames.Legacy {
		help = m.legacyHelp
	}
	typ := prometheus.GaugeValue
	if m.family.Type == dcgmnames.Counter {
		typ = prometheus.CounterValue
	}
	d := deviceDesc{descs: l.newDescSet(m.family.Name(n), help, n.DriverLabel()), mul: 1, div: 1, valueType: typ, onMIG: m.onMIG}
	if k := m.toOld * m.family.Scale(n); k < 1 {
		d.div = math.Round(1 / k)
	} else {
		d.mul = k
	}
	return d
}

// The labels naming the node on every device series: `hostname`, as
// dcgm-exporter writes it since 4.8.3 (PR #655), or `Hostname`, as it wrote it
// up to 4.8.2.
const (
	HostnameLabel       = "hostname"
	LegacyHostnameLabel = "Hostname"
)

var podLabelNames = []string{"container", "namespace", "pod"}

// labelScheme holds the identity label names of GPU and MIG instance series,
// in the order of the reference exporter. Never modified once built.
type labelScheme struct {
	gpu, mig []string
}

func newLabelScheme(hostnameLabel string) labelScheme {
	gpu := []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", hostnameLabel}
	return labelScheme{gpu: gpu, mig: append(slices.Clip(gpu), "GPU_I_PROFILE", "GPU_I_ID")}
}

// labelSet indexes the four label sets a device series can have.
type labelSet int

const (
	setGPU labelSet = iota
	setGPUPod
	setMIG
	setMIGPod
	numLabelSets
)

// labelNames returns the label names of a series of set: identity labels,
// pod labels where set has them, then extra.
func (l labelScheme) labelNames(set labelSet, extra ...string) []string {
	var names []string
	switch set {
	case setGPU, setGPUPod:
		names = append(names, l.gpu...)
	default:
		names = append(names, l.mig...)
	}
	if set == setGPUPod || set == setMIGPod {
		names = append(names, podLabelNames...)
	}
	return append(names, extra...)
}

// descSet holds one family per label set for one metric name.
type descSet [numLabelSets]*family

func (l labelScheme) newDescSet(name, help string, extra ...string) descSet {
	var d descSet
	for set := range numLabelSets {
		d[set] = newFamily(name, help, l.labelNames(set, extra...))
	}
	return d
}
