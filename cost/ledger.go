package cost

import (
	"math"
	"time"

	"github.com/gputally/gputally/mig"
)

// State is the state a part of a device was in during a tick: the `state`
// label of gputally_gpu_seconds_total and gputally_cost_eur_total.
type State uint8

// The states of the ledger.
const (
	// Busy: held by a known container, with its activity measured at or
	// above the idle threshold.
	Busy State = iota
	// Idle: held by a known container, with its activity measured below the
	// idle threshold.
	Idle
	// Unallocated: attribution said no one holds it (a GPU no pod holds, an
	// instance no pod holds, the replicas of a time-sliced GPU no pod holds),
	// or MIG slices in no instance that could still host one.
	Unallocated
	// Lost: the GPU fell off the bus; its capital (and overhead) keeps
	// accruing, energy 0. Only on the GPU's own series, with no holder.
	Lost
	// Unknown: who held the part, or how active it was, was not measured:
	// attribution off or stale, a holder without an activity signal, a
	// backend outage beyond the charged interval. With the holder's key when
	// the holder is known but its activity is not; with no holder otherwise.
	Unknown
)

// String returns the label value: "busy", "idle", "unallocated", "lost" or "unknown".
func (s State) String() string {
	switch s {
	case Busy:
		return "busy"
	case Idle:
		return "idle"
	case Unallocated:
		return "unallocated"
	case Lost:
		return "lost"
	default:
		return "unknown"
	}
}

// HolderKey names the container that holds (part of) a device. The zero
// HolderKey is no one: the key of unallocated, lost and unattributed unknown series.
type HolderKey struct {
	Namespace, Pod, Container string
}

// Holder is one container holding a whole GPU or MIG instance, or a share of it.
type Holder struct {
	Key HolderKey
	// Share is the part of the device the holder pays for, 0–1: 1 for an
	// exclusive device, an ActivityShares result for a time-sliced one. The
	// shares of one device should sum to at most 1; the remainder is
	// unallocated (or unknown when the device's holders are not known). A sum
	// above 1 is scaled down to 1; NaN or negative counts as 0.
	Share float64
	// Activity is the holder's own activity ratio, 0–1 (per-process accounting on
	// a shared GPU); NaN uses the device's activity.
	Activity float64
	// ActivityEstimated is true when the device's activity stands for the
	// holder's own on a device it shares (a fractional share without
	// per-process accounting): its busy and idle time then also count as
	// estimated (AppendEstimates).
	ActivityEstimated bool
}

// Instance is one MIG instance of a GPU.
type Instance struct {
	UUID          string // "MIG-…"
	ComputeSlices int    // of 7
	MemorySlices  int    // of 8
	// Activity is the instance's activity ratio, 0–1; NaN when there is no
	// signal (its holders' time is then unknown unless they carry their own).
	Activity float64
	// HoldersKnown is true when attribution said who holds the instance:
	// Holders is then complete (empty: no one) and the part no holder holds is
	// unallocated. When false, that part is unknown.
	HoldersKnown bool
	Holders      []Holder
}

// HostableSlices says how much of a MIG GPU's capacity outside its instances
// could still host an instance (mig.Model.Hostable).
type HostableSlices struct {
	// Known is false when the GPU's profile table is not known: every slice in
	// no instance then counts as hostable.
	Known bool
	// Compute and Memory are the compute slices (of 7) and memory slices (of
	// 8) in no instance that further instances could still use. The other free
	// slices are stranded and charged to the instances by weight.
	Compute, Memory int
}

