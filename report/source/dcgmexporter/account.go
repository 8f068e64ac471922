package dcgmexporter

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// dcgmAccount prices the classified grid points with the exporter's own
// ledger (cost.Ledger: the rates, the idle threshold, the MIG split by
// mig_weight, time-sliced shares, lost GPUs, the facility energy of the
// power readings) and turns its totals into the dataset, bucket by bucket: the GPUs of one cluster. Only the goroutine of
// Collect uses it.
type dcgmAccount struct {
	d         *model.Dataset
	cluster   string
	book      *cost.Book
	grid      time.Duration
	perBucket int // grid points per step bucket
	perRes    int // grid points per resolution step
	ledger    *cost.Ledger
	books     *guestBook // the ledger's book: book and the vGPU guests' entries
	err       error      // a GPU the source cannot price (a vGPU type it does not know)

	devices map[string]dcgmDevice       // by the ledger's device UUID (a MIG instance's is "GPU-…/GI/profile")
	gpus    map[string]*dcgmGPU         // by UUID
	prev    map[dcgmTotalKey]cost.Total // the ledger's totals at the last bucket end
	shared  map[string]string           // GPUs split by allocation share at some grid point: the resource, as kube-state-metrics names it
	points  map[model.HoldingKey]int    // grid points each pod-labelled holding was seen at
	usage   map[model.HoldingKey]*dcgmUsage
	states  []cost.GPUState
	totals  []cost.Total
	ev      *dcgmEvidence // what the cluster's data lacks
	// whole are the GPUs out of MIG mode seen so far, by node, and
	// wholeSeen how many (classify's argument).
	whole     map[string]map[string]bool
	wholeSeen map[string]int
}

// dcgmDevice is a device of the ledger: its key in the dataset and labels.
type dcgmDevice struct {
	key              model.DeviceKey
	model, host, gpu string
}

// dcgmGPU is what the grid saw of one GPU so far.
type dcgmGPU struct {
	model, host, gpu string
	last             int           // the last grid point with a sample; 0: none yet
	powerW           float64       // the last power read, W; NaN: none (or lost)
	mig              bool          // MIG mode at the last sample
	state            cost.GPUState // the ledger's input at the last sample: a gap's holders
	node             *nodeEvidence
	// gr and util: some sample of the GPU (or its instances) had
	// DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_GPU_UTIL.
	gr, util bool
	// disagree counts the grid points at which its
	// DCGM_FI_PROF_GR_ENGINE_ACTIVE read idle while DCGM_FI_DEV_GPU_UTIL
	// showed work (activity.go).
	disagree int
}

type dcgmTotalKey struct {
	device string
	holder cost.HolderKey
	state  cost.State
}

// dcgmUsage accumulates one holding's activity and framebuffer over the grid
// points of one resolution step.
type dcgmUsage struct {
	step  int // resolution step; -1: none yet
	sum   float64
	n     int
	fb    float64 // bytes
	hasFB bool
}

func newDCGMAccount(d *model.Dataset, book *cost.Book, grid time.Duration, cluster string) *dcgmAccount {
	perBucket := int(d.Step / grid)
	books := newGuestBook(book)
	return &dcgmAccount{
		d: d, cluster: cluster, book: book, grid: grid, perBucket: perBucket, perRes: int(d.Resolution / grid),
		// A series gone longer than a bucket and a bit has been read at a
		// bucket end: it may go.
		ledger: cost.NewLedger(books, cost.WithRetention(d.Step+4*grid)), books: books,
		devices: map[string]dcgmDevice{}, gpus: map[string]*dcgmGPU{}, prev: map[dcgmTotalKey]cost.Total{},
		whole: map[string]map[string]bool{}, wholeSeen: map[string]int{},
		shared: map[string]string{}, points: map[model.HoldingKey]int{}, usage: map[model.HoldingKey]*dcgmUsage{}, ev: newDCGMEvidence(cluster),
	}
}

