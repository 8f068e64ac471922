// Package nvml is the NVML backend of the collector: it reads the GPUs of a node,
// their MIG instances, XID events and compute processes through go-nvml.
//
// It needs libnvidia-ml.so.1 (the NVIDIA driver) but neither root nor
// CAP_SYS_ADMIN. The NVML library is injected as an nvml.Interface so tests run on
// go-nvml's mock servers; production code passes nvml.New() through Open.
//
// A read NVML answers with NOT_SUPPORTED leaves its field absent and is not tried
// again on that device; any other failed read is counted under its field name
// ("power", "memory", "gpm", ...) and tried again next sample. A GPU that answers
// ERROR_GPU_IS_LOST reads as Lost from then on and is not called again. A GPU is
// healthy when it is not lost and no critical XID (48, 62, 64, 74, 79, 95, 119,
// 120) arrived since the previous sample; application XIDs such as 13, 31 and 43
// are counted but leave it healthy. DCGM_FI_PROF_* ratios come from GPM on
// Hopper and later GPUs (per MIG instance in MIG mode), from the second sample on.
package nvml

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gputally/gputally/collector"
)

// LibraryName is the shared library the NVML backend loads.
const LibraryName = "libnvidia-ml.so.1"

// ErrLibraryNotFound is returned (wrapped) by New and Open when libnvidia-ml.so.1
// cannot be loaded: the node has no NVIDIA driver, or the container does not
// mount it.
var ErrLibraryNotFound = errors.New(LibraryName + " not found")

// Backend is the NVML collector.Backend. Inventory, Sample and Close must be
// called from one goroutine (the sampler's); Close after sampling stopped.
type Backend struct {
	lib gonvml.Interface
	log *slog.Logger

	devs    []*device
	events  gonvml.EventSet // nil when XID events are unavailable
	gpmReq  gonvml.GpmMetricsGetType
	noEvent bool // EventSetCreate failed; not retried
	// eventsWaitFailing is true while EventSet.Wait fails (logged once).
	eventsWaitFailing bool
	closed            bool
}

// Open loads the system's libnvidia-ml.so.1 and returns a Backend over it.
func Open(logger *slog.Logger) (*Backend, error) {
	return New(gonvml.New(), logger)
}

// New initialises lib and returns a Backend over it. When lib cannot be
// initialised, New calls nothing else on it (not even Shutdown: calling into a
// library that failed to load aborts the process) and returns an error; the error
// wraps ErrLibraryNotFound when the library is missing. A nil logger discards.
func New(lib gonvml.Interface, logger *slog.Logger) (*Backend, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch ret := lib.Init(); ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, fmt.Errorf("initialise NVML: %w: install the NVIDIA driver or mount it into the container, or run with --backend=sim", ErrLibraryNotFound)
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("initialise NVML: %s is present but the NVIDIA kernel driver is not loaded (%w); run with --backend=sim to use a simulated node", LibraryName, ret)
	default:
		return nil, fmt.Errorf("initialise NVML (%s): %w", LibraryName, ret)
	}
	return &Backend{lib: lib, log: logger}, nil
}

// Name returns "nvml".
func (b *Backend) Name() string { return "nvml" }

// Close frees the event set and shuts NVML down. It is safe to call more than once.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	freeGPMs(b.devs)
	if b.events != nil {
		if ret := b.events.Free(); ret != gonvml.SUCCESS {
			b.log.Debug("free NVML event set", "err", ret)
		}
		b.events = nil
	}
	if ret := b.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("shut down NVML: %w", ret)
	}
	return nil
}

