package cost

import (
	"math"
	"time"
)

// State is the state a part of a device was in during a tick: the `state`
// label of gpuledger_gpu_seconds_total and gpuledger_cost_eur_total.
type State uint8

// The states of the ledger.
const (
	// Busy: allocated, with activity at or above the idle threshold, or with
	// no activity signal at all (a part is idle only when measured idle).
	Busy State = iota
	// Idle: allocated, with activity below the idle threshold.
	Idle
	// Unallocated: held by no one (a GPU no pod holds, MIG slices in no
	// instance, an instance no pod holds, the share a time-sliced GPU's
	// holders leave over).
	Unallocated
)

// String returns the label value: "busy", "idle" or "unallocated".
func (s State) String() string {
	switch s {
	case Busy:
		return "busy"
	case Idle:
		return "idle"
	default:
		return "unallocated"
	}
}

// HolderKey names the container that holds (part of) a device. The zero
// HolderKey is no one: the key of unallocated series.
type HolderKey struct {
	Namespace, Pod, Container string
}

// Holder is one container holding a whole GPU or MIG instance, or a share of it.
type Holder struct {
	Key HolderKey
	// Share is the part of the device the holder pays for, 0–1: 1 for an
	// exclusive device, an ActivityShares result for a time-sliced one. The
	// shares of one device should sum to at most 1; the remainder is
	// unallocated. A sum above 1 is scaled down to 1; NaN or negative counts as 0.
	Share float64
	// Activity is the holder's own activity ratio, 0–1 (per-process accounting on
	// a shared GPU); NaN uses the device's activity.
	Activity float64
}

// Instance is one MIG instance of a GPU.
type Instance struct {
	UUID          string // "MIG-…"
	ComputeSlices int    // of 7
	MemorySlices  int    // of 8
	// Activity is the instance's activity ratio, 0–1; NaN when there is no
	// signal (its holders then count as busy unless they carry their own).
	Activity float64
	Holders  []Holder
}

// GPUState is what the ledger needs to know about one GPU for one tick. UUIDs
// are unique across the GPUs and MIG instances passed to one Advance.
type GPUState struct {
	UUID  string // "GPU-…"
	Model string // modelName, matched against the price book
	// PowerW is the measured board power in W; NaN when absent. The ledger then
	// uses the last power it saw for this GPU, or no energy cost until it sees one.
	PowerW float64
	// Activity is the whole GPU's activity ratio, 0–1; NaN when there is no
	// signal. The caller chooses the signal (DESIGN.md, "Cost model").
	Activity float64
	// MIG is true when the GPU is in MIG mode: its cost splits over Instances
	// and Holders is ignored. A MIG GPU without instances is wholly unallocated.
	MIG       bool
	Holders   []Holder   // holders of the whole GPU, when !MIG
	Instances []Instance // when MIG
}

// Total is the cumulative value of one ledger series since the process started.
type Total struct {
	GPU     string    // UUID of the physical GPU
	Device  string    // UUID of the device the series is about: the GPU or one of its MIG instances
	Holder  HolderKey // zero for Unallocated
	State   State
	Seconds float64 // device-seconds: wall seconds × the part of the GPU
	EUR     float64
}

// GPURate is the rate in force for one GPU at the last tick.
type GPURate struct {
	UUID  string
	Model string
	Rate  Rate
	// Priced is false when no entry of the book matches Model: the rate is
	// then 0. Book.CheckModels at start-up and on reload prevents it.
	Priced bool
}

// BookSource gives the price book in force. *Store implements it.
type BookSource interface {
	// Book returns the current book; it must be safe to call from the sampler
	// goroutine while another goroutine reloads.
	Book() *Book
}

// Ledger integrates the cost of the GPUs of a node over time. It is not safe
// for concurrent use: the sampler goroutine calls Advance and then reads the
// totals with AppendTotals and AppendRates, and publishes copies.
//
// Series follow the input: when a holder, MIG instance or GPU is no longer in
// the GPUState passed to Advance, its series are dropped (DESIGN.md: the series
// of a pod that ended disappear at the next attribution refresh). A holder that
// comes back starts again at zero, which PromQL's increase() reads as a new
// series or a counter reset. Every GPU and MIG instance present always has an
// unallocated series, and every holder a busy and an idle series, even at zero.
type Ledger struct {
	books BookSource
	gpus  []gpuAcc
}

// NewLedger returns an empty ledger that prices GPUs with the book books gives
// at each Advance.
func NewLedger(books BookSource) *Ledger {
	return &Ledger{books: books}
}

type counter struct{ seconds, eur float64 }

func (c *counter) add(seconds, eur float64) {
	c.seconds += seconds
	c.eur += eur
}

type holderAcc struct {
	key        HolderKey
	busy, idle counter
}

// deviceAcc holds the series of one GPU or MIG instance.
type deviceAcc struct {
	uuid    string
	unalloc counter
	holders []holderAcc // distinct keys, in order of first appearance
	index   []int       // input holder position → holders index
}

