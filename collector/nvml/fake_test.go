package nvml

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// hw is what one fake GPU or MIG device reports. Tests change it between samples.
type hw struct {
	mu sync.Mutex

	util          gonvml.Utilization
	mem           gonvml.Memory_v2
	temp          uint32
	memTemp       uint32
	powerMW       uint32
	energyMJ      uint64
	smMHz, memMHz uint32
	sbe, dbe      uint64
	replay        int
	powerViolNS   uint64
	thermalViolNS uint64
	procs         []gonvml.ProcessInfo
	procUtil      []gonvml.ProcessUtilizationSample
	// gpm is what the GPM metrics report between two samples, in percent:
	// graphics, SM, tensor and DRAM activity.
	gpm [4]float64

	// ret overrides the result of one call by name ("power", "memory_v2", ...);
	// lost makes every call return ERROR_GPU_IS_LOST.
	ret   map[string]gonvml.Return
	lost  bool
	calls map[string]int
	// procUtilSince records the lastSeenTimestamp of each GetProcessUtilization call.
	procUtilSince []uint64
}

func newHW() *hw {
	return &hw{ret: map[string]gonvml.Return{}, calls: map[string]int{}}
}

// call counts a call and returns its result.
func (h *hw) call(name string) gonvml.Return {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[name]++
	if h.lost {
		return gonvml.ERROR_GPU_IS_LOST
	}
	if r, ok := h.ret[name]; ok {
		return r
	}
	return gonvml.SUCCESS
}

func (h *hw) set(f func(h *hw)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *hw) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[name]
}

// fakeNode is a go-nvml mock server with the readings the mock leaves unset
// wired to hw values, deterministic UUIDs and PCI addresses, MIG devices
// created through the mock's GPU and compute instance API, and an event queue.
type fakeNode struct {
	srv    *server.Server
	gpus   []*hw
	migs   [][]*hw // per GPU, per MIG device in GPU instance order
	events *fakeEvents
	inits  int

	gpmAllocated, gpmFreed int
}

// fakeGPMSample is a GPM sample buffer holding the hw.gpm values it was taken with.
type fakeGPMSample struct {
	node  *fakeNode
	vals  [4]float64
	taken bool
}

func (s *fakeGPMSample) Free() gonvml.Return                     { s.node.gpmFreed++; return gonvml.SUCCESS }
func (s *fakeGPMSample) Get(gonvml.Device) gonvml.Return         { return gonvml.ERROR_NOT_SUPPORTED }
func (s *fakeGPMSample) MigGet(gonvml.Device, int) gonvml.Return { return gonvml.ERROR_NOT_SUPPORTED }

// take records h's GPM values into the sample s.
func (h *hw) take(name string, s gonvml.GpmSample) gonvml.Return {
	r := h.call(name)
	if r == gonvml.SUCCESS {
		h.mu.Lock()
		s.(*fakeGPMSample).vals, s.(*fakeGPMSample).taken = h.gpm, true
		h.mu.Unlock()
	}
	return r
}

// pciBuses are the PCI buses of the GPUs of a DGX A100 / H100.
var pciBuses = []uint32{0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd}

