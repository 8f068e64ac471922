package dcgmnames

// The table. Sources (kept as fixtures in testdata/, see its README, and held
// to the table by table_test.go):
//
//   - the old names, types and units: dcgm-exporter 4.8.2's collector files
//     (NVIDIA/dcgm-exporter@691c927:etc/default-counters.csv and
//     etc/dcp-metrics-included.csv);
//   - the renames that keep the unit, with their field IDs: DCGM 4.6.0's
//     dcgm_fields.h, section "Deprecated: renamed per DCGM Field Naming
//     Standard" (NVIDIA/DCGM@72fa3fe:dcgmlib/dcgm_fields.h:3602-3990);
//   - the base-unit fields 1600-1612: DCGM 4.6.1's header as go-dcgm vendors
//     it (NVIDIA/go-dcgm@b7fa315:pkg/dcgm/dcgm_fields.h:3530-3604);
//   - the base-unit fields 1613 and up: NVIDIA's DCGM 4.7 field reference as
//     quoted on 19 Sep 2026 by jackliusr/research (DCGM guide, §4.2);
//   - which families 4.9 and 4.10 renamed: the release notes of
//     dcgm-exporter 4.9.0 and 4.10.0 (30 Nov 2026).
//
// Where these say otherwise than ../shared's compatibility notes or each
// other, the table follows the release that writes the names:
//
//	family            source says                         table says (why)
//	GPU utilization   DCGM 4.6.0 header: GPU_UTIL is an   GPU_UTIL_RATIO is 1613, a 0–1 ratio:
//	                  alias of GPU_UTIL_RATIO, field 203  DCGM 4.7 keeps 203 as GPU_UTIL (%) and
//	                  (so in %)                           adds 1613; 4.9 ships DCGM 4.7 and says
//	                                                      utilization becomes a 0–1 ratio
//	NVLink total      DCGM 4.6.0 header: BANDWIDTH_TOTAL  THROUGHPUT_BYTES_PER_SECOND (1648):
//	                  is an alias of THROUGHPUT_TOTAL     4.9 says NVLink throughput changes
//	                  (449, MB/s)                         from MB/s to bytes per second
//	power/thermal     gputally wrote µs ("in us", as      ns, as DCGM's header and 4.8.2's
//	violation         dcgm-exporter's collector file      collector file say; the exporter's
//	                  once said)                          legacy naming writes ns too
//	                                                      (collector/metrics.go: toOld)
//	NVLink total      ×1,000,000 would be MB/s → B/s      ×1,024,000: the legacy field is KiB/s
//	factor                                                ÷ 1,000, the base field KiB/s × 1,024
//
// Not found in any source: dcgm-exporter 4.10's own collector file (so the
// table's new names are held to the DCGM sources and the release notes, not to
// a 4.10 CSV), the 23rd field 4.9 renamed (22 of the 4.8 default rows are;
// the 23rd is a "profiling-preset" row, likely DCGM_FI_PROF_SM_ACTIVE), the
// field IDs of the four 4.10 names, and whether 4.9 also renamed the commented
// (optional) rows such as the violation counters — the table assumes it did,
// with DCGM 4.7's names.