type gpuAcc struct {
	uuid      string
	model     string
	book      *Book
	price     *ModelPrice // book.Price(model), cached per book and model
	powerW    float64     // last known power, NaN until one is seen
	rate      Rate
	whole     deviceAcc // the GPU: its holders, or its free MIG slices
	instances []deviceAcc
}

// Advance adds one tick of length dt: for every GPU, rate × dt/3600 EUR and dt
// of device-seconds, split over its parts. A dt of zero or less adds nothing but
// still follows the holders and devices in gpus. In steady state (the same
// GPUs, instances and holders as the last call) Advance does not allocate.
func (l *Ledger) Advance(dt time.Duration, gpus []GPUState) {
	book := l.books.Book()
	if !l.sameGPUs(gpus) {
		l.rebuildGPUs(gpus)
	}
	sec := max(dt.Seconds(), 0)
	for i := range gpus {
		in, acc := &gpus[i], &l.gpus[i]
		acc.updateRate(book, in)
		eur := acc.rate.Total() * sec / 3600
		if !in.MIG {
			acc.whole.sync(in.Holders)
			acc.syncInstances(nil)
			acc.whole.split(in.Holders, in.Activity, book.IdleThreshold, sec, eur)
			continue
		}
		acc.whole.sync(nil)
		acc.syncInstances(in.Instances)
		weights := 0.0
		for _, inst := range in.Instances {
			weights += book.MIGWeight.Weight(inst.ComputeSlices, inst.MemorySlices)
		}
		scale := 1.0
		if weights > 1 {
			scale = 1 / weights
		}
		allocated := 0.0
		for j := range in.Instances {
			inst := &in.Instances[j]
			w := book.MIGWeight.Weight(inst.ComputeSlices, inst.MemorySlices) * scale
			allocated += w
			acc.instances[j].split(inst.Holders, inst.Activity, book.IdleThreshold, sec*w, eur*w)
		}
		free := remainder(allocated)
		acc.whole.unalloc.add(sec*free, eur*free)
	}
}

// updateRate sets acc.rate from the book and the GPU's power.
func (acc *gpuAcc) updateRate(book *Book, in *GPUState) {
	if acc.book != book || acc.model != in.Model {
		acc.book, acc.model = book, in.Model
		acc.price = book.Price(in.Model)
	}
	if p := in.PowerW; p >= 0 && !math.IsInf(p, 1) {
		acc.powerW = p
	}
	if acc.price == nil {
		acc.rate = Rate{}
		return
	}
	acc.rate = acc.price.Rate(acc.powerW)
}

// split adds sec device-seconds and eur EUR to d's series: to each holder its
// share, busy or idle by its activity, and the rest to unallocated.
func (d *deviceAcc) split(holders []Holder, activity, threshold, sec, eur float64) {
	sum := 0.0
	for _, h := range holders {
		sum += clampShare(h.Share)
	}
	scale := 1.0
	if sum > 1 {
		scale = 1 / sum
	}
	held := 0.0
	for j, h := range holders {
		s := clampShare(h.Share) * scale
		held += s
		a := h.Activity
		if math.IsNaN(a) {
			a = activity
		}
		acc := &d.holders[d.index[j]]
		c := &acc.busy
		if a < threshold { // NaN (no signal) is not idle
			c = &acc.idle
		}
		c.add(sec*s, eur*s)
	}
	free := remainder(held)
	d.unalloc.add(sec*free, eur*free)
}

// remainder returns the part of a device, 0–1, that parts summing to held
// leave over. A remainder below 1e-12 is rounding (shares such as 0.79 + 0.10 +
// 0.11 do not sum to exactly 1 in floating point) and counts as 0, so an
// unallocated series does not creep up by 1e-16 a tick; the cost it drops is
// below the ledger's conservation bound of 1e-9.
func remainder(held float64) float64 {
	if free := 1 - held; free > 1e-12 {
		return free
	}
	return 0
}

func clampShare(s float64) float64 {
	switch {
	case s > 1:
		return 1
	case s > 0:
		return s
	default: // negative or NaN
		return 0
	}
}

// sameGPUs reports whether gpus lists the GPUs of the last call, in order.
func (l *Ledger) sameGPUs(gpus []GPUState) bool {
	if len(gpus) != len(l.gpus) {
		return false
	}
	for i := range gpus {
		if gpus[i].UUID != l.gpus[i].uuid {
			return false
		}
	}
	return true
}

// rebuildGPUs lays l.gpus out like gpus, keeping the series of GPUs seen before.
func (l *Ledger) rebuildGPUs(gpus []GPUState) {
	old := l.gpus
	l.gpus = make([]gpuAcc, len(gpus))
	for i, in := range gpus {
		acc := gpuAcc{uuid: in.UUID, powerW: math.NaN(), whole: deviceAcc{uuid: in.UUID}}
		for _, o := range old {
			if o.uuid == in.UUID {
				acc = o
				break
			}
		}
		l.gpus[i] = acc
	}
}

