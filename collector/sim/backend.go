package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/mig"
)

// Options adjust a Backend.
type Options struct {
	// Seed, when non-zero, replaces the scenario's seed (--sim.seed).
	Seed int64
	// Start is the time event offsets, pod windows, jobs and cumulative counters
	// count from. Zero: the now of StartKubelet, or else of the first Sample call.
	Start time.Time
}

// Backend is the simulated node. Sample, Inventory and Close are for the sampler's
// single goroutine; Hostname and the fault and lifecycle queries read only what New built (and the start, fixed before them) and are
// safe for concurrent use.
type Backend struct {
	hostname string
	seed     uint64
	inv      collector.Inventory // at the start
	invs     []inventoryEpoch    // the inventory over time: one, or one more per time of `mig` events
	cur      int                 // the epoch of invs that Inventory returns (sampler goroutine only)
	gpus     []simGPU
	entries  []podEntry // one per scenario pod entry
	jobs     []jobSpec
	draGPUs  map[int]bool     // GPUs the DRA driver hands out (dra.go)
	hamiGPUs map[int]*HAMiGPU // HAMi's GPUs (fractional.go)

	kubeletDown, backendFailing, exporterStopped, scrapeMissing spans
	restarts                                                    []int64 // exporter restarts, ns after the start, sorted
	waiting                                                     waiting // pods that wait for a node (pending.go)

	start   int64 // Unix ns
	started bool
}

// inventoryEpoch is the node's inventory from a time on, until the next
// epoch's, and what the device plugin advertises of it.
type inventoryEpoch struct {
	from  int64 // ns after the start
	inv   collector.Inventory
	alloc []Allocatable
}

// load is a pod's or a job's workload on a device.
type load struct {
	pattern Pattern
	scale   float64 // the workload's activity_scale
	prof    profile
	fbMiB   float64
	key     uint64 // activity stream
	fbKey   uint64 // framebuffer stream
	pids    []uint32
	window  window   // when it runs
	job     *jobSpec // non-nil for a job: pids[0] follows its current pod
}

// running reports whether the load runs at since ns after the start and, for a
// job, points pids at its current pod.
func (l *load) running(since int64) bool {
	if l.job == nil {
		return l.window.active(since)
	}
	n := l.window.pod(since)
	if n < 0 {
		return false
	}
	l.pids[0] = l.job.pid(n)
	return true
}

// activity is the load's activity at knot k, 0–1.
func (l *load) activity(k int64) float64 { return activity(l.pattern, l.key, k) * l.scale }

// activityAt is the load's activity at fraction frac past knot k, 0–1.
func (l *load) activityAt(k int64, frac float64) float64 {
	return activityAt(l.pattern, l.key, k, frac) * l.scale
}

type simInstance struct {
	computeShare float64 // compute slices / 7
	memoryShare  float64 // memory slices / 8
	totalMiB     float64
	reservedMiB  float64
	giID         int
	slot         int // the instance over its life (migSlot); its load is simGPU.slotLoads[slot]
}

// gpuLayout is the MIG instances of a GPU from a time on, until the next
// layout's.
type gpuLayout struct {
	from      int64 // ns after the start
	instances []simInstance
}

type gpuEvent struct {
	at  int64 // ns after the start
	xid uint64
}

// checkpoint carries the integrals of power from the start up to knot k, so that
// successive samples integrate only the knots in between. The integrals depend on
// time only: a sample earlier than the checkpoint starts again from the start.
type checkpoint struct {
	valid       bool
	k           int64   // knot reached
	at          int64   // Unix ns reached: the start or knot k
	power       float64 // W at `at`
	knotPower   float64 // W at knot k
	energyJ     float64
	powerViol   float64 // µs
	thermalViol float64 // µs
}

type simGPU struct {
	spec      modelSpec
	migMode   bool
	start     int64 // the backend's start, Unix ns
	key       uint64
	loads     []*load     // pods and jobs on a GPU not in MIG mode
	layouts   []gpuLayout // MIG layouts in time order; one unless `mig` events change it
	slotLoads []*load     // per MIG slot: the pod or job holding it, or nil
	slotUUIDs []string    // per MIG slot
	ambientC  float64

	priorEnergyJ              float64 // energy before the start
	replayPerHour, sbePerHour float64
	replayPhase, sbePhase     float64
	replayBase, sbeBase       float64

	events     []gpuEvent // sorted by time
	lostAt     int64      // ns after the start; -1: never
	cp         checkpoint
	powerCache [2]knotCache // by knot parity
}