// newFakeNode wires srv. mig maps a GPU index to the GPU instance profile IDs
// to create on it (MIG mode is enabled on those GPUs).
func newFakeNode(srv *server.Server, mig map[int][]int) *fakeNode {
	n := &fakeNode{srv: srv, events: &fakeEvents{}}
	srv.InitFunc = func() gonvml.Return { n.inits++; return gonvml.SUCCESS }
	srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return n.events.set(), gonvml.SUCCESS }
	srv.GpmSampleAllocFunc = func() (gonvml.GpmSample, gonvml.Return) {
		n.gpmAllocated++
		return &fakeGPMSample{node: n}, gonvml.SUCCESS
	}
	srv.GpmMetricsGetFunc = func(m *gonvml.GpmMetricsGetType) gonvml.Return {
		s1, s2 := m.Sample1.(*fakeGPMSample), m.Sample2.(*fakeGPMSample)
		if !s1.taken || !s2.taken || s1 == s2 {
			return gonvml.ERROR_INVALID_ARGUMENT
		}
		for i := range m.NumMetrics {
			m.Metrics[i].NvmlReturn = uint32(gonvml.SUCCESS)
			switch gonvml.GpmMetricId(m.Metrics[i].MetricId) {
			case gonvml.GPM_METRIC_GRAPHICS_UTIL:
				m.Metrics[i].Value = s2.vals[0]
			case gonvml.GPM_METRIC_SM_UTIL:
				m.Metrics[i].Value = s2.vals[1]
			case gonvml.GPM_METRIC_ANY_TENSOR_UTIL:
				m.Metrics[i].Value = s2.vals[2]
			case gonvml.GPM_METRIC_DRAM_BW_UTIL:
				m.Metrics[i].Value = s2.vals[3]
			default:
				m.Metrics[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
			}
		}
		return gonvml.SUCCESS
	}
	for i, dd := range srv.Devices {
		d := dd.(*server.Device)
		d.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", 0xa0+i, i)
		bus := pciBuses[i%len(pciBuses)]
		d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			p := gonvml.PciInfo{Domain: 0, Bus: bus, Device: 0}
			copy(p.BusId[:], cChars(fmt.Sprintf("00000000:%02x:00.0", bus)))
			return p, gonvml.SUCCESS
		}
		h := newHW()
		h.mem = gonvml.Memory_v2{Total: d.MemoryInfo.Total, Reserved: 512 * mib, Used: 1024 * mib}
		h.mem.Free = h.mem.Total - h.mem.Reserved - h.mem.Used
		wireDevice(&d.Device, h, d.UUID, false)
		hopper := d.Config.Architecture >= gonvml.DEVICE_ARCH_HOPPER
		d.GpmQueryDeviceSupportFunc = func() (gonvml.GpmSupport, gonvml.Return) {
			s := gonvml.GpmSupport{Version: gonvml.GPM_SUPPORT_VERSION}
			if hopper {
				s.IsSupportedDevice = 1
			}
			return s, h.call("gpm_support")
		}
		d.GpmSampleGetFunc = func(s gonvml.GpmSample) gonvml.Return { return h.take("gpm", s) }
		d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
			return gonvml.EventTypeXidCriticalError | gonvml.EventMigConfigChange | gonvml.EventTypeSingleBitEccError, h.call("supported_events")
		}
		d.RegisterEventsFunc = func(types uint64, _ gonvml.EventSet) gonvml.Return {
			n.events.registered = append(n.events.registered, registration{uuid: d.UUID, types: types})
			return h.call("register_events")
		}
		n.gpus = append(n.gpus, h)
		n.migs = append(n.migs, nil)
		n.wireMIG(i, d, mig[i])
	}
	return n
}

