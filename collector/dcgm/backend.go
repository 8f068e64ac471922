// Package dcgm is the collector.Backend that reads GPUs and MIG instances
// through NVIDIA DCGM (go-dcgm), embedded in the process or through a remote
// nv-hostengine. It adds what NVML alone lacks on most GPUs: the profiling
// fields (DCGM_FI_PROF_*, per MIG instance too) and DCGM's health watches.
//
// All DCGM calls sit behind the small client interface; the conversion from
// DCGM values to the metric contract is plain Go and tested with a fake.
package dcgm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/collector"
)

// ErrLibraryNotFound is returned (wrapped) by New when libdcgm.so.4 cannot be
// loaded. `--backend=auto` falls back to NVML on it; `--backend=dcgm` exits 2.
var ErrLibraryNotFound = errors.New("DCGM library libdcgm.so.4 not found")

// ErrDisconnected is returned (wrapped) by Sample and Inventory while the
// hostengine connection is down; the backend reconnects with exponential
// backoff on later calls. The sampler publishes gputally_up{backend="dcgm"} 0
// for every failed Sample.
var ErrDisconnected = errors.New("DCGM hostengine connection lost")

// Options configures a Backend.
type Options struct {
	// Hostengine is "HOST:PORT" of a running nv-hostengine; empty starts DCGM
	// embedded in this process.
	Hostengine string
	// Interval at which DCGM samples the watched fields; use the sampler's
	// interval. Default 1s.
	Interval time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnect attempts;
	// defaults 1s and 1m.
	MinBackoff, MaxBackoff time.Duration
	// Now returns the current time; default time.Now. Only reconnect backoff uses it.
	Now    func() time.Time
	Logger *slog.Logger
}

// Backend reads GPUs through DCGM. Like every collector.Backend it is used
// from one goroutine (the sampler's); it is not safe for concurrent use.
type Backend struct {
	opts Options
	dial dialer
	log  *slog.Logger

	cl           client // nil while disconnected
	backoff      time.Duration
	nextDial     time.Time
	profiling    bool // the DCGM_FI_PROF_* fields are watched
	health       bool // DCGM's health watches are set
	healthWarned bool // their absence was logged

	inv       collector.Inventory
	gpus      []gpuState  // parallel to inv.GPUs
	gpuEnts   []entity    // parallel to inv.GPUs
	instEnts  []entity    // every MIG GPU instance
	instOf    []deviceRef // parallel to instEnts
	gpuFields []uint16
	instField []uint16
	// rediscover is set when a Sample found the MIG hierarchy changed: the next
	// Inventory reads the devices again.
	rediscover bool

	unsupported map[entityField]bool
	logged      map[uint16]bool // fields whose lack of support was logged
	xids        map[string][]collector.XIDCount
	xidSince    time.Time
}

type gpuState struct {
	id      uint // DCGM GPU id
	lost    bool
	healthy bool
}

type deviceRef struct{ gpu, inst int }

type entityField struct {
	e     entity
	field uint16
}

// New connects to DCGM (embedded, or the hostengine in opts) and reads the
// inventory. Without libdcgm it returns an error wrapping ErrLibraryNotFound
// that names the alternatives; DCGM is then never called.
func New(opts Options) (*Backend, error) {
	return newBackend(opts, realDialer(opts.Hostengine))
}

func newBackend(opts Options, dial dialer) (*Backend, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(time.Minute, opts.MinBackoff)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Backend{
		opts:        opts,
		dial:        dial,
		log:         opts.Logger.With("backend", "dcgm"),
		unsupported: map[entityField]bool{},
		logged:      map[uint16]bool{},
		xids:        map[string][]collector.XIDCount{},
		xidSince:    opts.Now(),
	}
	if err := b.connect(context.Background()); err != nil {
		if errors.Is(err, ErrLibraryNotFound) {
			return nil, fmt.Errorf("%w; install DCGM 4 or use --backend=nvml or --backend=sim", err)
		}
		return nil, err
	}
	return b, nil
}

// Name returns "dcgm".
func (b *Backend) Name() string { return "dcgm" }

// Inventory returns the GPUs and MIG instances DCGM reported at the last
// (re)connect, or reads them again when a Sample found the MIG hierarchy
// changed. While disconnected it tries to reconnect, subject to backoff.
func (b *Backend) Inventory(ctx context.Context) (collector.Inventory, error) {
	switch {
	case b.cl == nil:
		if err := b.reconnect(ctx); err != nil {
			return collector.Inventory{}, err
		}
	case b.rediscover:
		if err := b.discover(ctx); err != nil {
			if connectionLost(err) {
				return collector.Inventory{}, b.lose(err)
			}
			return collector.Inventory{}, fmt.Errorf("read DCGM devices again after a MIG change: %w", err)
		}
	}
	b.rediscover = false
	return b.inv, nil
}