// knotCache remembers the power at one knot.
type knotCache struct {
	valid bool
	k     int64
	p     float64
}

// New builds the simulated node of a scenario. It validates sc again, so a
// Scenario built in code gets the same checks as a parsed one.
func New(sc *Scenario, opts Options) (*Backend, error) {
	facts, err := sc.check()
	if err != nil {
		return nil, err
	}
	seed := uint64(sc.Seed)
	if opts.Seed != 0 {
		seed = uint64(opts.Seed)
	}
	b := &Backend{
		hostname: sc.Node.Hostname,
		seed:     seed,
		inv:      collector.Inventory{DriverVersion: sc.Node.DriverVersion},
	}
	if b.hostname == "" {
		b.hostname = DefaultHostname
	}
	if b.inv.DriverVersion == "" {
		b.inv.DriverVersion = DefaultDriverVersion
	}
	b.hamiGPUs = map[int]*HAMiGPU{}
	for gi := range sc.GPUs {
		g := &sc.GPUs[gi]
		spec, _ := specOf(g)
		count := max(g.Count, 1)
		for range count {
			if g.HAMi != nil {
				b.hamiGPUs[len(b.gpus)] = g.HAMi
			}
			b.addGPU(seed, g, spec, &facts[len(b.gpus)])
		}
	}
	b.draGPUs = draGPUs(sc)
	b.addInventories(sc, facts)
	b.addPods(seed, sc, facts)
	b.addReservations()
	b.addWaiting(sc)
	b.addEvents(sc)
	if !opts.Start.IsZero() {
		b.pin(opts.Start.UnixNano())
	}
	return b, nil
}

// pin fixes the start, from which event offsets, windows and counters count.
func (b *Backend) pin(start int64) {
	b.start, b.started = start, true
	for i := range b.gpus {
		b.gpus[i].start = start
	}
}

func (b *Backend) addGPU(seed uint64, g *GPUGroup, spec modelSpec, facts *gpuFacts) {
	idx := len(b.gpus)
	name := fmt.Sprint("gpu", idx)
	key := keyOf(seed, name)
	inv := collector.GPU{
		Index:          idx,
		Minor:          idx,
		UUID:           "GPU-" + uuidOf(seed, name),
		PCIBusID:       pciBusID(idx),
		Model:          g.Model,
		MemoryTotalMiB: uint64(spec.memoryMiB),
		MIGEnabled:     g.MIG != nil,
	}
	sg := simGPU{
		spec:          spec,
		migMode:       g.MIG != nil,
		key:           key,
		ambientC:      25 + 8*unit(key, 1),
		priorEnergyJ:  (2 + 28*unit(key, 2)) * 86400 * (spec.idleW + 0.3*(spec.tdpW-spec.idleW)),
		replayPhase:   unit(key, 4),
		sbePhase:      unit(key, 6),
		lostAt:        -1,
		replayBase:    0,
		sbeBase:       0,
		replayPerHour: 0,
		sbePerHour:    0,
	}
	if unit(key, 3) < 0.25 { // a few GPUs sit on a noisy PCIe link
		sg.replayPerHour = 0.2 + 2*unit(key, 7)
		sg.replayBase = math.Floor(40 * unit(key, 8))
	}
	if unit(key, 5) < 0.15 { // and a few correct single-bit ECC errors now and then
		sg.sbePerHour = 0.05 + 0.5*unit(key, 9)
		sg.sbeBase = math.Floor(10 * unit(key, 10))
	}
	if g.MIG != nil {
		model := facts.mig
		inv.MemoryTotalMiB = model.MemoryTotalMiB
		sg.slotLoads = make([]*load, len(facts.slots))
		for _, s := range facts.slots {
			sg.slotUUIDs = append(sg.slotUUIDs, slotUUID(seed, name, s))
		}
		for e := range facts.epochs {
			ep := &facts.epochs[e]
			l := gpuLayout{from: ep.from}
			for j, pname := range ep.layout {
				p, _ := model.Profile(pname)
				l.instances = append(l.instances, simInstance{
					computeShare: float64(p.ComputeSlices) / mig.ComputeSlicesPerGPU,
					memoryShare:  float64(p.MemorySlices) / mig.MemorySlicesPerGPU,
					totalMiB:     float64(p.MemoryMiB),
					reservedMiB:  float64(instanceReservedMiB(p.MemoryMiB)),
					giID:         ep.ids[j],
					slot:         ep.slots[j],
				})
			}
			sg.layouts = append(sg.layouts, l)
		}
		inv.Instances = migInstances(model, &facts.epochs[0], sg.slotUUIDs)
	}
	b.inv.GPUs = append(b.inv.GPUs, inv)
	b.gpus = append(b.gpus, sg)
}

