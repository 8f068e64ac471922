package model

import (
	"cmp"
	"slices"
	"time"

	"github.com/gputally/gputally/report/model/sketch"
)

// The states of gputally_gpu_seconds_total and gputally_cost_eur_total, as
// indices into LedgerEntry.Seconds and LedgerEntry.EUR.
const (
	StateBusy = iota
	StateIdle
	StateUnallocated
	StateLost    // the GPU fell off the bus: its capital, no holder
	StateUnknown // holder or activity not measured
	NumStates
)

// StateIndex returns the index of the ledger's `state` label value s, and
// false for a value the ledger does not write.
func StateIndex(s string) (int, bool) {
	switch s {
	case "busy":
		return StateBusy, true
	case "idle":
		return StateIdle, true
	case "unallocated":
		return StateUnallocated, true
	case "lost":
		return StateLost, true
	case "unknown":
		return StateUnknown, true
	}
	return 0, false
}

// GPUKey names a physical GPU: its UUID in its cluster, the value of the
// report's cluster label ("" without one). The same UUID in two clusters is
// two GPUs, as the same node name is two nodes.
type GPUKey struct{ Cluster, UUID string }

// DeviceKey names a physical GPU (GI and Profile empty) or one of its MIG
// instances: GI is its GPU_I_ID and Profile its GPU_I_PROFILE. An instance
// id the GPU reuses with another profile after a reconfiguration is another
// device.
type DeviceKey struct{ Cluster, UUID, GI, Profile string }

// GPU returns the physical GPU the device is or is part of.
func (k DeviceKey) GPU() GPUKey { return GPUKey{Cluster: k.Cluster, UUID: k.UUID} }

// HolderKey names a container; the zero value is no one (unallocated). Its
// cluster is its device's.
type HolderKey struct{ Namespace, Pod, Container string }

// Name names the container for people: namespace/pod/container.
func (k HolderKey) Name() string { return k.Namespace + "/" + k.Pod + "/" + k.Container }

// PodKey names a pod in a cluster.
type PodKey struct{ Cluster, Namespace, Pod string }

// Pod returns the pod of holding k's container.
func (k HoldingKey) Pod() PodKey {
	return PodKey{Cluster: k.Dev.Cluster, Namespace: k.Holder.Namespace, Pod: k.Holder.Pod}
}

// NodeName names a node for people: "cluster/node", or the node alone
// without a cluster.
func NodeName(cluster, node string) string {
	switch {
	case cluster == "":
		return node
	case node == "":
		return cluster + "/(none)"
	}
	return cluster + "/" + node
}

// NoClusterDir names, in the directories of the configuration to apply, the
// cluster of devices without a cluster label among others with one.
const NoClusterDir = "no-cluster"

// HoldingKey is one container on one device.
type HoldingKey struct {
	Dev    DeviceKey
	Holder HolderKey
}

// LedgerEntry is what the ledger recorded for one holding over the range.
type LedgerEntry struct {
	Model, Host, Profile string
	GPU                  string             // the GPU's `gpu` label: its index on the node
	Seconds              [NumStates]float64 // device-seconds per state
	EUR                  [NumStates]float64 // EUR per state
	BusyBuckets          BucketSet          // the step buckets with busy seconds; empty for the previous period
	IdleBuckets          BucketSet          // the step buckets with idle seconds; empty for the previous period
	Last                 int                // the last step bucket with seconds in any state; -1: none
	Kind                 Kind               // which kind of number Seconds and EUR are; Exact for the ledger

	// Joules is the facility energy per state, J: measured power × PUE ×
	// time (gputally_energy_joules_total), the energy the EUR price. Only
	// when Metered.
	Joules [NumStates]float64
	// Metered is true when the source read the holding's energy: its GPU is
	// priced with an energy component and its power was read. Without, the
	// holding has no energy figure (a flat-rate model, no power readings),
	// which is not 0.
	Metered bool
}

// NodeKey names a node in its cluster.
type NodeKey struct{ Cluster, Node string }

// Gap is a stretch (From, To] in which a sampled source had no sample of a
// GPU between two that it had: Seconds device-seconds charged as unknown to
// the holders of its last sample before it (none: no one held it).
type Gap struct {
	GPU         GPUKey
	Host, Index string // its node, and its index there (the `gpu` label)
	Holders     []HolderKey
	From, To    time.Time
	Seconds     float64
}

