package nvml

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gputally/gputally/collector"
)

// probe is one kind of NVML read on a device. Whether a device supports it is
// remembered per device, so an unsupported read is tried once only.
type probe uint8

const (
	probeUtilization probe = iota
	probeMemoryV2
	probeMemory
	probeTemperature
	probeMemoryTemperature
	probePower
	probeEnergy
	probeSMClock
	probeMemClock
	probeECCSBE
	probeECCDBE
	probePCIeReplay
	probePowerViolation
	probeThermalViolation
	probeProcesses
	probeProcessUtilization
	probeGPM
	numProbes
)

// probeNames are the `field` label values of gputally_sample_errors_total.
var probeNames = [numProbes]string{
	probeUtilization:        "utilization",
	probeMemoryV2:           "memory",
	probeMemory:             "memory",
	probeTemperature:        "temperature",
	probeMemoryTemperature:  "memory_temperature",
	probePower:              "power",
	probeEnergy:             "energy",
	probeSMClock:            "sm_clock",
	probeMemClock:           "mem_clock",
	probeECCSBE:             "ecc_sbe_volatile",
	probeECCDBE:             "ecc_dbe_volatile",
	probePCIeReplay:         "pcie_replay",
	probePowerViolation:     "power_violation",
	probeThermalViolation:   "thermal_violation",
	probeProcesses:          "processes",
	probeProcessUtilization: "process_utilization",
	probeGPM:                "gpm",
}

// criticalXIDs are the XID codes that make a GPU unhealthy for the sample in
// which they arrive: hardware and driver faults, not application errors.
var criticalXIDs = map[uint64]bool{48: true, 62: true, 64: true, 74: true, 79: true, 95: true, 119: true, 120: true}

// maxEventsPerSample bounds how many queued events one Sample drains.
const maxEventsPerSample = 256

// device is the backend's state of one GPU.
type device struct {
	h          gonvml.Device
	info       collector.GPU // its entry in the last inventory
	uuid       string
	index      int
	mig        bool
	migs       []migDevice // parallel to collector.GPU.Instances
	lost       bool        // ERROR_GPU_IS_LOST seen: never queried again
	registered bool        // XID events registered
	notSupp    uint32      // bit per probe: NVML said NOT_SUPPORTED
	failing    uint32      // bit per probe: the last read failed (logged once)

	xids     []collector.XIDCount // cumulative, sorted by code
	xidLast  float64              // last XID code; 0 when none yet; -1 when XID events are unavailable
	critical bool                 // a critical XID arrived since the last Sample

	lastProcTS uint64             // newest per-process utilization timestamp seen, µs
	procUtil   map[uint32]float64 // scratch: PID → SM utilization of the newest sample, 0–1
	procTS     map[uint32]uint64  // scratch: PID → timestamp of that sample, µs
	fields     [1]gonvml.FieldValue
	gpm        *gpmSampler // nil without GPM, and on MIG-enabled GPUs (their instances have one)
}

// migDevice is the backend's state of one MIG device.
type migDevice struct {
	h       gonvml.Device
	giID    int
	notSupp uint32
	gpm     *gpmSampler
}

// keepState carries what a GPU accumulated over into its new inventory entry:
// a GPU once lost stays lost.
func (d *device) keepState(prev *device) {
	d.lost = d.lost || prev.lost
	d.registered = prev.registered
	d.xids = prev.xids
	d.xidLast = prev.xidLast
	d.critical = prev.critical
	d.lastProcTS = prev.lastProcTS
	d.notSupp = prev.notSupp
}

// Sample reads every GPU of the last Inventory into s. It drains the XID event
// queue without waiting, reads each GPU and its MIG devices, and returns
// collector.ErrInventoryChanged when the MIG layout changed.
func (b *Backend) Sample(ctx context.Context, _ time.Time, s *collector.Sample, errs collector.ErrorCounter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.GPUs) != len(b.devs) {
		return fmt.Errorf("sample sized for %d GPUs, inventory has %d", len(s.GPUs), len(b.devs))
	}
	changed := b.pollEvents(errs)
	read := 0
	for i, d := range b.devs {
		r := &s.GPUs[i]
		if len(r.Instances) != len(d.migs) {
			return fmt.Errorf("sample sized for %d MIG instances on GPU %s, inventory has %d", len(r.Instances), d.uuid, len(d.migs))
		}
		ok, migGone := b.sampleGPU(d, r, errs)
		changed = changed || migGone
		if ok {
			read++
		}
	}
	if changed {
		return collector.ErrInventoryChanged
	}
	if read == 0 && len(b.devs) > 0 {
		return errors.New("no GPU could be read")
	}
	return nil
}