// Close disconnects from DCGM. It is safe to call more than once.
func (b *Backend) Close() error {
	if b.cl == nil {
		return nil
	}
	err := b.cl.Close()
	b.cl = nil
	if err != nil {
		return fmt.Errorf("close DCGM: %w", err)
	}
	return nil
}

// connect dials DCGM and discovers the devices. A failed dial schedules the
// next attempt.
func (b *Backend) connect(ctx context.Context) error {
	cl, err := b.dial()
	if err != nil {
		b.scheduleRetry()
		return fmt.Errorf("connect to DCGM: %w", err)
	}
	b.cl = cl
	if err := b.discover(ctx); err != nil {
		b.drop()
		b.scheduleRetry()
		return fmt.Errorf("discover DCGM devices: %w", err)
	}
	b.backoff = 0
	return nil
}

// reconnect connects again unless the backoff delay has not yet passed.
func (b *Backend) reconnect(ctx context.Context) error {
	if now := b.opts.Now(); now.Before(b.nextDial) {
		return fmt.Errorf("%w; next attempt in %s", ErrDisconnected, b.nextDial.Sub(now).Round(time.Millisecond))
	}
	if err := b.connect(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	b.log.Info("reconnected to DCGM")
	return nil
}

func (b *Backend) scheduleRetry() {
	b.backoff = min(max(2*b.backoff, b.opts.MinBackoff), b.opts.MaxBackoff)
	b.nextDial = b.opts.Now().Add(b.backoff)
}

// drop closes a client whose connection is gone. It connected, so Close
// (DCGM Shutdown) is allowed; its error says nothing new.
func (b *Backend) drop() {
	if b.cl != nil {
		_ = b.cl.Close()
		b.cl = nil
	}
}

// lose handles a lost hostengine connection found by a Sample.
func (b *Backend) lose(err error) error {
	b.drop()
	b.backoff = 0
	b.scheduleRetry()
	b.log.Error("DCGM hostengine connection lost; reconnecting with backoff", "err", err)
	return fmt.Errorf("%w: %w", ErrDisconnected, err)
}

// discover reads the devices, watches the fields and builds the inventory. A GPU
// of the previous inventory that was lost, or whose attributes now fail with
// DCGM_ST_GPU_IS_LOST, stays listed as it was (UUID, model, index, minor) and
// reads as Lost, so the ledger keeps charging its capital as lost; its MIG
// instances are those DCGM still lists.
func (b *Backend) discover(ctx context.Context) error {
	ids, err := b.cl.GPUs()
	if err != nil {
		return fmt.Errorf("list GPUs: %w", err)
	}
	hier, err := b.cl.MIGHierarchy()
	if err != nil {
		return fmt.Errorf("read MIG hierarchy: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	last := b.lastGPUs()
	lost := map[uint]bool{} // DCGM id → listed as it was last read, and lost
	infos := make([]deviceInfo, len(ids))
	for i, id := range ids {
		prev, known := last[id]
		infos[i], err = b.cl.DeviceInfo(id)
		switch {
		case err == nil:
			lost[id] = known && prev.lost && prev.gpu.UUID == infos[i].UUID
		case known && !connectionLost(err) && (prev.lost || statusCode(err) == stGPUIsLost):
			lost[id] = true
		default:
			return fmt.Errorf("read attributes of GPU %d: %w", id, err)
		}
	}
	for _, g := range b.gpus {
		if g.lost && !slices.Contains(ids, g.id) { // no longer listed at all
			ids = append(ids, g.id)
			infos = append(infos, deviceInfo{})
			lost[g.id] = true
		}
	}
	gpuEnts := make([]entity, len(ids))
	for i, id := range ids {
		gpuEnts[i] = entity{groupGPU, id}
	}
	gis, cis := splitHierarchy(hier)
	instEnts := make([]entity, len(gis))
	for i, gi := range gis {
		instEnts[i] = gi.entity
	}

	b.gpuFields, b.instField = nil, nil
	for _, s := range specs {
		b.gpuFields = append(b.gpuFields, s.id)
		if s.instance {
			b.instField = append(b.instField, s.id)
		}
	}
	if err := b.watch(append(slices.Clone(gpuEnts), instEnts...)); err != nil {
		return err
	}
	b.health = true
	if err := b.cl.WatchHealth(); err != nil {
		if connectionLost(err) {
			return err
		}
		b.health = false
		if !b.healthWarned {
			b.healthWarned = true
			b.log.Warn("DCGM health watches unavailable; gputally_gpu_healthy reflects lost GPUs only", "err", err)
		}
	}

	gpuIdent, err := b.identities(gpuEnts, gpuIdentityFields)
	if err != nil {
		return fmt.Errorf("read GPU identities: %w", err)
	}
	instIdent, err := b.identities(instEnts, instanceIdentityFields)
	if err != nil {
		return fmt.Errorf("read MIG instance identities: %w", err)
	}

	inv := collector.Inventory{GPUs: make([]collector.GPU, len(ids))}
	for i, id := range ids {
		info := infos[i]
		g := collector.GPU{
			Index: int(id), Minor: int(id),
			UUID: info.UUID, PCIBusID: info.PCIBusID, Model: info.Model,
			MemoryTotalMiB: info.FBTotalMiB,
		}
		if inv.DriverVersion == "" {
			inv.DriverVersion = info.DriverVersion
		}
		ident := gpuIdent[gpuEnts[i]]
		if v, ok := intValue(ident[fiDevNVMLIndex]); ok {
			g.Index = int(v)
		}
		if v, ok := intValue(ident[fiDevMinorNumber]); ok {
			g.Minor = int(v)
		}
		mode, modeKnown := intValue(ident[fiDevMIGMode])
		for j, gi := range gis {
			if gi.parent != gpuEnts[i] {
				continue
			}
			g.Instances = append(g.Instances, instance(gi, cis, instIdent[instEnts[j]], info.FBTotalMiB))
		}
		g.MIGEnabled = len(g.Instances) > 0 || (modeKnown && mode == 1)
		if lost[id] {
			inst := g.Instances
			g = last[id].gpu
			g.Instances = inst
		}
		inv.GPUs[i] = g
	}

	// Order GPUs by NVML index, instances by GPU instance id; keep the
	// entities parallel.
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(inv.GPUs[x].Index, inv.GPUs[y].Index) })
	sorted := collector.Inventory{DriverVersion: inv.DriverVersion, GPUs: make([]collector.GPU, len(ids))}
	b.gpuEnts = make([]entity, len(ids))
	b.gpus = make([]gpuState, len(ids))
	b.instEnts, b.instOf = nil, nil
	for k, i := range order {
		g := inv.GPUs[i]
		var ents []entity
		for j, gi := range gis {
			if gi.parent == gpuEnts[i] {
				ents = append(ents, instEnts[j])
			}
		}
		idx := make([]int, len(g.Instances))
		for n := range idx {
			idx[n] = n
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			return cmp.Compare(g.Instances[x].GPUInstanceID, g.Instances[y].GPUInstanceID)
		})
		inst := make([]collector.MIGInstance, len(idx))
		for n, j := range idx {
			inst[n] = g.Instances[j]
			b.instEnts = append(b.instEnts, ents[j])
			b.instOf = append(b.instOf, deviceRef{gpu: k, inst: n})
		}
		g.Instances = inst
		sorted.GPUs[k] = g
		b.gpuEnts[k] = gpuEnts[i]
		b.gpus[k] = gpuState{id: ids[i], healthy: true, lost: lost[ids[i]]}
	}
	b.inv = sorted
	return nil
}