// point prices grid point j (1…), at d.Start + j × grid, from its samples:
// every GPU with a sample there is charged the grid step before it at its
// state; a GPU without one between two that have one is unknown there.
func (a *dcgmAccount) point(j int, p *gridPoint) {
	a.ev.point(p)
	devs := classify(p, a.wholeSeen, a.book.IdleThreshold)
	a.ev.scrapeTargets(p.targets)
	a.states = a.states[:0]
	for i := range devs {
		pd := &devs[i]
		g := a.gpuOf(pd)
		if g.last > 0 && j-g.last > 1 {
			a.gap(pd.uuid, g, g.last+1, j-1)
		}
		g.last, g.mig, g.state = j, pd.state.MIG, pd.state
		switch {
		case pd.state.Lost:
			g.powerW = math.NaN()
		case pd.state.PowerW >= 0 && pd.state.PowerW <= cost.MaxPowerW:
			g.powerW = pd.state.PowerW
		}
		if pd.shared != "" {
			a.shared[pd.uuid] = pd.shared
		}
		g.node.see(j, p, pd)
		if !pd.state.MIG {
			if a.whole[g.host] == nil {
				a.whole[g.host] = map[string]bool{}
			}
			a.whole[g.host][pd.uuid] = true
			a.wholeSeen[g.host] = len(a.whole[g.host])
		}
		if !pd.state.MIG && len(pd.parts) > 0 && pd.parts[0].reading.disagrees {
			g.disagree++
		}
		for n, part := range pd.parts {
			g.gr = g.gr || !math.IsNaN(part.reading.gr)
			g.util = g.util || !math.IsNaN(part.reading.util)
			dev := part.reading.id.dev
			if pd.state.MIG {
				dev.Profile = part.reading.profile
				g.node.spelled(part.reading.id.dev.Profile, dev.Profile)
				in := pd.state.Instances[n]
				a.devices[in.UUID] = dcgmDevice{key: dev, model: g.model, host: g.host, gpu: g.gpu}
			}
			k := model.HoldingKey{Dev: dev, Holder: part.holder}
			if part.holder != (model.HolderKey{}) {
				a.points[k]++
			}
			a.sample(k, j, part.reading.activity(), part.reading.fb)
		}
		a.states = append(a.states, pd.state)
	}
	a.ledger.Advance(a.grid, a.states)
	if j%a.perBucket == 0 {
		a.endBucket(j/a.perBucket - 1)
	}
}

// gpuOf returns what the grid saw of pd's GPU, registering it.
func (a *dcgmAccount) gpuOf(pd *pointDevice) *dcgmGPU {
	g := a.gpus[pd.uuid]
	if g == nil {
		g = &dcgmGPU{model: pd.state.Model, host: pd.id.host, gpu: pd.id.gpu, powerW: math.NaN(), node: a.ev.node(pd.id.host)}
		if err := a.books.see(g.model); err != nil && a.err == nil {
			a.err = fmt.Errorf("GPU %s of node %s: %w", pd.uuid, model.NodeName(a.cluster, g.host), err)
		}
		a.gpus[pd.uuid] = g
		a.devices[pd.uuid] = dcgmDevice{key: model.DeviceKey{Cluster: a.cluster, UUID: pd.uuid}, model: g.model, host: g.host, gpu: g.gpu}
	}
	return g
}

// endBucket adds what the ledger accrued since the last bucket end to bucket
// b: a series' growth since then, or all of it when it began (again) since
// — one the ledger dropped after its retention window and that came back in
// the bucket counts from 0, whatever it held before.
func (a *dcgmAccount) endBucket(b int) {
	a.totals = a.ledger.AppendTotals(a.totals[:0])
	cur := make(map[dcgmTotalKey]cost.Total, len(a.totals))
	for _, t := range a.totals {
		k := dcgmTotalKey{t.Device, t.Holder, t.State}
		cur[k] = t
		p := a.prev[k]
		if p.Since != t.Since {
			p = cost.Total{}
		}
		grew := cost.Total{Seconds: t.Seconds - p.Seconds, EUR: t.EUR - p.EUR, Joules: t.Joules - p.Joules, Metered: t.Metered}
		if grew.Seconds == 0 && grew.EUR == 0 && grew.Joules == 0 {
			continue
		}
		st, _ := model.StateIndex(t.State.String())
		a.add(b, a.devices[t.Device], modelHolder(t.Holder), st, grew)
	}
	a.prev = cur
}

