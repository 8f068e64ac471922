// Package collector samples the GPUs of a node through a Backend, publishes each
// sample as an immutable Snapshot, and turns the latest Snapshot into Prometheus
// metrics under the DCGM names of the metric contract (docs/metrics.md).
//
// The scrape path only reads the latest Snapshot: it never calls a backend, the
// kubelet or the API server.
package collector

import (
	"context"
	"errors"
	"math"
	"time"
)

// Inventory lists the GPUs of a node and their MIG instances. It is static until
// the MIG layout changes. Values are not modified after a Backend returns them.
type Inventory struct {
	DriverVersion string
	GPUs          []GPU
}

// GPU is one physical GPU.
type GPU struct {
	Index          int    // NVML index: the `gpu` label
	Minor          int    // N of /dev/nvidiaN: the `device` label is "nvidiaN"
	UUID           string // "GPU-…"
	PCIBusID       string // "00000000:07:00.0"
	Model          string // product name: the `modelName` label, e.g. "NVIDIA H100 80GB HBM3"
	MemoryTotalMiB uint64 // framebuffer size in MiB; 0 when unknown
	MIGEnabled     bool
	Instances      []MIGInstance // MIG instances; empty unless MIGEnabled
}

// MIGInstance is one MIG device: a GPU instance with its compute instance.
type MIGInstance struct {
	UUID              string // "MIG-…"
	GPUInstanceID     int    // the `GPU_I_ID` label
	ComputeInstanceID int
	Profile           string // the `GPU_I_PROFILE` label, e.g. "3g.40gb"
	ComputeSlices     int    // compute slices of 7
	MemorySlices      int    // memory slices of 8
	MemoryTotalMiB    uint64
	// PlacementStart and PlacementSize are the memory slices the GPU instance
	// occupies on its GPU; PlacementSize is 0 when the backend does not know.
	PlacementStart, PlacementSize int
}

// Field names one reading of a device. Units are those of the DCGM field of the
// same name (see docs/metrics.md).
type Field uint8

// The fields of the metric contract.
const (
	GPUUtil          Field = iota // DCGM_FI_DEV_GPU_UTIL, %
	MemCopyUtil                   // DCGM_FI_DEV_MEM_COPY_UTIL, %
	FBUsed                        // DCGM_FI_DEV_FB_USED, MiB
	FBFree                        // DCGM_FI_DEV_FB_FREE, MiB
	FBReserved                    // DCGM_FI_DEV_FB_RESERVED, MiB
	GPUTemp                       // DCGM_FI_DEV_GPU_TEMP, °C
	MemoryTemp                    // DCGM_FI_DEV_MEMORY_TEMP, °C
	PowerUsage                    // DCGM_FI_DEV_POWER_USAGE, W
	TotalEnergy                   // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ (counter)
	SMClock                       // DCGM_FI_DEV_SM_CLOCK, MHz
	MemClock                      // DCGM_FI_DEV_MEM_CLOCK, MHz
	XIDLast                       // DCGM_FI_DEV_XID_ERRORS, last XID code
	PCIeReplay                    // DCGM_FI_DEV_PCIE_REPLAY_COUNTER, count (counter)
	ECCSBEVolatile                // DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, count (counter)
	ECCDBEVolatile                // DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, count (counter)
	PowerViolation                // DCGM_FI_DEV_POWER_VIOLATION, µs (counter)
	ThermalViolation              // DCGM_FI_DEV_THERMAL_VIOLATION, µs (counter)
	GREngineActive                // DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio 0–1
	SMActive                      // DCGM_FI_PROF_SM_ACTIVE, ratio 0–1
	TensorActive                  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio 0–1
	DRAMActive                    // DCGM_FI_PROF_DRAM_ACTIVE, ratio 0–1
	NumFields
)

// Values holds the readings of one device. A field that was not set is absent:
// it yields no series. The zero value has every field absent.
type Values struct {
	val     [NumFields]float64
	present uint32
}

// Set records v for f.
func (v *Values) Set(f Field, x float64) {
	v.val[f] = x
	v.present |= 1 << f
}

// Get returns the value of f and whether it is present.
func (v *Values) Get(f Field) (float64, bool) {
	if v.present&(1<<f) == 0 {
		return math.NaN(), false
	}
	return v.val[f], true
}

// Has reports whether f is present.
func (v *Values) Has(f Field) bool { return v.present&(1<<f) != 0 }

// Clear marks f absent.
func (v *Values) Clear(f Field) { v.present &^= 1 << f }

// Reset marks every field absent.
func (v *Values) Reset() { v.present = 0 }

// XIDCount is how many XID events of one code a GPU raised since the backend started.
type XIDCount struct {
	XID   uint64
	Count uint64
}

// Process is one compute process running on a GPU.
type Process struct {
	PID             uint32
	GPUInstanceID   int     // GPU instance the process runs in; -1 when the GPU is not in MIG mode
	UsedMemoryBytes uint64  // framebuffer used by the process; 0 when unknown
	Utilization     float64 // share of the GPU's SM time, 0–1; NaN when unknown
}

// GPUReading is one sample of one physical GPU and its MIG instances.
type GPUReading struct {
	// Lost is true once the GPU fell off the bus (XID 79, ERROR_GPU_IS_LOST):
	// its values are then absent and gputally_gpu_healthy is 0.
	Lost bool
	// Healthy is false when the backend's health checks fail (a lost GPU is never healthy).
	Healthy bool
	Values  Values
	XIDs    []XIDCount // cumulative per XID code, sorted by code
	// ProcessesKnown is true when the backend listed the GPU's compute
	// processes; Processes is meaningful only then.
	ProcessesKnown bool
	Processes      []Process
	Instances      []Values // parallel to GPU.Instances
}

// Sample is one reading of every GPU of an Inventory, taken at Time.
type Sample struct {
	Time time.Time
	GPUs []GPUReading // parallel to Inventory.GPUs
}

// ErrorCounter counts failed reads per field. It is safe for concurrent use.
type ErrorCounter interface {
	// Inc counts one failed read of field, a short lower-case name such as "power".
	Inc(field string)
}

// ErrInventoryChanged is returned by Backend.Sample when the devices changed (a MIG
// reconfiguration): the sampler then reads the Inventory again.
var ErrInventoryChanged = errors.New("device inventory changed")

// Backend reads GPUs. The sampler calls it from one goroutine only.
type Backend interface {
	// Name is the `backend` label value: "nvml", "dcgm" or "sim".
	Name() string
	// Inventory returns the node's GPUs and MIG instances.
	Inventory(ctx context.Context) (Inventory, error)
	// Sample fills s.GPUs, which the caller has sized to the Inventory, with the
	// readings at now (the simulated backend uses now; hardware backends read the
	// current state). A field a device does not support stays absent; a field that
	// fails to read is counted in errs and stays absent. Sample fails only when no
	// device could be read at all, or with ErrInventoryChanged.
	Sample(ctx context.Context, now time.Time, s *Sample, errs ErrorCounter) error
	// Close releases the backend's library handles.
	Close() error
}
