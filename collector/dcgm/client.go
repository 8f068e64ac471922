package dcgm

import (
	"errors"
	"fmt"
	"time"
)

// client is everything the backend asks of DCGM. The real implementation
// (client_cgo.go) is a thin layer over go-dcgm; tests use a hand-written fake.
// A client is used from one goroutine at a time.
type client interface {
	// GPUs returns the DCGM ids of the GPUs DCGM supports.
	GPUs() ([]uint, error)
	// DeviceInfo returns the static attributes of one GPU.
	DeviceInfo(gpu uint) (deviceInfo, error)
	// MIGHierarchy returns the GPU instances and compute instances of all GPUs.
	MIGHierarchy() ([]migEntity, error)
	// Watch creates the backend's entity group and field groups: fields are
	// sampled every interval and xidField's updates are kept for XIDsSince.
	// It replaces an earlier Watch.
	Watch(entities []entity, fields []uint16, xidField uint16, interval time.Duration) error
	// WatchHealth sets DCGM's health watches on the GPUs of the last Watch.
	WatchHealth() error
	// LatestValues returns the latest value of every field for every entity.
	LatestValues(entities []entity, fields []uint16) ([]fieldValue, error)
	// XIDsSince returns the XID field updates at or after since and the time
	// to pass as since next.
	XIDsSince(since time.Time) ([]fieldValue, time.Time, error)
	// HealthCheck returns the incidents of the health watches set by WatchHealth.
	HealthCheck() ([]healthIncident, error)
	// GPULost reports whether DCGM marks the GPU as lost (fell off the bus).
	GPULost(gpu uint) bool
	// Close destroys the groups and disconnects (DCGM Shutdown). It is called
	// only on a client that connected.
	Close() error
}

// dialer connects to DCGM. It returns an error wrapping ErrLibraryNotFound
// when libdcgm cannot be loaded.
type dialer func() (client, error)

// entityGroup is DCGM's dcgm_field_entity_group_t.
type entityGroup uint8

// The entity groups the backend uses (values of go-dcgm's FE_GPU, FE_GPU_I, FE_GPU_CI).
const (
	groupGPU             entityGroup = 1
	groupGPUInstance     entityGroup = 4
	groupComputeInstance entityGroup = 5
)

// entity is one DCGM entity: a GPU, a GPU instance or a compute instance.
type entity struct {
	group entityGroup
	id    uint
}

func (e entity) String() string {
	switch e.group {
	case groupGPU:
		return fmt.Sprintf("gpu %d", e.id)
	case groupGPUInstance:
		return fmt.Sprintf("gpu instance %d", e.id)
	case groupComputeInstance:
		return fmt.Sprintf("compute instance %d", e.id)
	}
	return fmt.Sprintf("entity %d/%d", e.group, e.id)
}

// deviceInfo holds the static attributes of a GPU.
type deviceInfo struct {
	UUID          string
	PCIBusID      string
	Model         string
	DriverVersion string
	FBTotalMiB    uint64
}

// migEntity is one entry of DCGM's MIG hierarchy.
type migEntity struct {
	entity            entity // a GPU instance or a compute instance
	parent            entity // its GPU, or its GPU instance
	gpuInstanceID     uint   // NVML GPU instance id within the GPU
	computeInstanceID uint   // NVML compute instance id within the GPU instance
	profileID         uint   // NVML profile id
	slices            uint   // compute slices of the profile
}

// Value types of a fieldValue (DCGM_FT_*).
const (
	typeInt64  = 'i'
	typeDouble = 'd'
	typeString = 's'
)

// fieldValue is one value DCGM returned.
type fieldValue struct {
	entity entity
	field  uint16
	status int  // a DCGM return code; 0 when the value is valid
	typ    byte // typeInt64, typeDouble or typeString
	i64    int64
	f64    float64
	str    string
	ts     time.Time
}

// healthIncident is one finding of DCGM's health watches.
type healthIncident struct {
	entity  entity
	failure bool // DCGM_HEALTH_RESULT_FAIL; false for a warning
	message string
}

// DCGM return codes (dcgmReturn_t) the backend tells apart.
const (
	stOK                    = 0
	stNotSupported          = -6
	stNoData                = -14
	stStaleData             = -15
	stNotWatched            = -16
	stNoPermission          = -17
	stGPUIsLost             = -18
	stConnectionNotValid    = -21
	stModuleNotLoaded       = -33
	stInUse                 = -34
	stProfilingNotSupported = -36
	stProfilingLibraryError = -37
)

// statusError is a failed DCGM call with its return code.
type statusError struct {
	op   string
	code int
	msg  string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: %s (DCGM code %d)", e.op, e.msg, e.code)
}

// statusCode returns the DCGM return code in err's chain, or 0 when there is none.
func statusCode(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return 0
}

// connectionLost reports whether err says the hostengine connection is gone.
func connectionLost(err error) bool {
	return statusCode(err) == stConnectionNotValid
}

// profilingUnavailable reports whether a Watch failed because the profiling
// fields cannot be watched (no profiling module, GPU without profiling support,
// or another profiler holding the counters).
func profilingUnavailable(err error) bool {
	switch statusCode(err) {
	case stNotSupported, stModuleNotLoaded, stInUse, stProfilingNotSupported, stProfilingLibraryError:
		return true
	}
	return false
}