// The families gputally's exporter writes, and the report reads.
var (
	GPUUtil = Family{
		Old: "DCGM_FI_DEV_GPU_UTIL", OldUnit: Percent, OldID: 203,
		New: "DCGM_FI_DEV_GPU_UTIL_RATIO", Unit: Ratio, NewID: 1613,
		FromOld: 0.01, Since: Release49, Type: Gauge,
		Help: "GPU utilization (ratio 0-1).",
	}
	MemCopyUtil = Family{
		Old: "DCGM_FI_DEV_MEM_COPY_UTIL", OldUnit: Percent, OldID: 204,
		New: "DCGM_FI_DEV_MEMORY_UTIL_RATIO", Unit: Ratio, NewID: 1614,
		FromOld: 0.01, Since: Release49, Type: Gauge,
		Help: "Memory utilization (ratio 0-1).",
	}
	FBFree = Family{
		Old: "DCGM_FI_DEV_FB_FREE", OldUnit: MiB, OldID: 251,
		New: "DCGM_FI_DEV_FB_FREE_BYTES", Unit: Bytes, NewID: 1626,
		FromOld: 1 << 20, Since: Release49, Type: Gauge,
		Help: "Framebuffer memory free (in bytes).",
	}
	FBUsed = Family{
		Old: "DCGM_FI_DEV_FB_USED", OldUnit: MiB, OldID: 252,
		New: "DCGM_FI_DEV_FB_USED_BYTES", Unit: Bytes, NewID: 1627,
		FromOld: 1 << 20, Since: Release49, Type: Gauge,
		Help: "Framebuffer memory used (in bytes).",
	}
	FBReserved = Family{
		Old: "DCGM_FI_DEV_FB_RESERVED", OldUnit: MiB, OldID: 253,
		New: "DCGM_FI_DEV_FB_RESERVED_BYTES", Unit: Bytes, NewID: 1628,
		FromOld: 1 << 20, Since: Release49, Type: Gauge,
		Help: "Framebuffer memory reserved (in bytes).",
	}
	// FBCapacity is collected by default from 4.9 on; its old field,
	// DCGM_FI_DEV_FB_TOTAL, was in no 4.8 collector file, and the exporter's
	// legacy naming does not write it.
	FBCapacity = Family{
		Old: "DCGM_FI_DEV_FB_TOTAL", OldUnit: MiB, OldID: 250,
		New: "DCGM_FI_DEV_FB_CAPACITY_BYTES", Unit: Bytes, NewID: 1625,
		FromOld: 1 << 20, Since: Release49, Type: Gauge,
		Help: "Total framebuffer memory (in bytes).",
	}
	GPUTemp = Family{
		Old: "DCGM_FI_DEV_GPU_TEMP", OldUnit: Celsius, OldID: 150,
		New: "DCGM_FI_DEV_GPU_TEMP_CELSIUS", Unit: Celsius, NewID: 150,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "GPU temperature (in C).",
	}
	MemoryTemp = Family{
		Old: "DCGM_FI_DEV_MEMORY_TEMP", OldUnit: Celsius, OldID: 140,
		New: "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", Unit: Celsius, NewID: 140,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Memory temperature (in C).",
	}
	Power = Family{
		Old: "DCGM_FI_DEV_POWER_USAGE", OldUnit: Watts, OldID: 155,
		New: "DCGM_FI_DEV_BOARD_POWER_WATTS", Unit: Watts, NewID: 155,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Power draw (in W).",
	}
	Energy = Family{
		Old: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", OldUnit: Millijoules, OldID: 156,
		New: "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", Unit: Joules, NewID: 1611,
		FromOld: 1e-3, Since: Release49, Type: Counter,
		Help: "Total energy consumption since boot (in J).",
	}
	SMClock = Family{
		Old: "DCGM_FI_DEV_SM_CLOCK", OldUnit: MHz, OldID: 100,
		New: "DCGM_FI_DEV_SM_CLOCK_HERTZ", Unit: Hertz, NewID: 1603,
		FromOld: 1e6, Since: Release49, Type: Gauge,
		Help: "SM clock frequency (in Hz).",
	}
	MemClock = Family{
		Old: "DCGM_FI_DEV_MEM_CLOCK", OldUnit: MHz, OldID: 101,
		New: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", Unit: Hertz, NewID: 1604,
		FromOld: 1e6, Since: Release49, Type: Gauge,
		Help: "Memory clock frequency (in Hz).",
	}
	XID = Family{
		Old: "DCGM_FI_DEV_XID_ERRORS", OldUnit: XIDCode, OldID: 230,
		New: "DCGM_FI_DEV_XID_ERROR", Unit: XIDCode, NewID: 230,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Value of the last XID error encountered.",
	}
	PCIeReplay = Family{
		Old: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", OldUnit: Count, OldID: 202,
		New: "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", Unit: Count, NewID: 202,
		FromOld: 1, Since: Release49, Type: Counter,
		Help: "Total number of PCIe retries.",
	}
	// ECCSBEVolatile and ECCDBEVolatile already follow the naming standard:
	// one name under both namings.
	ECCSBEVolatile = Family{
		Old: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", OldUnit: Count, OldID: 310,
		New: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Unit: Count, NewID: 310,
		FromOld: 1, Since: Release49, Type: Counter,
		Help: "Total number of single-bit volatile ECC errors.",
	}
	ECCDBEVolatile = Family{
		Old: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", OldUnit: Count, OldID: 311,
		New: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Unit: Count, NewID: 311,
		FromOld: 1, Since: Release49, Type: Counter,
		Help: "Total number of double-bit volatile ECC errors.",
	}
	PowerViolation = Family{
		Old: "DCGM_FI_DEV_POWER_VIOLATION", OldUnit: Nanoseconds, OldID: 240,
		New: "DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL", Unit: Seconds, NewID: 1617,
		FromOld: 1e-9, Since: Release49, Type: Counter,
		Help: "Throttling duration due to power constraints (in s).",
	}
	ThermalViolation = Family{
		Old: "DCGM_FI_DEV_THERMAL_VIOLATION", OldUnit: Nanoseconds, OldID: 241,
		New: "DCGM_FI_DEV_GPU_THERMAL_THROTTLE_SECONDS_TOTAL", Unit: Seconds, NewID: 1618,
		FromOld: 1e-9, Since: Release49, Type: Counter,
		Help: "Throttling duration due to thermal constraints (in s).",
	}
	GREngineActive = Family{
		Old: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", OldUnit: Ratio, OldID: 1001,
		New: "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", Unit: Ratio, NewID: 1001,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Ratio of time the graphics engine is active.",
	}
	SMActive = Family{
		Old: "DCGM_FI_PROF_SM_ACTIVE", OldUnit: Ratio, OldID: 1002,
		New: "DCGM_FI_PROF_SM_UTIL_RATIO", Unit: Ratio, NewID: 1002,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "The ratio of cycles an SM has at least 1 warp assigned.",
	}
	TensorActive = Family{
		Old: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", OldUnit: Ratio, OldID: 1004,
		New: "DCGM_FI_PROF_TENSOR_UTIL_RATIO", Unit: Ratio, NewID: 1004,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Ratio of cycles the tensor (HMMA) pipe is active.",
	}
	DRAMActive = Family{
		Old: "DCGM_FI_PROF_DRAM_ACTIVE", OldUnit: Ratio, OldID: 1005,
		New: "DCGM_FI_PROF_DRAM_UTIL_RATIO", Unit: Ratio, NewID: 1005,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Ratio of cycles the device memory interface is active sending or receiving data.",
	}
)