// pollEvents drains the XID event queue with a zero timeout and reports whether
// a MIG reconfiguration was among the events.
func (b *Backend) pollEvents(errs collector.ErrorCounter) (migChanged bool) {
	if b.events == nil {
		return false
	}
	for range maxEventsPerSample {
		e, ret := b.events.Wait(0)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_TIMEOUT:
			b.eventsWaitFailing = false
			return migChanged
		case gonvml.ERROR_GPU_IS_LOST:
			if d := b.deviceOf(e.Device); d != nil {
				b.markLost(d)
			}
			continue
		default:
			errs.Inc("xid_events")
			if !b.eventsWaitFailing {
				b.eventsWaitFailing = true
				b.log.Warn("reading XID events failed; counted in gputally_sample_errors_total{field=\"xid_events\"} until it recovers", "err", ret)
			}
			return migChanged
		}
		if e.EventType&gonvml.EventMigConfigChange != 0 {
			migChanged = true
		}
		if e.EventType&gonvml.EventTypeXidCriticalError != 0 {
			d := b.deviceOf(e.Device)
			if d == nil {
				b.log.Warn("XID event from an unknown GPU", "xid", e.EventData)
				continue
			}
			d.addXID(e.EventData)
			b.log.Warn("XID event", "uuid", d.uuid, "xid", e.EventData, "gpu_instance", int32(e.GpuInstanceId))
		}
	}
	return migChanged
}

// deviceOf finds the GPU an event came from: by handle, else by UUID (of the
// device or, for a MIG device, of its parent).
func (b *Backend) deviceOf(h gonvml.Device) *device {
	if h == nil {
		return nil
	}
	if reflect.TypeOf(h).Comparable() {
		for _, d := range b.devs {
			if reflect.TypeOf(d.h) == reflect.TypeOf(h) && d.h == h {
				return d
			}
		}
	}
	if parent, ret := h.GetDeviceHandleFromMigDeviceHandle(); ret == gonvml.SUCCESS {
		h = parent
	}
	uuid, ret := h.GetUUID()
	if ret != gonvml.SUCCESS {
		return nil
	}
	for _, d := range b.devs {
		if d.uuid == uuid {
			return d
		}
	}
	return nil
}

// addXID counts one XID event of code xid.
func (d *device) addXID(xid uint64) {
	i, found := slices.BinarySearchFunc(d.xids, xid, func(c collector.XIDCount, x uint64) int { return cmp.Compare(c.XID, x) })
	if found {
		d.xids[i].Count++
	} else {
		d.xids = slices.Insert(d.xids, i, collector.XIDCount{XID: xid, Count: 1})
	}
	d.xidLast = float64(xid)
	if criticalXIDs[xid] {
		d.critical = true
	}
}

func (b *Backend) markLost(d *device) {
	if !d.lost {
		b.log.Error("GPU is lost (fell off the bus); no longer read", "uuid", d.uuid, "index", d.index)
	}
	d.lost = true
}

