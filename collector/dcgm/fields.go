package dcgm

import (
	"math"

	"github.com/gputally/gputally/collector"
)

// DCGM field ids (dcgm_fields.h; go-dcgm's DCGM_FI_* constants, checked by a test).
const (
	fiDevName             uint16 = 50
	fiDevNVMLIndex        uint16 = 52
	fiDevUUID             uint16 = 54
	fiDevMinorNumber      uint16 = 55
	fiDevMIGMode          uint16 = 67
	fiDevSMClock          uint16 = 100
	fiDevMemClock         uint16 = 101
	fiDevMemoryTemp       uint16 = 140
	fiDevGPUTemp          uint16 = 150
	fiDevPowerUsage       uint16 = 155
	fiDevTotalEnergy      uint16 = 156
	fiDevPCIeReplay       uint16 = 202
	fiDevGPUUtil          uint16 = 203
	fiDevMemCopyUtil      uint16 = 204
	fiDevXIDErrors        uint16 = 230
	fiDevPowerViolation   uint16 = 240
	fiDevThermalViolation uint16 = 241
	fiDevFBTotal          uint16 = 250
	fiDevFBFree           uint16 = 251
	fiDevFBUsed           uint16 = 252
	fiDevFBReserved       uint16 = 253
	fiDevECCSBEVolTotal   uint16 = 310
	fiDevECCDBEVolTotal   uint16 = 311
	fiProfGREngineActive  uint16 = 1001
	fiProfSMActive        uint16 = 1002
	fiProfTensorActive    uint16 = 1004
	fiProfDRAMActive      uint16 = 1005
)

// DCGM's blank values (dcgm_structs.h). A value at or above a blank is not a
// reading; BLANK+2 means "not supported", BLANK+3 "not permissioned".
const (
	int32Blank = 0x7ffffff0
	int64Blank = 0x7ffffffffffffff0
	fp64Blank  = 140737488355328.0
	// uint32Unavailable is NVML's "unavailable" (0xFFFFFFFF), which leaks
	// through some DCGM int fields.
	uint32Unavailable = 0xFFFFFFFF
)

// String blanks (DCGM_FT_STR_*).
var stringBlanks = map[string]bool{
	"<<<NULL>>>": true, "<<<NOT_FOUND>>>": true, "<<<NOT_SUPPORTED>>>": true, "<<<NOT_PERMISSIONED>>>": true,
}

// fieldSpec maps one DCGM field onto one collector.Field.
type fieldSpec struct {
	field     collector.Field
	id        uint16
	dcgm      string  // the DCGM field name
	name      string  // the `field` label of gputally_sample_errors_total
	scale     float64 // contract unit per DCGM unit
	max       float64 // largest valid DCGM value; 0 for any value below the blanks
	instance  bool    // also read on MIG instances (FE_GPU_I)
	profiling bool    // a DCGM_FI_PROF_* field (needs the profiling module)
}

