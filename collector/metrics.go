package collector

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// deviceMetric describes how one Field is exported.
type deviceMetric struct {
	field     Field
	name      string
	help      string
	valueType prometheus.ValueType
	onMIG     bool // also exported per MIG instance
}

// deviceMetrics are the DCGM-compatible device metrics: names, HELP texts and
// types as the reference exporter publishes them.
var deviceMetrics = []deviceMetric{
	{GPUUtil, "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", prometheus.GaugeValue, false},
	{MemCopyUtil, "DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", prometheus.GaugeValue, false},
	{FBUsed, "DCGM_FI_DEV_FB_USED", "Frame buffer memory used (in MiB).", prometheus.GaugeValue, true},
	{FBFree, "DCGM_FI_DEV_FB_FREE", "Frame buffer memory free (in MiB).", prometheus.GaugeValue, true},
	{FBReserved, "DCGM_FI_DEV_FB_RESERVED", "Frame buffer memory reserved (in MiB).", prometheus.GaugeValue, true},
	{GPUTemp, "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", prometheus.GaugeValue, false},
	{MemoryTemp, "DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", prometheus.GaugeValue, false},
	{PowerUsage, "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", prometheus.GaugeValue, false},
	{TotalEnergy, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", prometheus.CounterValue, false},
	{SMClock, "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", prometheus.GaugeValue, false},
	{MemClock, "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", prometheus.GaugeValue, false},
	{XIDLast, "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", prometheus.GaugeValue, false},
	{PCIeReplay, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", prometheus.CounterValue, false},
	{ECCSBEVolatile, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.", prometheus.CounterValue, false},
	{ECCDBEVolatile, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", prometheus.CounterValue, false},
	{PowerViolation, "DCGM_FI_DEV_POWER_VIOLATION", "Throttling duration due to power constraints (in us).", prometheus.CounterValue, false},
	{ThermalViolation, "DCGM_FI_DEV_THERMAL_VIOLATION", "Throttling duration due to thermal constraints (in us).", prometheus.CounterValue, false},
	{GREngineActive, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", prometheus.GaugeValue, true},
	{SMActive, "DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", prometheus.GaugeValue, true},
	{TensorActive, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", prometheus.GaugeValue, true},
	{DRAMActive, "DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", prometheus.GaugeValue, true},
}

// The labels naming the node on every device series: `hostname`, as
// dcgm-exporter writes it since 4.8.3 (PR #655), or `Hostname`, as it wrote it
// up to 4.8.2.
const (
	HostnameLabel       = "hostname"
	LegacyHostnameLabel = "Hostname"
)

// driverVersionLabel is the label dcgm-exporter puts on its DCGM_* series (not
// on gputally's own: gputally_gpu_info carries the driver as driver_version).
const driverVersionLabel = "DCGM_FI_DRIVER_VERSION"

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