// Inventory reads the node's GPUs and MIG instances. A GPU whose handle or UUID
// cannot be read is left out (and logged), unless the previous inventory listed
// it and it was lost or now answers ERROR_GPU_IS_LOST: a GPU once listed and lost
// stays listed as it was last read (UUID, model, index, MIG instances) and reads
// as Lost, so the ledger keeps charging its capital as lost. A GPU lost while
// first read is listed with what could be read and reads as Lost. XID events are
// registered for GPUs not seen before.
func (b *Backend) Inventory(ctx context.Context) (collector.Inventory, error) {
	if err := ctx.Err(); err != nil {
		return collector.Inventory{}, err
	}
	var inv collector.Inventory
	driver, ret := b.lib.SystemGetDriverVersion()
	if ret == gonvml.SUCCESS {
		inv.DriverVersion = driver
	} else {
		b.log.Warn("read NVIDIA driver version", "err", ret)
	}
	n, ret := b.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return collector.Inventory{}, fmt.Errorf("count NVML devices: %w", ret)
	}
	old := make(map[string]*device, len(b.devs))
	for _, d := range b.devs {
		old[d.uuid] = d
	}
	devs := make([]*device, 0, n)
	listed := make(map[string]bool, n)
	for i := range n {
		g, d, err := b.readIndex(i)
		if err != nil {
			prev := b.deviceAt(i)
			if prev == nil || !prev.lost && !errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
				b.log.Warn("GPU left out of the inventory", "index", i, "err", err)
				continue
			}
			b.markLost(prev)
			g, d = prev.info, prev
		} else if prev, ok := old[g.UUID]; ok {
			d.keepState(prev)
			if d.lost { // lost before or while it was read: listed as it was
				b.markLost(prev)
				g, d = prev.info, prev
			}
		}
		if listed[d.uuid] {
			continue
		}
		listed[d.uuid] = true
		d.info = g
		inv.GPUs = append(inv.GPUs, g)
		devs = append(devs, d)
	}
	for _, d := range b.devs {
		if d.lost && !listed[d.uuid] { // no longer enumerated at all
			inv.GPUs = append(inv.GPUs, d.info)
			devs = append(devs, d)
		}
	}
	freeGPMs(b.devs)
	for _, d := range devs {
		b.setupGPM(d)
	}
	b.devs = devs
	b.registerEvents()
	return inv, nil
}

// readIndex reads the static facts of the GPU NVML enumerates at index i.
func (b *Backend) readIndex(i int) (collector.GPU, *device, error) {
	h, ret := b.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return collector.GPU{}, nil, fmt.Errorf("get handle: %w", ret)
	}
	return b.readGPU(i, h)
}

// deviceAt returns the GPU of the last inventory with NVML index i, or nil.
func (b *Backend) deviceAt(i int) *device {
	for _, d := range b.devs {
		if d.index == i {
			return d
		}
	}
	return nil
}

// readGPU reads the static facts of the GPU at index.
func (b *Backend) readGPU(index int, h gonvml.Device) (collector.GPU, *device, error) {
	g := collector.GPU{Index: index}
	d := &device{h: h, index: index, xidLast: -1}
	var ret gonvml.Return
	if g.UUID, ret = h.GetUUID(); ret != gonvml.SUCCESS {
		return g, nil, fmt.Errorf("read UUID: %w", ret)
	}
	d.uuid = g.UUID
	// Everything below is best effort: a GPU with a UUID is listed.
	lost := func(what string, r gonvml.Return) {
		if r == gonvml.ERROR_GPU_IS_LOST {
			d.lost = true
		}
		if r != gonvml.SUCCESS && r != gonvml.ERROR_NOT_SUPPORTED {
			b.log.Warn("read GPU inventory", "uuid", g.UUID, "what", what, "err", r)
		}
	}
	if idx, r := h.GetIndex(); r == gonvml.SUCCESS {
		g.Index, d.index = idx, idx
	}
	pci, r := h.GetPciInfo()
	lost("pci_info", r)
	if r == gonvml.SUCCESS {
		g.PCIBusID = pciBusID(pci)
	}
	g.Model, r = h.GetName()
	lost("name", r)
	g.Minor, r = h.GetMinorNumber()
	lost("minor_number", r)
	if r != gonvml.SUCCESS {
		g.Minor = g.Index
	}
	mem, r := h.GetMemoryInfo()
	lost("memory", r)
	if r == gonvml.SUCCESS {
		g.MemoryTotalMiB = mem.Total / mib
	}
	cur, _, r := h.GetMigMode()
	lost("mig_mode", r)
	if r == gonvml.SUCCESS && cur == gonvml.DEVICE_MIG_ENABLE && !d.lost {
		g.MIGEnabled = true
		d.mig = true
		g.Instances, d.migs = b.readMIG(g.UUID, h, mem.Total)
	}
	return g, d, nil
}