// sampleGPU reads d into r. ok is false when every read failed; migGone is true
// when a MIG device no longer exists.
func (b *Backend) sampleGPU(d *device, r *collector.GPUReading, errs collector.ErrorCounter) (ok, migGone bool) {
	r.Values.Reset()
	if len(d.xids) > 0 {
		r.XIDs = append(r.XIDs[:0], d.xids...)
	}
	defer func() {
		r.Lost = d.lost
		r.Healthy = !d.lost && !d.critical
		d.critical = false
		if d.lost {
			r.Values.Reset()
			for i := range r.Instances {
				r.Instances[i].Reset()
			}
			r.Processes, r.ProcessesKnown = nil, false
			ok = true // a lost GPU is a reading too
		}
	}()
	if d.lost {
		return true, false
	}
	rd := reading{b: b, d: d, errs: errs, v: &r.Values}
	h := d.h

	if !d.mig && rd.want(probeUtilization) {
		u, ret := h.GetUtilizationRates()
		if rd.check(probeUtilization, ret) {
			r.Values.Set(collector.GPUUtil, float64(u.Gpu))
			r.Values.Set(collector.MemCopyUtil, float64(u.Memory))
		}
	}
	rd.memory(h, &d.notSupp, &r.Values)
	if rd.want(probeTemperature) {
		t, ret := h.GetTemperature(gonvml.TEMPERATURE_GPU)
		rd.set(probeTemperature, ret, collector.GPUTemp, float64(t))
	}
	rd.memoryTemperature()
	if rd.want(probePower) {
		mw, ret := h.GetPowerUsage()
		rd.set(probePower, ret, collector.PowerUsage, float64(mw)/1000)
	}
	if rd.want(probeEnergy) {
		mj, ret := h.GetTotalEnergyConsumption()
		rd.set(probeEnergy, ret, collector.TotalEnergy, float64(mj))
	}
	if rd.want(probeSMClock) {
		mhz, ret := h.GetClockInfo(gonvml.CLOCK_SM)
		rd.set(probeSMClock, ret, collector.SMClock, float64(mhz))
	}
	if rd.want(probeMemClock) {
		mhz, ret := h.GetClockInfo(gonvml.CLOCK_MEM)
		rd.set(probeMemClock, ret, collector.MemClock, float64(mhz))
	}
	if rd.want(probeECCSBE) {
		n, ret := h.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC)
		rd.set(probeECCSBE, ret, collector.ECCSBEVolatile, float64(n))
	}
	if rd.want(probeECCDBE) {
		n, ret := h.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
		rd.set(probeECCDBE, ret, collector.ECCDBEVolatile, float64(n))
	}
	if rd.want(probePCIeReplay) {
		n, ret := h.GetPcieReplayCounter()
		rd.set(probePCIeReplay, ret, collector.PCIeReplay, float64(n))
	}
	if rd.want(probePowerViolation) {
		v, ret := h.GetViolationStatus(gonvml.PERF_POLICY_POWER)
		rd.set(probePowerViolation, ret, collector.PowerViolation, float64(v.ViolationTime)/1000)
	}
	if rd.want(probeThermalViolation) {
		v, ret := h.GetViolationStatus(gonvml.PERF_POLICY_THERMAL)
		rd.set(probeThermalViolation, ret, collector.ThermalViolation, float64(v.ViolationTime)/1000)
	}
	if d.xidLast >= 0 {
		r.Values.Set(collector.XIDLast, d.xidLast)
	}
	rd.gpm(d.gpm, -1, &d.notSupp, &r.Values)
	rd.processes(r)
	for i := range d.migs {
		if d.lost {
			break
		}
		m := &d.migs[i]
		mr := reading{b: b, d: d, errs: errs, v: &r.Instances[i]}
		r.Instances[i].Reset()
		if ret := mr.memory(m.h, &m.notSupp, &r.Instances[i]); ret == gonvml.ERROR_NOT_FOUND || ret == gonvml.ERROR_INVALID_ARGUMENT {
			migGone = true // the MIG device was destroyed
		}
		mr.gpm(m.gpm, m.giID, &m.notSupp, &r.Instances[i])
		rd.ok += mr.ok
		rd.failed += mr.failed
	}
	return rd.ok > 0 || rd.failed == 0, migGone
}

// reading reads the probes of one device within one Sample.
type reading struct {
	b          *Backend
	d          *device
	errs       collector.ErrorCounter
	v          *collector.Values
	ok, failed int
}

// want reports whether p is worth reading: the GPU is not lost and p was never
// reported unsupported.
func (rd *reading) want(p probe) bool {
	return !rd.d.lost && rd.d.notSupp&(1<<p) == 0
}

// set stores x as f when ret is SUCCESS.
func (rd *reading) set(p probe, ret gonvml.Return, f collector.Field, x float64) {
	if rd.check(p, ret) {
		rd.v.Set(f, x)
	}
}

// check classifies the result of reading p into notSupp: SUCCESS → true;
// NOT_SUPPORTED → remembered, false; GPU_IS_LOST → the GPU is lost, false; any
// other error → counted, logged once until it recovers, false.
func (rd *reading) check(p probe, ret gonvml.Return) bool {
	return rd.classify(p, ret, &rd.d.notSupp)
}

func (rd *reading) classify(p probe, ret gonvml.Return, notSupp *uint32) bool {
	d, bit := rd.d, uint32(1)<<p
	switch ret {
	case gonvml.SUCCESS:
		rd.ok++
		if d.failing&bit != 0 {
			d.failing &^= bit
			rd.b.log.Info("NVML read recovered", "uuid", d.uuid, "field", probeNames[p])
		}
		return true
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		*notSupp |= bit
		rd.b.log.Debug("NVML field not supported; absent from now on", "uuid", d.uuid, "field", probeNames[p])
		return false
	case gonvml.ERROR_GPU_IS_LOST:
		rd.b.markLost(d)
		return false
	default:
		rd.failed++
		rd.errs.Inc(probeNames[p])
		if d.failing&bit == 0 {
			d.failing |= bit
			rd.b.log.Warn("NVML read failed; absent until it recovers", "uuid", d.uuid, "field", probeNames[p], "err", ret)
		}
		return false
	}
}