// HostableFor returns what of a MIG layout (its instances' profiles) on a GPU
// of model modelName could still host an instance; not Known for a model
// without MIG profiles or a layout they cannot make.
func HostableFor(modelName string, layout []string) HostableSlices {
	m, ok := mig.ForModel(modelName)
	if !ok {
		return HostableSlices{}
	}
	c, mem, err := m.Hostable(layout)
	if err != nil {
		return HostableSlices{}
	}
	return HostableSlices{Known: true, Compute: c, Memory: mem}
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
	// Lost is true once the GPU fell off the bus: the whole tick is charged as
	// Lost on the GPU's own series at its capital and overhead (a flat rate
	// whole), energy 0, and the last power seen is forgotten. Holders and
	// Instances are then ignored: their series freeze and leave after the
	// retention window.
	Lost bool
	// MIG is true when the GPU is in MIG mode: its cost splits over Instances
	// and Holders is ignored. A MIG GPU without instances is wholly unallocated
	// (unknown when FreeSlicesMayBeHeld).
	MIG bool
	// HoldersKnown is true when attribution said who holds the GPU (when
	// !MIG): Holders is then complete (empty: no one) and the part no holder
	// holds is unallocated. When false, that part is unknown.
	HoldersKnown bool
	Holders      []Holder   // holders of the whole GPU, when !MIG
	Instances    []Instance // when MIG
	// Hostable describes the slices in no instance, when MIG. It depends only
	// on the MIG layout: the caller computes it once per inventory.
	Hostable HostableSlices
	// FreeSlicesMayBeHeld is true, when MIG, if some holder may hold slices
	// that are in no instance of Instances: a DRA allocation that could not be
	// mapped may be a dynamic MIG instance created since the inventory was
	// read. The hostable slices in no instance are then unknown instead of
	// unallocated.
	FreeSlicesMayBeHeld bool
}