// readMIG lists the MIG devices of a MIG-enabled GPU, sorted by GPU instance and
// compute instance ID. totalBytes is the GPU's framebuffer size.
func (b *Backend) readMIG(parentUUID string, h gonvml.Device, totalBytes uint64) ([]collector.MIGInstance, []migDevice) {
	max, ret := h.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		b.log.Warn("count MIG devices", "uuid", parentUUID, "err", ret)
		return nil, nil
	}
	type pair struct {
		inst collector.MIGInstance
		dev  migDevice
	}
	var found []pair
	for j := range max {
		m, ret := h.GetMigDeviceHandleByIndex(j)
		if ret == gonvml.ERROR_NOT_FOUND || ret == gonvml.ERROR_INVALID_ARGUMENT {
			continue // an empty slot
		}
		if ret != gonvml.SUCCESS {
			b.log.Warn("read MIG device handle", "uuid", parentUUID, "slot", j, "err", ret)
			continue
		}
		inst, err := b.readMIGDevice(h, m, totalBytes)
		if err != nil {
			b.log.Warn("MIG device left out of the inventory", "uuid", parentUUID, "slot", j, "err", err)
			continue
		}
		found = append(found, pair{inst, migDevice{h: m, giID: inst.GPUInstanceID}})
	}
	slices.SortFunc(found, func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.inst.GPUInstanceID, b.inst.GPUInstanceID),
			cmp.Compare(a.inst.ComputeInstanceID, b.inst.ComputeInstanceID))
	})
	insts := make([]collector.MIGInstance, len(found))
	devs := make([]migDevice, len(found))
	for i, p := range found {
		insts[i], devs[i] = p.inst, p.dev
	}
	return insts, devs
}

// readMIGDevice reads one MIG device: its UUID, instance IDs and profile.
func (b *Backend) readMIGDevice(parent, m gonvml.Device, totalBytes uint64) (collector.MIGInstance, error) {
	var inst collector.MIGInstance
	var ret gonvml.Return
	if inst.UUID, ret = m.GetUUID(); ret != gonvml.SUCCESS {
		return inst, fmt.Errorf("read MIG UUID: %w", ret)
	}
	if inst.GPUInstanceID, ret = m.GetGpuInstanceId(); ret != gonvml.SUCCESS {
		return inst, fmt.Errorf("read GPU instance ID of %s: %w", inst.UUID, ret)
	}
	if inst.ComputeInstanceID, ret = m.GetComputeInstanceId(); ret != gonvml.SUCCESS {
		return inst, fmt.Errorf("read compute instance ID of %s: %w", inst.UUID, ret)
	}
	prof, ok := b.gpuInstanceProfile(parent, m, inst.GPUInstanceID)
	if !ok {
		return inst, fmt.Errorf("no GPU instance profile found for %s", inst.UUID)
	}
	inst.Profile = profileName(prof, totalBytes)
	inst.ComputeSlices = int(prof.SliceCount)
	inst.MemorySlices = memorySlices(prof.MemorySizeMB, totalBytes)
	inst.MemoryTotalMiB = prof.MemorySizeMB
	if gi, ret := parent.GetGpuInstanceById(inst.GPUInstanceID); ret == gonvml.SUCCESS {
		if info, ret := gi.GetInfo(); ret == gonvml.SUCCESS && info.Placement.Size > 0 {
			inst.PlacementStart, inst.PlacementSize = int(info.Placement.Start), int(info.Placement.Size)
		}
	}
	return inst, nil
}