// wireMIG enables MIG on d with GPU instances of the given profile IDs, each
// with one compute instance spanning it, and wires the MIG device handles.
func (n *fakeNode) wireMIG(i int, d *server.Device, profiles []int) {
	var migs []gonvml.Device
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(j int) (gonvml.Device, gonvml.Return) {
		if j < 0 || j >= 7 {
			return nil, gonvml.ERROR_INVALID_ARGUMENT
		}
		if j >= len(migs) {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return migs[j], gonvml.SUCCESS
	}
	d.GetGpuInstanceByIdFunc = func(id int) (gonvml.GpuInstance, gonvml.Return) {
		d.RLock()
		defer d.RUnlock()
		for gi := range d.GpuInstances {
			if int(gi.Info.Id) == id {
				return gi, gonvml.SUCCESS
			}
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	if len(profiles) == 0 {
		return
	}
	d.SetMigMode(gonvml.DEVICE_MIG_ENABLE)
	for _, pid := range profiles {
		prof, ret := d.GetGpuInstanceProfileInfo(pid)
		must(ret)
		gi, ret := d.CreateGpuInstance(&prof)
		must(ret)
		ciProf, ret := gi.GetComputeInstanceProfileInfo(ciProfileFor(prof.SliceCount), gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		must(ret)
		_, ret = gi.CreateComputeInstance(&ciProf)
		must(ret)
	}
	// Collect the instances in a random map order, then list them in slot order.
	type inst struct {
		gi   *server.GpuInstance
		ci   *server.ComputeInstance
		prof gonvml.GpuInstanceProfileInfo
	}
	var insts []inst
	for gi := range d.GpuInstances {
		prof, _ := d.GetGpuInstanceProfileInfo(int(gi.Info.ProfileId))
		for ci := range gi.ComputeInstances {
			insts = append(insts, inst{gi, ci, prof})
		}
	}
	slices.SortFunc(insts, func(a, b inst) int { return cmp.Compare(a.gi.Info.Id, b.gi.Info.Id) })
	for _, in := range insts {
		h := newHW()
		h.mem = gonvml.Memory_v2{Total: in.prof.MemorySizeMB * mib, Reserved: 0, Used: 100 * mib * uint64(in.gi.Info.Id+1)}
		h.mem.Free = h.mem.Total - h.mem.Used
		m := &mock.Device{}
		uuid := fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", 0xa0+i, in.gi.Info.Id)
		wireDevice(m, h, uuid, true)
		giID, ciID, prof, parent := int(in.gi.Info.Id), int(in.ci.Info.Id), in.prof, d
		m.GetGpuInstanceIdFunc = func() (int, gonvml.Return) { return giID, h.call("gi_id") }
		m.GetComputeInstanceIdFunc = func() (int, gonvml.Return) { return ciID, h.call("ci_id") }
		m.GetAttributesFunc = func() (gonvml.DeviceAttributes, gonvml.Return) {
			return gonvml.DeviceAttributes{
				MultiprocessorCount:       prof.MultiprocessorCount,
				GpuInstanceSliceCount:     prof.SliceCount,
				ComputeInstanceSliceCount: prof.SliceCount,
				MemorySizeMB:              prof.MemorySizeMB,
			}, h.call("attributes")
		}
		m.GetDeviceHandleFromMigDeviceHandleFunc = func() (gonvml.Device, gonvml.Return) { return parent, gonvml.SUCCESS }
		migs = append(migs, m)
		n.migs[i] = append(n.migs[i], h)
	}
	d.GpmMigSampleGetFunc = func(giID int, s gonvml.GpmSample) gonvml.Return {
		for j, in := range insts {
			if int(in.gi.Info.Id) == giID {
				return n.migs[i][j].take("gpm", s)
			}
		}
		return gonvml.ERROR_NOT_FOUND
	}
}

// wireDevice wires the reads of a GPU or MIG device to h.
func wireDevice(d *mock.Device, h *hw, uuid string, mig bool) {
	d.GetUUIDFunc = func() (string, gonvml.Return) { return uuid, h.call("uuid") }
	d.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		r := h.call("memory_v2")
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.mem, r
	}
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		r := h.call("memory")
		h.mu.Lock()
		defer h.mu.Unlock()
		return gonvml.Memory{Total: h.mem.Total, Free: h.mem.Free, Used: h.mem.Used}, r
	}
	if mig {
		return
	}
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { r := h.call("utilization"); return h.util, r }
	d.GetTemperatureFunc = func(s gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		if s != gonvml.TEMPERATURE_GPU {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		r := h.call("temperature")
		return h.temp, r
	}
	d.GetFieldValuesFunc = func(v []gonvml.FieldValue) gonvml.Return {
		r := h.call("field_values")
		for i := range v {
			v[i].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
			if v[i].FieldId == gonvml.FI_DEV_MEMORY_TEMP {
				v[i].NvmlReturn = uint32(h.call("memory_temperature"))
				v[i].ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				v[i].Value = [8]byte{byte(h.memTemp), byte(h.memTemp >> 8)}
			}
		}
		return r
	}
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { r := h.call("power"); return h.powerMW, r }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) { r := h.call("energy"); return h.energyMJ, r }
	d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
		switch c {
		case gonvml.CLOCK_SM:
			r := h.call("sm_clock")
			return h.smMHz, r
		case gonvml.CLOCK_MEM:
			r := h.call("mem_clock")
			return h.memMHz, r
		}
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	d.GetTotalEccErrorsFunc = func(t gonvml.MemoryErrorType, c gonvml.EccCounterType) (uint64, gonvml.Return) {
		if c != gonvml.VOLATILE_ECC {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		if t == gonvml.MEMORY_ERROR_TYPE_CORRECTED {
			r := h.call("ecc_sbe")
			return h.sbe, r
		}
		r := h.call("ecc_dbe")
		return h.dbe, r
	}
	d.GetPcieReplayCounterFunc = func() (int, gonvml.Return) { r := h.call("pcie_replay"); return h.replay, r }
	d.GetViolationStatusFunc = func(p gonvml.PerfPolicyType) (gonvml.ViolationTime, gonvml.Return) {
		if p == gonvml.PERF_POLICY_POWER {
			r := h.call("power_violation")
			return gonvml.ViolationTime{ReferenceTime: 1, ViolationTime: h.powerViolNS}, r
		}
		r := h.call("thermal_violation")
		return gonvml.ViolationTime{ReferenceTime: 1, ViolationTime: h.thermalViolNS}, r
	}
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		r := h.call("processes")
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(h.procs), r
	}
	d.GetProcessUtilizationFunc = func(since uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		r := h.call("process_utilization")
		h.mu.Lock()
		defer h.mu.Unlock()
		h.procUtilSince = append(h.procUtilSince, since)
		var out []gonvml.ProcessUtilizationSample
		for _, s := range h.procUtil {
			if s.TimeStamp > since {
				out = append(out, s)
			}
		}
		if r == gonvml.SUCCESS && len(out) == 0 {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return out, r
	}
}

// ciProfileFor is the compute instance profile spanning a GPU instance of slices.
func ciProfileFor(slices uint32) int {
	switch slices {
	case 1:
		return gonvml.COMPUTE_INSTANCE_PROFILE_1_SLICE
	case 2:
		return gonvml.COMPUTE_INSTANCE_PROFILE_2_SLICE
	case 3:
		return gonvml.COMPUTE_INSTANCE_PROFILE_3_SLICE
	case 4:
		return gonvml.COMPUTE_INSTANCE_PROFILE_4_SLICE
	}
	return gonvml.COMPUTE_INSTANCE_PROFILE_7_SLICE
}

func must(r gonvml.Return) {
	if r != gonvml.SUCCESS {
		panic(r)
	}
}

func cChars(s string) []int8 {
	out := make([]int8, len(s))
	for i := range len(s) {
		out[i] = int8(s[i])
	}
	return out
}

type registration struct {
	uuid  string
	types uint64
}

// fakeEvents is an NVML event set with a queue the test fills.
type fakeEvents struct {
	mu         sync.Mutex
	queue      []gonvml.EventData
	waits      []uint32 // timeouts of every Wait call, ms
	created    int
	freed      int
	registered []registration
	fail       gonvml.Return // when not SUCCESS, Wait returns it
}

func (e *fakeEvents) set() gonvml.EventSet {
	e.created++
	return &mock.EventSet{
		WaitFunc: func(timeout uint32) (gonvml.EventData, gonvml.Return) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.waits = append(e.waits, timeout)
			if e.fail != gonvml.SUCCESS {
				return gonvml.EventData{}, e.fail
			}
			if len(e.queue) == 0 {
				return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
			}
			ev := e.queue[0]
			e.queue = e.queue[1:]
			return ev, gonvml.SUCCESS
		},
		FreeFunc: func() gonvml.Return { e.freed++; return gonvml.SUCCESS },
	}
}

func (e *fakeEvents) push(ev ...gonvml.EventData) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, ev...)
}

// countErrs is a collector.ErrorCounter.
type countErrs map[string]int

func (c countErrs) Inc(field string) { c[field]++ }