// Families is the whole table: the families above and the other rows of
// dcgm-exporter's collector files that the renames touched. Read-only.
var Families = []Family{
	GPUUtil, MemCopyUtil,
	{
		Old: "DCGM_FI_DEV_ENC_UTIL", OldUnit: Percent, OldID: 206,
		New: "DCGM_FI_DEV_ENC_UTIL_RATIO", Unit: Ratio, NewID: 1615,
		FromOld: 0.01, Since: Release49, Type: Gauge,
		Help: "Encoder utilization (ratio 0-1).",
	},
	{
		Old: "DCGM_FI_DEV_DEC_UTIL", OldUnit: Percent, OldID: 207,
		New: "DCGM_FI_DEV_DEC_UTIL_RATIO", Unit: Ratio, NewID: 1616,
		FromOld: 0.01, Since: Release49, Type: Gauge,
		Help: "Decoder utilization (ratio 0-1).",
	},
	FBFree, FBUsed, FBReserved, FBCapacity,
	GPUTemp, MemoryTemp, Power, Energy, SMClock, MemClock,
	XID, PCIeReplay, ECCSBEVolatile, ECCDBEVolatile, PowerViolation, ThermalViolation,
	GREngineActive, SMActive,
	{
		Old: "DCGM_FI_PROF_SM_OCCUPANCY", OldUnit: Ratio, OldID: 1003,
		New: "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", Unit: Ratio, NewID: 1003,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "The ratio of number of warps resident on an SM.",
	},
	TensorActive, DRAMActive,
	{
		// MB/s as the legacy field computes it, KiB/s ÷ 1,000; the base
		// field is KiB/s × 1,024, so one old unit is 1,024,000 bytes/s.
		Old: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", OldUnit: MBPerSecond, OldID: 449,
		New: "DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND", Unit: BytesPerSecond, NewID: 1648,
		FromOld: 1_024_000, Since: Release49, Type: Counter,
		Help: "NVLink throughput over all lanes (in bytes per second).",
	},
	{
		Old: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", OldUnit: Count, OldID: 393,
		New: "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", Unit: Count, NewID: 393,
		FromOld: 1, Since: Release49, Type: Counter,
		Help: "Number of remapped rows for uncorrectable errors.",
	},
	{
		Old: "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", OldUnit: Count, OldID: 394,
		New: "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", Unit: Count, NewID: 394,
		FromOld: 1, Since: Release49, Type: Counter,
		Help: "Number of remapped rows for correctable errors.",
	},
	{
		Old: "DCGM_FI_DEV_ROW_REMAP_FAILURE", OldUnit: Status, OldID: 395,
		New: "DCGM_FI_DEV_ROW_REMAP_FAILED", Unit: Status, NewID: 395,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "Whether remapping of rows has failed.",
	},
	{
		// Already a standard name: the same under both namings.
		Old: "DCGM_FI_DEV_VGPU_LICENSE_STATUS", OldUnit: Status, OldID: 526,
		New: "DCGM_FI_DEV_VGPU_LICENSE_STATUS", Unit: Status, NewID: 526,
		FromOld: 1, Since: Release49, Type: Gauge,
		Help: "vGPU License status.",
	},
	{
		Old: "DCGM_FI_PROF_PCIE_TX_BYTES", OldUnit: BytesPerSecond, OldID: 1009,
		New: "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", Unit: BytesPerSecond,
		FromOld: 1, Since: Release410, Type: Gauge,
		Help: "The rate of data transmitted over the PCIe bus, headers and payload (in bytes per second).",
	},
	{
		Old: "DCGM_FI_PROF_PCIE_RX_BYTES", OldUnit: BytesPerSecond, OldID: 1010,
		New: "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", Unit: BytesPerSecond,
		FromOld: 1, Since: Release410, Type: Gauge,
		Help: "The rate of data received over the PCIe bus, headers and payload (in bytes per second).",
	},
	{
		Old: "DCGM_FI_PROF_NVLINK_TX_BYTES", OldUnit: BytesPerSecond, OldID: 1011,
		New: "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", Unit: BytesPerSecond,
		FromOld: 1, Since: Release410, Type: Gauge,
		Help: "The rate of data transmitted over NVLink, headers and payload (in bytes per second).",
	},
	{
		Old: "DCGM_FI_PROF_NVLINK_RX_BYTES", OldUnit: BytesPerSecond, OldID: 1012,
		New: "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", Unit: BytesPerSecond,
		FromOld: 1, Since: Release410, Type: Gauge,
		Help: "The rate of data received over NVLink, headers and payload (in bytes per second).",
	},
}