// memory reads the framebuffer of h (a GPU or a MIG device) into v, through
// the v2 call (with reserved memory) where the driver has it. It returns the
// result of the last call made.
func (rd *reading) memory(h gonvml.Device, notSupp *uint32, v *collector.Values) gonvml.Return {
	if rd.d.lost {
		return gonvml.ERROR_GPU_IS_LOST
	}
	if *notSupp&(1<<probeMemoryV2) == 0 {
		m, ret := h.GetMemoryInfo_v2()
		if rd.classify(probeMemoryV2, ret, notSupp) {
			v.Set(collector.FBUsed, float64(m.Used/mib))
			v.Set(collector.FBFree, float64(m.Free/mib))
			v.Set(collector.FBReserved, float64(m.Reserved/mib))
		}
		if *notSupp&(1<<probeMemoryV2) == 0 {
			return ret
		}
	}
	if *notSupp&(1<<probeMemory) != 0 || rd.d.lost {
		return gonvml.ERROR_NOT_SUPPORTED
	}
	m, ret := h.GetMemoryInfo()
	if rd.classify(probeMemory, ret, notSupp) {
		v.Set(collector.FBUsed, float64(m.Used/mib))
		v.Set(collector.FBFree, float64(m.Free/mib))
	}
	return ret
}

// memoryTemperature reads the HBM temperature, a field value only some GPUs have.
func (rd *reading) memoryTemperature() {
	if !rd.want(probeMemoryTemperature) {
		return
	}
	f := &rd.d.fields
	f[0] = gonvml.FieldValue{FieldId: gonvml.FI_DEV_MEMORY_TEMP}
	ret := rd.d.h.GetFieldValues(f[:])
	if ret == gonvml.SUCCESS {
		ret = gonvml.Return(f[0].NvmlReturn)
	}
	if x, ok := fieldValue(f[0]); rd.check(probeMemoryTemperature, ret) && ok {
		rd.v.Set(collector.MemoryTemp, x)
	}
}

// fieldValue decodes an NVML field value of any numeric type.
func fieldValue(f gonvml.FieldValue) (float64, bool) {
	b := f.Value[:]
	switch gonvml.ValueType(f.ValueType) {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b))), true
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b))), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b)), true
	}
	return 0, false
}

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE: NVML could not read a process's memory.
const valueNotAvailable = math.MaxUint64

// processes lists the GPU's compute processes with their memory and, where
// NVML keeps per-process samples, their SM utilization since the last Sample.
func (rd *reading) processes(r *collector.GPUReading) {
	d := rd.d
	if !rd.want(probeProcesses) {
		return
	}
	procs, ret := d.h.GetComputeRunningProcesses()
	if !rd.check(probeProcesses, ret) {
		return
	}
	r.ProcessesKnown = true
	if len(procs) == 0 {
		return
	}
	util := rd.processUtilization()
	r.Processes = make([]collector.Process, len(procs))
	for i, p := range procs {
		gi := -1
		if d.mig && p.GpuInstanceId != math.MaxUint32 {
			gi = int(p.GpuInstanceId)
		}
		used := p.UsedGpuMemory
		if used == valueNotAvailable {
			used = 0
		}
		u, ok := util[p.Pid]
		if !ok {
			u = math.NaN()
		}
		r.Processes[i] = collector.Process{PID: p.Pid, GPUInstanceID: gi, UsedMemoryBytes: used, Utilization: u}
	}
	slices.SortFunc(r.Processes, func(a, b collector.Process) int { return cmp.Compare(a.PID, b.PID) })
}

// processUtilization returns PID → SM utilization (0–1) of the newest sample
// NVML took of each process since the last call, or nil when it has none.
func (rd *reading) processUtilization() map[uint32]float64 {
	d := rd.d
	if !rd.want(probeProcessUtilization) {
		return nil
	}
	samples, ret := d.h.GetProcessUtilization(d.lastProcTS)
	if ret == gonvml.ERROR_NOT_FOUND { // no samples since lastProcTS
		return nil
	}
	if !rd.check(probeProcessUtilization, ret) {
		return nil
	}
	if d.procUtil == nil {
		d.procUtil, d.procTS = make(map[uint32]float64), make(map[uint32]uint64)
	}
	clear(d.procUtil)
	clear(d.procTS)
	for _, s := range samples {
		if ts, ok := d.procTS[s.Pid]; ok && ts > s.TimeStamp {
			continue
		}
		d.procTS[s.Pid] = s.TimeStamp
		d.procUtil[s.Pid] = float64(s.SmUtil) / 100
		d.lastProcTS = max(d.lastProcTS, s.TimeStamp)
	}
	return d.procUtil
}