// gpuInstanceProfile finds the profile of GPU instance giID on parent: through
// the GPU instance itself where NVML allows it, else by matching the MIG
// device's slice count and memory size against the profiles parent supports.
func (b *Backend) gpuInstanceProfile(parent, m gonvml.Device, giID int) (gonvml.GpuInstanceProfileInfo, bool) {
	if gi, ret := parent.GetGpuInstanceById(giID); ret == gonvml.SUCCESS {
		if info, ret := gi.GetInfo(); ret == gonvml.SUCCESS {
			if prof, ret := parent.GetGpuInstanceProfileInfo(int(info.ProfileId)); ret == gonvml.SUCCESS {
				return prof, true
			}
		}
	}
	attrs, ret := m.GetAttributes()
	if ret != gonvml.SUCCESS {
		return gonvml.GpuInstanceProfileInfo{}, false
	}
	for id := range gonvml.GPU_INSTANCE_PROFILE_COUNT {
		prof, ret := parent.GetGpuInstanceProfileInfo(id)
		if ret != gonvml.SUCCESS {
			continue
		}
		if prof.SliceCount == attrs.GpuInstanceSliceCount && prof.MemorySizeMB == attrs.MemorySizeMB {
			return prof, true
		}
	}
	return gonvml.GpuInstanceProfileInfo{}, false
}

// registerEvents creates the event set once and registers XID and MIG
// reconfiguration events for every GPU not yet registered. A GPU that does not
// support XID events has no XID readings.
func (b *Backend) registerEvents() {
	if b.events == nil && !b.noEvent {
		set, ret := b.lib.EventSetCreate()
		if ret != gonvml.SUCCESS {
			b.noEvent = true
			b.log.Warn("XID events unavailable: create NVML event set", "err", ret)
			return
		}
		b.events = set
	}
	if b.events == nil {
		return
	}
	for _, d := range b.devs {
		if d.registered || d.lost {
			continue
		}
		supported, ret := d.h.GetSupportedEventTypes()
		if ret != gonvml.SUCCESS {
			b.log.Info("XID events unavailable for GPU", "uuid", d.uuid, "err", ret)
			continue
		}
		want := supported & (gonvml.EventTypeXidCriticalError | gonvml.EventMigConfigChange)
		if want&gonvml.EventTypeXidCriticalError == 0 {
			b.log.Info("XID events not supported by GPU", "uuid", d.uuid)
			continue
		}
		if ret := d.h.RegisterEvents(want, b.events); ret != gonvml.SUCCESS {
			b.log.Warn("register XID events", "uuid", d.uuid, "err", ret)
			continue
		}
		d.registered = true
		if d.xidLast < 0 {
			d.xidLast = 0
		}
	}
}

const mib = 1 << 20

// pciBusID formats a PCI address the way nvidia-smi and DCGM do: "00000000:07:00.0".
func pciBusID(p gonvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return strings.ToUpper(s)
	}
	return fmt.Sprintf("%08X:%02X:%02X.0", p.Domain, p.Bus, p.Device)
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// profileName derives the nvidia-smi name of a GPU instance profile, such as
// "1g.10gb" or "1g.10gb+me", from its slice count and memory size: memory in
// eighths of the GPU's framebuffer, times the framebuffer in whole GiB (rounded
// up), rounded to whole GB. totalBytes is the GPU's framebuffer size.
func profileName(p gonvml.GpuInstanceProfileInfo, totalBytes uint64) string {
	const gib = 1 << 30
	totalGiB := float64((totalBytes + gib - 1) / gib)
	eighths := memorySlices(p.MemorySizeMB, totalBytes)
	gb := uint64(math.Round(float64(eighths) / 8 * totalGiB))
	name := fmt.Sprintf("%dg.%dgb", p.SliceCount, gb)
	switch p.Id {
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1:
		name += "+me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		name += "+me.all"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		name += "-me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		name += "+gfx"
	}
	return name
}

// memorySlices is how many eighths of a GPU of totalBytes a GPU instance of
// memMiB holds, rounded to the nearest eighth: real profiles are a little under
// their share of the framebuffer the driver reports, some mocks a little over.
func memorySlices(memMiB, totalBytes uint64) int {
	if totalBytes == 0 {
		return 0
	}
	frac := float64(memMiB) * mib / float64(totalBytes)
	return max(1, min(8, int(math.Round(frac*8))))
}