// lastGPU is a GPU of the previous inventory: its entry and whether it was lost.
type lastGPU struct {
	gpu  collector.GPU
	lost bool
}

// lastGPUs maps the DCGM id of each GPU of the previous inventory to it.
func (b *Backend) lastGPUs() map[uint]lastGPU {
	last := make(map[uint]lastGPU, len(b.gpus))
	for k, g := range b.gpus {
		last[g.id] = lastGPU{gpu: b.inv.GPUs[k], lost: g.lost}
	}
	return last
}

// watch watches the contract's fields; when the profiling fields cannot be
// watched it says so once and watches the others.
func (b *Backend) watch(ents []entity) error {
	err := b.cl.Watch(ents, b.gpuFields, fiDevXIDErrors, b.opts.Interval)
	b.profiling = err == nil
	if err == nil || !profilingUnavailable(err) {
		if err != nil {
			return fmt.Errorf("watch fields: %w", err)
		}
		return nil
	}
	if !b.logged[fiProfGREngineActive] {
		b.logged[fiProfGREngineActive] = true
		b.log.Warn("DCGM profiling fields unavailable; DCGM_FI_PROF_* absent, the ledger uses DCGM_FI_DEV_GPU_UTIL", "err", err)
	}
	b.gpuFields = slices.DeleteFunc(b.gpuFields, isProfiling)
	b.instField = slices.DeleteFunc(b.instField, isProfiling)
	if err := b.cl.Watch(ents, b.gpuFields, fiDevXIDErrors, b.opts.Interval); err != nil {
		return fmt.Errorf("watch fields: %w", err)
	}
	return nil
}