// GPUSeen is what the ledger recorded of one physical GPU over the range.
type GPUSeen struct {
	Host, GPU string
	Seen      []float64 // device-seconds over all states per step bucket
	Unknown   float64   // of them unknown, over the range
	FirstLost int       // first bucket with lost seconds; -1: none
}

// Concurrency is how many devices were busy at the same time, per
// namespace and MIG profile, at the finest resolution the data has.
type Concurrency struct {
	// Interval is the resolution of the reading: the scrape interval of the
	// exporters (Scraped), or the range's Resolution when that could not be
	// read. A device counts as busy in (t − Interval, t] when its ledger
	// counted busy time there.
	Interval time.Duration
	Scraped  bool
	// First is the end of the range's first interval.
	First time.Time
	// Busy holds, per namespace and MIG profile, the devices busy in each
	// interval of the range: Busy[k][i] in the one ending at First + i ×
	// Interval.
	Busy map[ConcurrencyKey][]int32
}

// ConcurrencyKey is a namespace in a cluster and a MIG profile ("" for whole
// GPUs and time-sliced shares of them).
type ConcurrencyKey struct{ Cluster, Namespace, Profile string }

// HeatCell sums the device activity ratios (0–1) sampled in one hour of the
// week.
type HeatCell struct {
	Sum float64
	N   int
}

// Range is the period a source collects: (Start, End] in buckets of Step for
// the ledger, and steps of Resolution for activity and framebuffer.
type Range struct {
	Start, End time.Time
	Step       time.Duration
	Resolution time.Duration
}

// Dataset is what a source collected over a Range: everything the analysis
// and the advice read. A source fills it; the layers above only read it.
type Dataset struct {
	Range
	Buckets int // step buckets in the range

	Ledger   map[HoldingKey]*LedgerEntry
	Present  []bool               // per bucket: it has ledger data
	Timeline [][NumStates]float64 // fleet device-seconds per bucket and state
	Alloc    map[HoldingKey]Alloc
	// Activity and FBMiB are the distributions of each holding's activity
	// ratio (0–1, the average of each resolution step) and framebuffer
	// (MiB, the peak of each step) over the range, in sketches of fixed
	// size (percentiles within 1 %, the peak exact): AddActivity,
	// AddFramebuffer.
	Activity map[HoldingKey]*sketch.Sketch
	FBMiB    map[HoldingKey]*sketch.Sketch
	Heat     [7][24]HeatCell             // device activity by weekday (0 = Sunday) and hour, UTC
	PodTeams map[PodKey]string           // team label per pod, from kube_pod_labels
	Previous map[HoldingKey]*LedgerEntry // the period before; nil when it has no data to compare with
	GPUs     map[GPUKey]*GPUSeen         // what the range saw of each GPU
	MIGMode  map[GPUKey]string           // gputally_gpu_info's mig_mode at the GPU's last sample; absent: not known
	// EndSeconds are the device-seconds per state each holding had in the
	// range's last step bucket; nil when the source does not read that
	// bucket apart (the advice then cannot tell whether a holding is still
	// idle at the end).
	EndSeconds map[HoldingKey][NumStates]float64
	// Shares are the shares of their device that shared holdings —
	// time-sliced, MPS, HAMi, KAI-Scheduler, DRA — had at their last sample
	// (gputally_gpu_allocation).
	Shares map[HoldingKey]Share
	// Concurrency is how many devices each namespace kept busy at the same
	// time; nil when the source cannot tell.
	Concurrency *Concurrency
	// Gaps are the stretches a sampled source had no sample of a GPU in,
	// between two it had: its seconds there are its holders' unknown time.
	Gaps []Gap
	// NoDrain are the nodes whose unallocated time is no evidence that
	// their GPUs are free — the source could not read what the node hands
	// out, and its notes say so: no drain advice is made for them.
	NoDrain map[NodeKey]bool

	// Warnings are the backend's words about answers it marked partial or
	// incomplete (warnings, isPartial, infos that say data is missing): any
	// makes the report partial.
	Warnings []string
	// Notes are what the source found and corrected in the data (series
	// delivered twice); the report says them.
	Notes    []string
	Requests int // requests the source made

	// Waiting is what kube-state-metrics says of the GPU pods that waited
	// for a node and of the free capacity beside them; nil when the source
	// read none (waiting.go).
	Waiting *Waiting
	// IdleEUR is, per cluster, the allocated-idle EUR of each step bucket
	// (AddEUR); nil when the source books none apart.
	IdleEUR map[string][]float64

	// Sampling is a sampled source's statement of how it read the range —
	// its grid and what that resolution means for the figures — in a
	// sentence the report prints under its headline; empty for the ledger's
	// exact counters.
	Sampling string
}

