package collector

import (
	"math"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/cost"
)

// DeviceUsage is what process accounting measured for the containers holding
// one shared GPU or MIG instance.
type DeviceUsage struct {
	UUID    string // "GPU-…" or "MIG-…"
	Holders []HolderUsage
}

// HolderUsage is one container's use of a shared device.
type HolderUsage struct {
	Namespace, Pod, Container string
	Utilization               float64 // share of the device's SM time, 0–1
	MemoryBytes               float64 // framebuffer used, bytes
}

// ProcessAccounting maps the compute processes of a sample to the containers
// holding each device. It is called from the sampler goroutine only.
type ProcessAccounting interface {
	// Usage returns the use of every device that more than one container
	// shares, and false when the processes could not be mapped to pods (no
	// hostPID, procfs unreadable) — then the usage is unknown, never zero.
	Usage(inv Inventory, s Sample, attr *attribution.Snapshot) ([]DeviceUsage, bool)
}

// usageOf returns the usage of device uuid, or nil.
func usageOf(usage []DeviceUsage, uuid string) *DeviceUsage {
	for i := range usage {
		if usage[i].UUID == uuid {
			return &usage[i]
		}
	}
	return nil
}

// activity returns the measured utilization of the container key, or NaN when unknown.
func (u *DeviceUsage) activity(key cost.HolderKey) float64 {
	if u == nil {
		return math.NaN()
	}
	for _, h := range u.Holders {
		if h.Namespace == key.Namespace && h.Pod == key.Pod && h.Container == key.Container {
			return h.Utilization
		}
	}
	return math.NaN()
}