// add adds what the ledger accrued in one state — its seconds, EUR and, when
// the GPU's energy is metered (its price has an energy component and a power
// was read), its joules — to the holding (dev, h) in bucket b.
func (a *dcgmAccount) add(b int, dev dcgmDevice, h model.HolderKey, st int, grew cost.Total) {
	d := a.d
	k := model.HoldingKey{Dev: dev.key, Holder: h}
	e := d.Ledger[k]
	if e == nil {
		if d.Ledger == nil {
			d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
		}
		e = &model.LedgerEntry{Model: dev.model, Host: dev.host, Profile: dev.key.Profile, GPU: dev.gpu, Last: -1}
		d.Ledger[k] = e
	}
	e.Seconds[st] += grew.Seconds
	d.AddEUR(e, dev.key.Cluster, b, st, grew.EUR)
	if grew.Metered {
		e.Joules[st] += grew.Joules
		e.Metered = true
	}
	d.AddSeconds(e, d.GPU(dev.key.GPU(), e), b, st, grew.Seconds)
}

// sample adds one grid point's activity and framebuffer of holding k.
func (a *dcgmAccount) sample(k model.HoldingKey, j int, act, fb float64) {
	u := a.usage[k]
	if u == nil {
		u = &dcgmUsage{step: -1}
		a.usage[k] = u
	}
	step := (j - 1) / a.perRes
	if u.step != step {
		a.flush(k, u)
		*u = dcgmUsage{step: step}
	}
	if !math.IsNaN(act) {
		u.sum += act
		u.n++
	}
	if !math.IsNaN(fb) {
		u.fb = max(u.fb, fb)
		u.hasFB = true
	}
}

// flush adds the resolution step u accumulated to the dataset's activity,
// heatmap and framebuffer samples.
func (a *dcgmAccount) flush(k model.HoldingKey, u *dcgmUsage) {
	d := a.d
	if u.step < 0 {
		return
	}
	if u.n > 0 {
		v := u.sum / float64(u.n)
		d.AddActivity(k, v)
		d.AddHeat(d.Start.Add(time.Duration(u.step)*d.Resolution+d.Resolution/2), v)
	}
	if u.hasFB {
		d.AddFramebuffer(k, u.fb/(1<<20)) // bytes → the dataset's MiB
	}
}

// finish flushes the usage, marks the kind of each entry of its cluster,
// fills their allocations and the MIG modes, and adds the nodes whose
// capacity went unread to the dataset's NoDrain.
func (a *dcgmAccount) finish() {
	d := a.d
	for _, k := range slices.SortedFunc(maps.Keys(a.usage), model.CompareHoldingKeys) {
		a.flush(k, a.usage[k])
	}
	if d.NoDrain == nil {
		d.NoDrain = map[model.NodeKey]bool{}
	}
	a.ev.noDrain(d.NoDrain)
	for k, e := range d.Ledger {
		if k.Dev.Cluster != a.cluster {
			continue
		}
		e.Kind = model.Sampled
		if a.shared[k.Dev.UUID] != "" {
			e.Kind = model.AllocationShare
		}
		if k.Holder == (model.HolderKey{}) {
			continue
		}
		switch {
		case a.shared[k.Dev.UUID] == ksmGPU: // time-slicing without renamed resources
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "time-slicing"}
		case a.shared[k.Dev.UUID] != "":
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu.shared", Sharing: "time-slicing"}
		case k.Dev.GI != "":
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/mig-" + e.Profile, Sharing: "mig"}
		default:
			d.Alloc[k] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
		}
	}
	for uuid, g := range a.gpus {
		k := model.GPUKey{Cluster: a.cluster, UUID: uuid}
		d.MIGMode[k] = "disabled"
		if g.mig {
			d.MIGMode[k] = "enabled"
		}
	}
}

// short counts the holdings seen at fewer than two grid points: their time
// is known only to the grid.
func (a *dcgmAccount) short() int {
	n := 0
	for _, p := range a.points {
		if p < 2 {
			n++
		}
	}
	return n
}

// warnings are what the source could not tell from the cluster's data, and
// how it read the shapes it found.
func (a *dcgmAccount) warnings() []string {
	return slices.Concat(a.ev.warnings(a.gpus), disagreementWarnings(a.cluster, a.gpus, a.grid), a.books.warnings(a.cluster, a.gpus))
}