// addInventories makes the node's inventory at the start and at every time a
// `mig` event changes a layout, with what the device plugin advertises then.
func (b *Backend) addInventories(sc *Scenario, facts []gpuFacts) {
	var times []int64
	for _, f := range facts {
		for _, ep := range f.epochs[min(len(f.epochs), 1):] {
			times = append(times, ep.from)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	b.invs = []inventoryEpoch{{from: 0, inv: b.inv, alloc: b.advertised(sc, b.inv)}}
	for _, at := range times {
		inv := b.inv
		inv.GPUs = slices.Clone(b.inv.GPUs)
		for i := range inv.GPUs {
			if f := &facts[i]; len(f.epochs) > 1 {
				inv.GPUs[i].Instances = migInstances(f.mig, &f.epochs[epochAt(f.epochs, at)], b.gpus[i].slotUUIDs)
			}
		}
		b.invs = append(b.invs, inventoryEpoch{from: at, inv: inv, alloc: b.advertised(sc, inv)})
	}
}

// inventoryAt returns the index of the inventory epoch at since ns after the
// start.
func (b *Backend) inventoryAt(since int64) int {
	i := sort.Search(len(b.invs), func(i int) bool { return b.invs[i].from > since })
	return max(i-1, 0)
}

// layoutAt returns the MIG instances of g at since ns after the start.
func (g *simGPU) layoutAt(since int64) []simInstance {
	i := len(g.layouts) - 1
	for i > 0 && g.layouts[i].from > since {
		i--
	}
	if i < 0 {
		return nil
	}
	return g.layouts[i].instances
}

// giIDs assigns GPU instance IDs the way the driver tends to: by profile size from
// its own range, the lowest free one first.
func giIDs(m *mig.Model, layout []string) []int {
	used := map[int]bool{}
	ids := make([]int, len(layout))
	for j, name := range layout {
		p, _ := m.Profile(name)
		var pool []int
		switch {
		case p.ComputeSlices == 7:
			pool = []int{0}
		case p.ComputeSlices >= 3:
			pool = []int{1, 2}
		case p.ComputeSlices == 2:
			pool = []int{3, 4, 5}
		case p.MemorySlices == 2:
			pool = []int{3, 4, 5, 6}
		default:
			pool = []int{7, 8, 9, 10, 11, 12, 13, 14}
		}
		id := -1
		for _, c := range pool {
			if !used[c] {
				id = c
				break
			}
		}
		for c := 0; id < 0; c++ {
			if !used[c] {
				id = c
			}
		}
		used[id] = true
		ids[j] = id
	}
	return ids
}

// pciBusID places GPUs on the buses of an HGX H100 board, eight per PCI domain.
func pciBusID(idx int) string {
	buses := [8]int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	return fmt.Sprintf("%08X:%02X:00.0", idx/8, buses[idx%8])
}

// uuidOf formats a random-looking (version 4) UUID derived from the seed and names.
func uuidOf(seed uint64, parts ...string) string {
	k := keyOf(seed, parts...)
	a, c := mix(k), mix(k^0xa5a5a5a5a5a5a5a5)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, 0x8000|(c>>48)&0x3fff, c&0xffffffffffff)
}

func (b *Backend) addPods(seed uint64, sc *Scenario, facts []gpuFacts) {
	workloads := map[string]*Workload{}
	for i := range sc.Workloads {
		workloads[sc.Workloads[i].Name] = &sc.Workloads[i]
	}
	used := map[uint32]bool{}
	for _, p := range sc.Pods {
		for _, pid := range p.PIDs {
			used[uint32(pid)] = true
		}
	}
	next := uint32(1000 + mix(seed)%1_000_000)
	vgpus := map[int]int{} // HAMi GPU → virtual devices handed out
	uids := map[string]string{}
	for _, p := range sc.Pods {
		if p.UID != "" {
			uids[p.Namespace+"/"+p.Pod] = p.UID
		}
	}
	// A pod ends when a MIG reconfiguration takes away an instance one of
	// its containers holds.
	ends := map[string]int64{}
	for i := range sc.Pods {
		p := &sc.Pods[i]
		if until := slotUntil(facts, p.Device, int64(p.Start)); until < math.MaxInt64 {
			full := p.Namespace + "/" + p.Pod
			if e, ok := ends[full]; !ok || until < e {
				ends[full] = until
			}
		}
	}
	for i := range sc.Pods {
		p := &sc.Pods[i]
		full := p.Namespace + "/" + p.Pod
		uid, ok := uids[full]
		if !ok {
			uid = uuidOf(seed, "pod", full)
			uids[full] = uid
		}
		win := podWindow(p)
		if end, ok := ends[full]; ok {
			win.to = min(win.to, end)
		}
		pids := make([]uint32, 0, max(len(p.PIDs), 1))
		for _, pid := range p.PIDs {
			pids = append(pids, uint32(pid))
		}
		if len(pids) == 0 {
			for used[next] {
				next++
			}
			used[next] = true
			pids = append(pids, next)
		}
		l := newLoad(seed, workloads[p.Workload], full+"/"+p.Container+"/"+fmt.Sprint(i), pids, win)
		deviceID := b.place(l, p.Device, facts, int64(p.Start))
		var draDevice string
		switch {
		case p.Resource == resourceDRA:
			draDevice, deviceID = draDeviceName(b.inv.GPUs[p.Device.GPU], p.Device.Instance), ""
		case p.HAMi != nil: // the kubelet's pick of the GPU's virtual devices
			deviceID = fmt.Sprintf("%s-%d", deviceID, vgpus[p.Device.GPU]%b.hamiGPUs[p.Device.GPU].split())
			vgpus[p.Device.GPU]++
		case p.KAI != nil:
			deviceID = ""
		}
		c := keyOf(seed, "container", full, p.Container)
		b.entries = append(b.entries, podEntry{
			namespace:   p.Namespace,
			pod:         p.Pod,
			uid:         uid,
			container:   p.Container,
			resource:    p.Resource,
			deviceID:    deviceID,
			claim:       p.Claim,
			draDevice:   draDevice,
			containerID: fmt.Sprintf("%016x%016x%016x%016x", mix(c), mix(c+1), mix(c+2), mix(c+3)),
			pids:        pids,
			window:      l.window,
			gpu:         p.Device.GPU,
			hami:        p.HAMi,
			kai:         p.KAI,
		})
	}
	b.jobs = make([]jobSpec, len(sc.Jobs))
	for i := range sc.Jobs {
		j := &sc.Jobs[i]
		full := j.Namespace + "/" + j.Name
		base := freePIDBlock(used, next)
		for pid := base; pid < base+jobPIDBlock; pid++ {
			used[pid] = true
		}
		next = base + jobPIDBlock
		spec := &b.jobs[i]
		*spec = jobSpec{
			namespace: j.Namespace, name: j.Name, container: j.Container, resource: j.Resource,
			window: jobWindow(j), pidBase: base,
		}
		// A job on a MIG instance that a reconfiguration takes away ends then.
		spec.window.to = min(spec.window.to, slotUntil(facts, j.Device, 0))
		l := newLoad(seed, workloads[j.Workload], "job/"+full+"/"+j.Container, []uint32{base}, spec.window)
		l.job = spec
		spec.deviceID = b.place(l, j.Device, facts, 0)
	}
}

// freePIDBlock returns the first PID at or after from that starts jobPIDBlock
// unused PIDs, going round once to low PIDs past the kernel's limit. When the
// scenario's own PIDs leave no such block, it returns from: a job's PID may then
// coincide with one a scenario pod lists.
func freePIDBlock(used map[uint32]bool, from uint32) uint32 {
	const lowest = 300 // below it, Linux hands out PIDs only at boot
	base, wrapped := from, false
	for pid := base; pid < base+jobPIDBlock; {
		if base+jobPIDBlock > maxPID {
			if wrapped {
				return from
			}
			base, pid, wrapped = lowest, lowest, true
			continue
		}
		if used[pid] {
			base = pid + 1
		}
		pid++
	}
	return base
}

// newLoad returns the load of workload w run by the pod or job called name.
func newLoad(seed uint64, w *Workload, name string, pids []uint32, win window) *load {
	return &load{
		pattern: w.Pattern,
		scale:   w.scale(),
		prof:    profileOf(w.Pattern),
		fbMiB:   float64(w.FBMiB),
		key:     keyOf(seed, "activity", name),
		fbKey:   keyOf(seed, "fb", name),
		pids:    pids,
		window:  win,
	}
}

// slotUntil returns when the MIG instance that d names at start ns after the
// start goes, or math.MaxInt64 when it stays (or d is no MIG instance).
func slotUntil(facts []gpuFacts, d Device, start int64) int64 {
	if d.Instance == nil || facts[d.GPU].mig == nil {
		return math.MaxInt64
	}
	f := &facts[d.GPU]
	return f.slots[f.epochs[epochAt(f.epochs, start)].slots[*d.Instance]].until
}

// place puts l on device d, a MIG instance of the layout in force at start ns
// after the start, and returns the device ID the device plugin gives it.
func (b *Backend) place(l *load, d Device, facts []gpuFacts, start int64) string {
	g := &b.gpus[d.GPU]
	gpu := b.inv.GPUs[d.GPU]
	switch {
	case d.Instance != nil:
		f := &facts[d.GPU]
		slot := f.epochs[epochAt(f.epochs, start)].slots[*d.Instance]
		g.slotLoads[slot] = l
		return g.slotUUIDs[slot]
	case d.Replica != nil:
		g.loads = append(g.loads, l)
		return fmt.Sprintf("%s::%d", gpu.UUID, *d.Replica)
	default:
		g.loads = append(g.loads, l)
		return gpu.UUID
	}
}

func (b *Backend) addEvents(sc *Scenario) {
	b.kubeletDown = faultSpans(sc, "kubelet", "down")
	b.backendFailing = faultSpans(sc, "backend", "failing")
	b.exporterStopped = faultSpans(sc, "exporter", "stopped")
	b.scrapeMissing = faultSpans(sc, "scrape", "missing")
	b.restarts = restartTimes(sc)
	for _, e := range sc.Events {
		if e.GPU == nil {
			continue
		}
		g := &b.gpus[*e.GPU]
		xid := uint64(e.XID)
		if e.Lost {
			xid = 79
			g.lostAt = int64(e.At)
		}
		g.events = append(g.events, gpuEvent{at: int64(e.At), xid: xid})
	}
	for i := range b.gpus {
		ev := b.gpus[i].events
		sort.SliceStable(ev, func(x, y int) bool { return ev[x].at < ev[y].at })
	}
}

// Name returns "sim".
func (b *Backend) Name() string { return "sim" }

// Hostname returns the scenario's node name.
func (b *Backend) Hostname() string { return b.hostname }

// Inventory returns the simulated GPUs and their MIG instances as the last
// Sample found them (at the start before the first): a `mig` event changes
// them, and the first Sample after it returns collector.ErrInventoryChanged,
// as a hardware backend does after a MIG reconfiguration.
func (b *Backend) Inventory(context.Context) (collector.Inventory, error) {
	return b.invs[b.cur].inv, nil
}

// InventoryAt returns the inventory of the node at t, whatever Sample saw
// last. The backend's start must be fixed. Safe for concurrent use.
func (b *Backend) InventoryAt(t time.Time) collector.Inventory {
	return b.invs[b.inventoryAt(t.UnixNano()-b.start)].inv
}

// InventoryChanged reports whether a `mig` event changes the inventory after
// after and at or before upTo. The backend's start must be fixed. Safe for
// concurrent use.
func (b *Backend) InventoryChanged(after, upTo time.Time) bool {
	return b.inventoryAt(after.UnixNano()-b.start) != b.inventoryAt(upTo.UnixNano()-b.start)
}

// Close does nothing.
func (b *Backend) Close() error { return nil }