// specs are the fields of the metric contract, in collector.Field order. Units
// as DCGM reports them: %, MiB, °C, W (double), mJ, MHz, counts, ns for the
// violation counters (converted to the contract's µs), ratios 0–1 (double).
var specs = [collector.NumFields]fieldSpec{
	{field: collector.GPUUtil, id: fiDevGPUUtil, dcgm: "DCGM_FI_DEV_GPU_UTIL", name: "utilization", scale: 1, max: 100},
	{field: collector.MemCopyUtil, id: fiDevMemCopyUtil, dcgm: "DCGM_FI_DEV_MEM_COPY_UTIL", name: "memory_utilization", scale: 1, max: 100},
	{field: collector.FBUsed, id: fiDevFBUsed, dcgm: "DCGM_FI_DEV_FB_USED", name: "memory", scale: 1, max: 1 << 30, instance: true},
	{field: collector.FBFree, id: fiDevFBFree, dcgm: "DCGM_FI_DEV_FB_FREE", name: "memory", scale: 1, max: 1 << 30, instance: true},
	{field: collector.FBReserved, id: fiDevFBReserved, dcgm: "DCGM_FI_DEV_FB_RESERVED", name: "memory", scale: 1, max: 1 << 30, instance: true},
	{field: collector.GPUTemp, id: fiDevGPUTemp, dcgm: "DCGM_FI_DEV_GPU_TEMP", name: "temperature", scale: 1, max: 1000},
	{field: collector.MemoryTemp, id: fiDevMemoryTemp, dcgm: "DCGM_FI_DEV_MEMORY_TEMP", name: "memory_temperature", scale: 1, max: 1000},
	{field: collector.PowerUsage, id: fiDevPowerUsage, dcgm: "DCGM_FI_DEV_POWER_USAGE", name: "power", scale: 1, max: 100000},
	{field: collector.TotalEnergy, id: fiDevTotalEnergy, dcgm: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", name: "energy", scale: 1},
	{field: collector.SMClock, id: fiDevSMClock, dcgm: "DCGM_FI_DEV_SM_CLOCK", name: "sm_clock", scale: 1, max: 100000},
	{field: collector.MemClock, id: fiDevMemClock, dcgm: "DCGM_FI_DEV_MEM_CLOCK", name: "mem_clock", scale: 1, max: 100000},
	{field: collector.XIDLast, id: fiDevXIDErrors, dcgm: "DCGM_FI_DEV_XID_ERRORS", name: "xid", scale: 1, max: 100000},
	{field: collector.PCIeReplay, id: fiDevPCIeReplay, dcgm: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", name: "pcie_replay", scale: 1},
	{field: collector.ECCSBEVolatile, id: fiDevECCSBEVolTotal, dcgm: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", name: "ecc_sbe_volatile", scale: 1},
	{field: collector.ECCDBEVolatile, id: fiDevECCDBEVolTotal, dcgm: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", name: "ecc_dbe_volatile", scale: 1},
	{field: collector.PowerViolation, id: fiDevPowerViolation, dcgm: "DCGM_FI_DEV_POWER_VIOLATION", name: "power_violation", scale: 1e-3},
	{field: collector.ThermalViolation, id: fiDevThermalViolation, dcgm: "DCGM_FI_DEV_THERMAL_VIOLATION", name: "thermal_violation", scale: 1e-3},
	{field: collector.GREngineActive, id: fiProfGREngineActive, dcgm: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", name: "gr_engine_active", scale: 1, max: 1, instance: true, profiling: true},
	{field: collector.SMActive, id: fiProfSMActive, dcgm: "DCGM_FI_PROF_SM_ACTIVE", name: "sm_active", scale: 1, max: 1, instance: true, profiling: true},
	{field: collector.TensorActive, id: fiProfTensorActive, dcgm: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", name: "tensor_active", scale: 1, max: 1, instance: true, profiling: true},
	{field: collector.DRAMActive, id: fiProfDRAMActive, dcgm: "DCGM_FI_PROF_DRAM_ACTIVE", name: "dram_active", scale: 1, max: 1, instance: true, profiling: true},
}

// identityFields are read once per inventory: on GPUs the NVML index, minor
// number and MIG mode; on GPU instances the profile name, MIG UUID and size.
var (
	gpuIdentityFields      = []uint16{fiDevNVMLIndex, fiDevMinorNumber, fiDevMIGMode}
	instanceIdentityFields = []uint16{fiDevName, fiDevUUID, fiDevFBTotal}
)

// specByID returns the spec of a contract field by its DCGM id.
func specByID(id uint16) (fieldSpec, bool) {
	for _, s := range specs {
		if s.id == id {
			return s, true
		}
	}
	return fieldSpec{}, false
}

// verdict is what a DCGM value means for the backend.
type verdict uint8

const (
	valid       verdict = iota // a reading
	blank                      // no reading now (blank, no data yet, out of range): absent, silently
	unsupported                // the device does not support the field: absent from now on, logged once
	lost                       // the GPU fell off the bus
	failed                     // the read failed: absent and counted
)

// classify converts a DCGM value of s into the contract's unit.
func classify(s fieldSpec, v fieldValue) (float64, verdict) {
	switch v.status {
	case stOK:
	case stGPUIsLost:
		return 0, lost
	case stNotSupported, stNoPermission:
		return 0, unsupported
	case stNoData, stStaleData, stNotWatched:
		return 0, blank
	default:
		return 0, failed
	}
	var x float64
	switch v.typ {
	case typeInt64:
		i := v.i64
		switch {
		case i >= int64Blank:
			return 0, blankVerdict(i - int64Blank)
		case s.max != 0 && s.max < int32Blank && i >= int32Blank && i <= int32Blank+3:
			return 0, blankVerdict(i - int32Blank)
		case i < 0 || i == uint32Unavailable:
			return 0, blank
		}
		x = float64(i)
	case typeDouble:
		f := v.f64
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0) || f < 0:
			return 0, blank
		case f >= fp64Blank:
			return 0, blankVerdict(int64(f - fp64Blank))
		}
		x = f
	default:
		return 0, failed
	}
	if s.max != 0 && x > s.max {
		return 0, blank
	}
	return x * s.scale, valid
}

// blankVerdict tells "not supported" and "not permissioned" (offsets 2 and 3
// from a blank) from the other blanks.
func blankVerdict(offset int64) verdict {
	if offset == 2 || offset == 3 {
		return unsupported
	}
	return blank
}

// intValue returns an identity field's integer, or false when it is blank.
func intValue(v fieldValue) (int64, bool) {
	if v.status != stOK || v.typ != typeInt64 || v.i64 < 0 || v.i64 >= int32Blank {
		return 0, false
	}
	return v.i64, true
}

// stringValue returns an identity field's string, or false when it is blank.
func stringValue(v fieldValue) (string, bool) {
	if v.status != stOK || v.typ != typeString || v.str == "" || stringBlanks[v.str] {
		return "", false
	}
	return v.str, true
}