func isProfiling(id uint16) bool {
	s, ok := specByID(id)
	return ok && s.profiling
}

// identities reads static fields of ents, keyed by entity and field.
func (b *Backend) identities(ents []entity, fields []uint16) (map[entity]map[uint16]fieldValue, error) {
	out := map[entity]map[uint16]fieldValue{}
	if len(ents) == 0 {
		return out, nil
	}
	vals, err := b.cl.LatestValues(ents, fields)
	if err != nil {
		return nil, err
	}
	for _, v := range vals {
		if out[v.entity] == nil {
			out[v.entity] = map[uint16]fieldValue{}
		}
		out[v.entity][v.field] = v
	}
	return out, nil
}

// splitHierarchy separates GPU instances from compute instances.
func splitHierarchy(h []migEntity) (gis, cis []migEntity) {
	for _, m := range h {
		switch m.entity.group {
		case groupGPUInstance:
			gis = append(gis, m)
		case groupComputeInstance:
			cis = append(cis, m)
		}
	}
	return gis, cis
}

// profileNameRE matches a GPU instance profile name such as "1g.10gb" or "1g.18gb+me".
var profileNameRE = regexp.MustCompile(`^\d+g\.\d+gb(\+me|\+me\.all|-me|\+gfx)?$`)

// instance builds a MIGInstance from a GPU instance, its compute instances and
// its identity fields. gpuFBMiB is the parent's framebuffer size.
func instance(gi migEntity, cis []migEntity, ident map[uint16]fieldValue, gpuFBMiB uint64) collector.MIGInstance {
	m := collector.MIGInstance{
		GPUInstanceID: int(gi.gpuInstanceID),
		ComputeSlices: int(gi.slices),
	}
	for _, ci := range cis {
		if ci.parent == gi.entity {
			m.ComputeInstanceID = int(ci.computeInstanceID)
			break
		}
	}
	if v, ok := intValue(ident[fiDevFBTotal]); ok {
		m.MemoryTotalMiB = uint64(v)
	}
	if s, ok := stringValue(ident[fiDevUUID]); ok && strings.HasPrefix(s, "MIG-") {
		m.UUID = s
	}
	m.MemorySlices = memorySlices(m.MemoryTotalMiB, gpuFBMiB)
	if s, ok := stringValue(ident[fiDevName]); ok {
		s = strings.TrimPrefix(s, "MIG ")
		if profileNameRE.MatchString(s) {
			m.Profile = s
		}
	}
	if m.Profile == "" {
		m.Profile = profileName(gi, m.MemorySlices, gpuFBMiB)
	}
	return m
}

// nvmlProfile1SliceRev1 is NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, the "+me" profile.
const nvmlProfile1SliceRev1 = 7

// profileName derives nvidia-smi's name of a GPU instance profile, such as
// "3g.40gb", the way NVIDIA's tools do (and the NVML backend does): memory in
// eighths of the GPU times its framebuffer in whole GiB.
func profileName(gi migEntity, eighths int, gpuFBMiB uint64) string {
	totalGiB := float64((gpuFBMiB + 1023) / 1024)
	gb := uint64(math.Round(float64(eighths) / 8 * totalGiB))
	name := fmt.Sprintf("%dg.%dgb", gi.slices, gb)
	if gi.profileID == nvmlProfile1SliceRev1 {
		name += "+me"
	}
	return name
}

// memorySlices is how many eighths of a GPU of gpuMiB an instance of memMiB
// holds, rounded up (profiles are a little under their nominal size).
func memorySlices(memMiB, gpuMiB uint64) int {
	if gpuMiB == 0 || memMiB == 0 {
		return 0
	}
	return min(8, int(math.Ceil(float64(memMiB)/float64(gpuMiB)*8-1e-9)))
}
