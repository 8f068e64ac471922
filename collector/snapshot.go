package collector

import (
	"math"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/cost"
)

// Snapshot is one published sample of a node. It is immutable once published:
// readers share it without locks.
type Snapshot struct {
	Time      time.Time     // when the sample was taken
	Duration  time.Duration // how long taking it took
	Backend   string        // the backend's name
	Up        bool          // the backend answered; when false, Sample holds no readings
	Inventory Inventory
	Sample    Sample
	Activity  []Activity        // per GPU, parallel to Inventory.GPUs; nil when !Up
	Errors    map[string]uint64 // failed reads per field since start

	// Attribution is the pod attribution the sample was accounted with; nil
	// when attribution is off.
	Attribution *attribution.Snapshot
	// Usage is the per-container use of shared devices; ProcessAccountingUp is
	// false when process accounting is on but PIDs could not be mapped to pods.
	Usage               []DeviceUsage
	ProcessAccounting   bool // process accounting is configured
	ProcessAccountingUp bool
	// Totals and Rates are the cost ledger's, after this sample; nil when the ledger is off.
	Totals []cost.Total
	Rates  []cost.GPURate
	// Estimates are the ledger's estimated busy and idle time per holder
	// (cost.Ledger.AppendEstimates).
	Estimates []cost.Estimate

	index *deviceIndex // UUID → position in Inventory; shared by snapshots of one inventory
	// listed are the devices a ledger series may belong to, those that left
	// the inventory included (listedDevices); shared like index, and replaced
	// only when index is.
	listed map[string]listedDevice
}

// Signal names the activity signal a device's idle/busy state is judged by.
type Signal string

// Activity signals, in order of preference.
const (
	SignalGREngine  Signal = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	SignalGPUUtil   Signal = "DCGM_FI_DEV_GPU_UTIL"
	SignalProcesses Signal = "processes"
	SignalNone      Signal = "none"
)

// Activity is how busy a device was in one sample: Ratio 0–1 (NaN with SignalNone).
type Activity struct {
	Ratio     float64
	Signal    Signal
	Instances []Activity // parallel to GPU.Instances
}

// activities judges every GPU and MIG instance of s by the first signal present:
// GR engine activity, then GPU utilization, then (MIG instances only) whether a
// compute process runs in the instance.
func activities(inv Inventory, s Sample) []Activity {
	out := make([]Activity, len(s.GPUs))
	for i := range s.GPUs {
		r := &s.GPUs[i]
		if r.Lost {
			out[i] = Activity{Ratio: math.NaN(), Signal: SignalNone}
			continue
		}
		out[i] = activityOf(&r.Values)
		if len(r.Instances) == 0 {
			continue
		}
		out[i].Instances = make([]Activity, len(r.Instances))
		for j := range r.Instances {
			a := activityOf(&r.Instances[j])
			if a.Signal == SignalNone && r.ProcessesKnown {
				a = processActivity(inv.GPUs[i].Instances[j].GPUInstanceID, r.Processes)
			}
			out[i].Instances[j] = a
		}
	}
	return out
}

func activityOf(v *Values) Activity {
	if x, ok := v.Get(GREngineActive); ok {
		return Activity{Ratio: x, Signal: SignalGREngine}
	}
	if x, ok := v.Get(GPUUtil); ok {
		return Activity{Ratio: x / 100, Signal: SignalGPUUtil}
	}
	return Activity{Ratio: math.NaN(), Signal: SignalNone}
}

// processActivity counts a MIG instance busy (1) while a compute process runs in it.
func processActivity(gi int, procs []Process) Activity {
	for _, p := range procs {
		if p.GPUInstanceID == gi {
			return Activity{Ratio: 1, Signal: SignalProcesses}
		}
	}
	return Activity{Ratio: 0, Signal: SignalProcesses}
}

// deviceRef locates a device in an Inventory: GPU i, and MIG instance j or -1.
type deviceRef struct{ gpu, instance int }

// deviceIndex maps device UUIDs (GPUs and MIG instances) to their place in an Inventory.
type deviceIndex struct{ refs map[string]deviceRef }

func newDeviceIndex(inv Inventory) *deviceIndex {
	x := &deviceIndex{refs: make(map[string]deviceRef)}
	for i, g := range inv.GPUs {
		x.refs[g.UUID] = deviceRef{i, -1}
		for j, in := range g.Instances {
			x.refs[in.UUID] = deviceRef{i, j}
		}
	}
	return x
}

// lookup returns where device uuid is, and false for an unknown device.
func (x *deviceIndex) lookup(uuid string) (deviceRef, bool) {
	if x == nil {
		return deviceRef{}, false
	}
	r, ok := x.refs[uuid]
	return r, ok
}