// syncInstances lays acc.instances out like insts, keeping the series of
// instances seen before.
func (acc *gpuAcc) syncInstances(insts []Instance) {
	if len(insts) == len(acc.instances) {
		same := true
		for j := range insts {
			if insts[j].UUID != acc.instances[j].uuid {
				same = false
				break
			}
		}
		if same {
			for j := range insts {
				acc.instances[j].sync(insts[j].Holders)
			}
			return
		}
	}
	old := acc.instances
	acc.instances = make([]deviceAcc, len(insts))
	for j, in := range insts {
		d := deviceAcc{uuid: in.UUID}
		for _, o := range old {
			if o.uuid == in.UUID {
				d = o
				break
			}
		}
		d.sync(in.Holders)
		acc.instances[j] = d
	}
}

// sync lays d.holders out for holders, keeping the counters of holders seen
// before and merging repeated keys into one series.
func (d *deviceAcc) sync(holders []Holder) {
	if len(holders) == len(d.index) {
		same := true
		for j := range holders {
			if holders[j].Key != d.holders[d.index[j]].key {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	old := d.holders
	d.holders = make([]holderAcc, 0, len(holders))
	d.index = make([]int, len(holders))
	for j, h := range holders {
		k := -1
		for i := range d.holders {
			if d.holders[i].key == h.Key {
				k = i
				break
			}
		}
		if k < 0 {
			k = len(d.holders)
			acc := holderAcc{key: h.Key}
			for _, o := range old {
				if o.key == h.Key {
					acc = o
					break
				}
			}
			d.holders = append(d.holders, acc)
		}
		d.index[j] = k
	}
}

// AppendTotals appends the cumulative value of every series to dst and returns
// the extended slice: per GPU, in the order of the last Advance, the GPU's
// unallocated series, its holders' busy and idle series, then per MIG instance
// the same. Appending to a slice with room left does not allocate.
func (l *Ledger) AppendTotals(dst []Total) []Total {
	for i := range l.gpus {
		g := &l.gpus[i]
		dst = g.whole.appendTotals(dst, g.uuid)
		for j := range g.instances {
			dst = g.instances[j].appendTotals(dst, g.uuid)
		}
	}
	return dst
}

func (d *deviceAcc) appendTotals(dst []Total, gpu string) []Total {
	dst = append(dst, Total{GPU: gpu, Device: d.uuid, State: Unallocated,
		Seconds: d.unalloc.seconds, EUR: d.unalloc.eur})
	for _, h := range d.holders {
		dst = append(dst,
			Total{GPU: gpu, Device: d.uuid, Holder: h.key, State: Busy, Seconds: h.busy.seconds, EUR: h.busy.eur},
			Total{GPU: gpu, Device: d.uuid, Holder: h.key, State: Idle, Seconds: h.idle.seconds, EUR: h.idle.eur})
	}
	return dst
}

// AppendRates appends the rate in force at the last Advance for every GPU, in
// the order of that call, to dst and returns the extended slice.
func (l *Ledger) AppendRates(dst []GPURate) []GPURate {
	for i := range l.gpus {
		g := &l.gpus[i]
		dst = append(dst, GPURate{UUID: g.uuid, Model: g.model, Rate: g.rate, Priced: g.price != nil})
	}
	return dst
}

// ActivityShares fills dst (resized to len(activity)) with the shares of the
// holders of one time-sliced or MPS device and returns it. activity holds each
// holder's own activity ratio (per-process accounting), NaN where unknown;
// replicaShares each holder's share by the replicas it was allocated (the
// kubelet's view: replicas held / replicas the device offers), summing to at
// most 1 — the rest are replicas no pod holds.
//
// When every activity is known, each holder pays for what it used plus its
// replica share of what no one used: share = activity + (1 − Σ activity) ×
// replica share, so the part of the unused time that belongs to unrequested
// replicas stays unallocated. When the activities sum above 1 (sampling
// noise), share = activity / Σ activity. When any activity is unknown, the
// shares are the replica shares. A holder that used nothing still pays its
// part of the idle time. A missing, negative or NaN replica share counts as 0;
// replica shares summing above 1 are scaled down to 1.
func ActivityShares(dst, activity, replicaShares []float64) []float64 {
	sum := 0.0
	for i := range activity {
		if i < len(replicaShares) {
			sum += clampShare(replicaShares[i])
		}
	}
	scale := 1.0
	if sum > 1 {
		scale = 1 / sum
	}
	return activityShares(dst, activity, func(i int) float64 {
		if i >= len(replicaShares) {
			return 0
		}
		return clampShare(replicaShares[i]) * scale
	})
}

func activityShares(dst, activity []float64, replica func(i int) float64) []float64 {
	n := len(activity)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	sum, known := 0.0, true
	for _, a := range activity {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			known = false
			break
		}
		sum += max(a, 0)
	}
	for i, a := range activity {
		switch {
		case !known:
			dst[i] = replica(i)
		case sum > 1:
			dst[i] = max(a, 0) / sum
		default:
			dst[i] = max(a, 0) + (1-sum)*replica(i)
		}
	}
	return dst
}