// Total is the cumulative value of one ledger series since the process started.
type Total struct {
	GPU     string    // UUID of the physical GPU
	Device  string    // UUID of the device the series is about: the GPU or one of its MIG instances
	Holder  HolderKey // zero for Unallocated, Lost and unattributed Unknown
	State   State
	Seconds float64 // device-seconds: wall seconds × the part of the GPU
	EUR     float64
	// Joules is the facility energy of the series, J: the GPU's measured
	// power × PUE × its device-seconds, the energy its EUR price. Only
	// when Metered.
	Joules float64
	// Metered is true when the GPU's energy is metered: its price in force
	// has an energy component (not a flat hourly_eur) and the ledger has
	// seen a power reading for it. Without, the GPU has no energy figure.
	Metered bool
	// Since is the ledger time (s, the sum of the tick lengths so far) of
	// the first tick the series was in: it counts from 0 there. A series
	// dropped after the retention window that comes back starts again with
	// a later Since, so a reader that kept its last value tells the new
	// life by it, whatever the values.
	Since float64
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
// for concurrent use: the sampler goroutine reads the share policy
// (SharePolicy), calls Advance and then reads the totals with AppendTotals,
// AppendRates and AppendEstimates, and publishes copies.
//
// Series follow the input: when a holder, MIG instance or GPU is no longer in
// the GPUState passed to Advance, its series stay, frozen at their final
// values, for the retention window (WithRetention), so scrapes read their
// last increment; then they are dropped. One that comes back within the window
// continues its counters; one that comes back later starts again at zero,
// which PromQL's increase() reads as a new series or a counter reset. Every
// GPU and MIG instance always has an unallocated series, and every holder a
// busy and an idle series, even at zero; lost and unknown series appear the
// first tick their state applies (at zero when that tick has no length).
type Ledger struct {
	books     BookSource
	retention float64 // s
	now       float64 // ledger time: the sum of the tick lengths so far, s
	gpus      table[string, gpuAcc]
}

// NewLedger returns an empty ledger that prices GPUs with the book books gives
// at each Advance.
func NewLedger(books BookSource, opts ...Option) *Ledger {
	l := &Ledger{books: books, retention: DefaultRetention.Seconds()}
	for _, o := range opts {
		o(l)
	}
	return l
}

type holderAcc struct {
	busy, idle counter
	unknown    lazyCounter
	estimated  lazyCounter // the busy and idle time judged by the device's activity (shares.go)
}

// deviceAcc holds the series of one GPU or MIG instance.
type deviceAcc struct {
	unalloc counter
	unknown lazyCounter // no holder
	lost    lazyCounter // the GPU's own series only
	holders table[HolderKey, holderAcc]
}

type gpuAcc struct {
	model     string
	book      *Book
	price     *ModelPrice // book.Price(model), cached per book and model
	powerW    float64     // last known power, W; 0 (no energy) until one is seen and after a loss
	rate      Rate
	whole     deviceAcc // the GPU: its holders, its free MIG slices, its lost time
	instances table[string, deviceAcc]

	energy energyMeter // the facility power the rate's energy prices
}

// tick is what one call adds to the ledger.
type tick struct {
	sec       float64 // device-seconds of a whole GPU
	measured  bool    // false: a gap in which the devices were not read
	threshold float64 // idle threshold of the book
	facilityW float64 // the GPU's facility power, W: joules per device-second
}

// Advance adds one tick of length dt, charged at the readings in gpus: for
// every GPU, rate × dt/3600 EUR and dt of device-seconds, split over its parts.
// A dt of zero or less adds nothing but still follows the holders and devices
// in gpus. In steady state (the same GPUs, instances and holders as the last
// call) Advance does not allocate.
func (l *Ledger) Advance(dt time.Duration, gpus []GPUState) {
	l.advance(dt, gpus, true)
}

// AdvanceUnmeasured adds a stretch of length dt in which the devices were not
// read (a backend outage beyond the interval one sample may cover), priced at
// the rates the readings in gpus give: each GPU's rate × dt/3600 EUR and dt
// device-seconds go to Unknown — on each holder's series in gpus by its share,
// and with no holder for the rest (unheld parts, free MIG slices, a lost GPU).
// Callers pass the holders known to have held through the stretch
// (HeldThroughout), not those of the sample after it. It follows holders and
// devices and allocates like Advance.
func (l *Ledger) AdvanceUnmeasured(dt time.Duration, gpus []GPUState) {
	l.advance(dt, gpus, false)
}

func (l *Ledger) advance(dt time.Duration, gpus []GPUState, measured bool) {
	book := l.books.Book()
	t := tick{sec: max(dt.Seconds(), 0), measured: measured, threshold: book.IdleThreshold}
	l.now += t.sec
	l.gpus.sync(len(gpus), func(i int) string { return gpus[i].UUID }, l.now)
	for i := range gpus {
		in, acc := &gpus[i], l.gpus.at(i)
		acc.updateRate(book, in)
		acc.energy.update(acc.price, acc.powerW, in)
		t.facilityW = acc.energy.facilityW
		eur := acc.rate.Total() * t.sec / 3600
		switch {
		case in.Lost:
			acc.whole.holders.sync(0, nil, l.now)
			acc.instances.sync(0, nil, l.now)
			if t.measured {
				acc.whole.lost.add(t, t.sec, eur)
			} else {
				acc.whole.unknown.add(t, t.sec, eur)
			}
		case !in.MIG:
			acc.whole.holders.sync(len(in.Holders), func(j int) HolderKey { return in.Holders[j].Key }, l.now)
			acc.instances.sync(0, nil, l.now)
			acc.whole.split(in.Holders, in.HoldersKnown, in.Activity, t, 1, eur)
		default:
			acc.whole.holders.sync(0, nil, l.now)
			acc.instances.sync(len(in.Instances), func(j int) string { return in.Instances[j].UUID }, l.now)
			acc.splitMIG(in, book.MIGWeight, t, eur, l.now)
		}
		acc.whole.holders.prune(l.now, l.retention)
		acc.instances.prune(l.now, l.retention)
		for k := range acc.instances.rows {
			acc.instances.rows[k].val.holders.prune(l.now, l.retention)
		}
	}
	l.gpus.prune(l.now, l.retention)
}

// splitMIG splits a tick of a MIG GPU over its instances by weight. Free
// slices that could host an instance are the GPU's unallocated part; stranded
// ones (no instance of the model could use them) are charged to the instances
// in proportion to their weights.
func (acc *gpuAcc) splitMIG(in *GPUState, weight MIGWeight, t tick, eur, now float64) {
	weights := 0.0
	for _, inst := range in.Instances {
		weights += weight.Weight(inst.ComputeSlices, inst.MemorySlices)
	}
	scale := 1.0
	if weights > 1 {
		scale = 1 / weights
	}
	allocated := weights * scale
	free := remainder(allocated)
	hostable := free
	if h := weight.Weight(in.Hostable.Compute, in.Hostable.Memory); in.Hostable.Known && allocated > 0 && h < free-1e-12 {
		// The instances take all but the hostable part: their own weights
		// and the stranded slices in proportion.
		scale *= (1 - h) / allocated
		hostable = h
	}
	for j := range in.Instances {
		inst := &in.Instances[j]
		d := acc.instances.at(j)
		d.holders.sync(len(inst.Holders), func(k int) HolderKey { return inst.Holders[k].Key }, now)
		w := weight.Weight(inst.ComputeSlices, inst.MemorySlices) * scale
		d.split(inst.Holders, inst.HoldersKnown, inst.Activity, t, w, eur*w)
	}
	// Slices in no instance: the inventory, not the kubelet, says no pod can
	// hold them, so they are unallocated whatever the kubelet reports —
	// unless an unmapped holder may hold an instance the inventory lacks.
	if t.measured && !in.FreeSlicesMayBeHeld {
		acc.whole.unalloc.add(t, t.sec*hostable, eur*hostable)
	} else if hostable > 0 {
		acc.whole.unknown.add(t, t.sec*hostable, eur*hostable)
	}
}

// updateRate sets acc.rate from the book and the GPU's power. A lost GPU draws
// no power: its rate is capital and overhead, and its last power is forgotten.
func (acc *gpuAcc) updateRate(book *Book, in *GPUState) {
	if acc.book != book || acc.model != in.Model {
		acc.book, acc.model = book, in.Model
		acc.price = book.Price(in.Model)
	}
	switch {
	case in.Lost:
		acc.powerW = 0
	case knownPower(in.PowerW): // else a failed read or a broken sensor: keep the last
		acc.powerW = in.PowerW
	}
	if acc.price == nil {
		acc.rate = Rate{}
		return
	}
	acc.rate = acc.price.Rate(acc.powerW)
}

// split adds the part w of a tick (w × t.sec device-seconds, eur EUR) to d's
// series: to each holder its share — busy or idle by its activity when the
// tick was measured and the activity is known, else unknown — and the rest to
// unallocated when the holders are known and the tick measured, else unknown.
// d.holders must be synced to holders.
func (d *deviceAcc) split(holders []Holder, known bool, activity float64, t tick, w, eur float64) {
	sec := t.sec * w
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
		acc := d.holders.at(j)
		switch {
		case !t.measured || math.IsNaN(a):
			acc.unknown.add(t, sec*s, eur*s)
			continue
		case a < t.threshold:
			acc.idle.add(t, sec*s, eur*s)
		default:
			acc.busy.add(t, sec*s, eur*s)
		}
		if h.ActivityEstimated && math.IsNaN(h.Activity) {
			acc.estimated.add(t, sec*s, eur*s)
		}
	}
	free := remainder(held)
	if known && t.measured {
		d.unalloc.add(t, sec*free, eur*free)
	} else if free > 0 {
		d.unknown.add(t, sec*free, eur*free)
	}
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

// AppendTotals appends the cumulative value of every series to dst and returns
// the extended slice: per GPU (those of the last Advance in its order, then
// those retained), the GPU's series — unallocated, lost and unknown once used,
// its holders' busy, idle and (once used) unknown — then per MIG instance the
// same. Appending to a slice with room left does not allocate.
func (l *Ledger) AppendTotals(dst []Total) []Total {
	for i := range l.gpus.rows {
		r := &l.gpus.rows[i]
		metered := r.val.energy.metered
		dst = r.val.whole.appendTotals(dst, r.key, r.key, r.since, metered)
		for j := range r.val.instances.rows {
			ir := &r.val.instances.rows[j]
			dst = ir.val.appendTotals(dst, r.key, ir.key, ir.since, metered)
		}
	}
	return dst
}

// appendTotals appends the device's series; since is when its row was made.
// A holder's row is made with or after its device's, so its own since is
// its series'. metered says whether the GPU's energy is metered.
func (d *deviceAcc) appendTotals(dst []Total, gpu, device string, since float64, metered bool) []Total {
	t := Total{GPU: gpu, Device: device, Since: since, Metered: metered}
	dst = append(dst, t.of(Unallocated, &d.unalloc))
	if d.lost.used {
		dst = append(dst, t.of(Lost, &d.lost.counter))
	}
	if d.unknown.used {
		dst = append(dst, t.of(Unknown, &d.unknown.counter))
	}
	for i := range d.holders.rows {
		h := &d.holders.rows[i]
		t.Holder, t.Since = h.key, h.since
		dst = append(dst, t.of(Busy, &h.val.busy), t.of(Idle, &h.val.idle))
		if h.val.unknown.used {
			dst = append(dst, t.of(Unknown, &h.val.unknown.counter))
		}
	}
	return dst
}

// AppendRates appends the rate in force at the last Advance for every GPU, in
// the order of that call, to dst and returns the extended slice. GPUs retained
// after leaving the input have no rate.
func (l *Ledger) AppendRates(dst []GPURate) []GPURate {
	for j := range l.gpus.index {
		r := &l.gpus.rows[l.gpus.index[j]]
		dst = append(dst, GPURate{UUID: r.key, Model: r.val.model, Rate: r.val.rate, Priced: r.val.price != nil})
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