// NewDataset returns an empty dataset over r, its maps made and its
// per-bucket slices sized.
func NewDataset(r Range) *Dataset {
	d := &Dataset{
		Range:    r,
		Buckets:  int(r.End.Sub(r.Start) / r.Step),
		Alloc:    map[HoldingKey]Alloc{},
		MIGMode:  map[GPUKey]string{},
		Activity: map[HoldingKey]*sketch.Sketch{},
		FBMiB:    map[HoldingKey]*sketch.Sketch{},
		PodTeams: map[PodKey]string{},
		GPUs:     map[GPUKey]*GPUSeen{},
		Shares:   map[HoldingKey]Share{},
	}
	d.Present = make([]bool, d.Buckets)
	d.Timeline = make([][NumStates]float64, d.Buckets)
	return d
}

// SortedKeys returns the keys of m in a fixed order, so that sums come out
// the same in every run.
func SortedKeys(m map[HoldingKey]*LedgerEntry) []HoldingKey {
	keys := make([]HoldingKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, CompareHoldingKeys)
	return keys
}

// CompareGPUKeys orders GPUs by cluster, then UUID.
func CompareGPUKeys(a, b GPUKey) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.UUID, b.UUID))
}

// CompareHoldingKeys orders holdings by cluster, UUID, instance, profile and
// holder.
func CompareHoldingKeys(a, b HoldingKey) int {
	return cmp.Or(cmp.Compare(a.Dev.Cluster, b.Dev.Cluster), cmp.Compare(a.Dev.UUID, b.Dev.UUID), cmp.Compare(a.Dev.GI, b.Dev.GI),
		cmp.Compare(a.Dev.Profile, b.Dev.Profile), cmp.Compare(a.Holder.Namespace, b.Holder.Namespace),
		cmp.Compare(a.Holder.Pod, b.Holder.Pod), cmp.Compare(a.Holder.Container, b.Holder.Container))
}

// GPU returns what the range saw of GPU k, which entry e is on: made, with
// e's node and index, the first time.
func (d *Dataset) GPU(k GPUKey, e *LedgerEntry) *GPUSeen {
	g := d.GPUs[k]
	if g == nil {
		g = &GPUSeen{Host: e.Host, GPU: e.GPU, Seen: make([]float64, d.Buckets), FirstLost: -1}
		d.GPUs[k] = g
	}
	return g
}

// AddHeat adds a device activity ratio v (0–1) sampled at t to the hour of
// the week (UTC) t is in.
func (d *Dataset) AddHeat(t time.Time, v float64) {
	t = t.UTC()
	h := &d.Heat[t.Weekday()][t.Hour()]
	h.Sum += v
	h.N++
}

// AddActivity records holding k's activity ratio v (0–1) in one resolution
// step.
func (d *Dataset) AddActivity(k HoldingKey, v float64) { addTo(d.Activity, k, v) }

// AddFramebuffer records holding k's peak framebuffer v (MiB) in one
// resolution step.
func (d *Dataset) AddFramebuffer(k HoldingKey, v float64) { addTo(d.FBMiB, k, v) }

// addTo adds v to k's sketch in m, made the first time.
func addTo(m map[HoldingKey]*sketch.Sketch, k HoldingKey, v float64) {
	s := m[k]
	if s == nil {
		s = &sketch.Sketch{}
		m[k] = s
	}
	s.Add(v)
}

// AddSeconds books v device-seconds of state st in step bucket b to entry e
// on GPU g: the bucket's presence and the fleet's timeline, the GPU's seen and
// unknown seconds and its first lost bucket, the entry's last bucket with
// seconds and its buckets with busy and with idle seconds. e.Seconds is the
// caller's.
func (d *Dataset) AddSeconds(e *LedgerEntry, g *GPUSeen, b, st int, v float64) {
	d.Present[b] = true
	if v > 0 {
		e.Last = max(e.Last, b)
	}
	d.Timeline[b][st] += v
	g.Seen[b] += v
	switch {
	case st == StateUnknown:
		g.Unknown += v
	case st == StateLost && v > 0 && (g.FirstLost < 0 || b < g.FirstLost):
		g.FirstLost = b
	case st == StateBusy && v > 0:
		e.BusyBuckets.Add(b)
	case st == StateIdle && v > 0:
		e.IdleBuckets.Add(b)
	}
}
