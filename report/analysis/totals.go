package analysis

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/model/sketch"
)

// Totals are GPU-hours and EUR of a group over the range. Hours are device-hours
// (a MIG instance or a time-sliced share counts as its part of a GPU).
type Totals struct {
	GPUHours         float64 `json:"gpu_hours"`  // busy + idle + unallocated + lost + unknown
	HeldHours        float64 `json:"held_hours"` // busy + idle
	BusyHours        float64 `json:"busy_hours"`
	IdleHours        float64 `json:"idle_hours"` // allocated but idle
	UnallocatedHours float64 `json:"unallocated_hours"`
	LostHours        float64 `json:"lost_hours"`    // on GPUs that fell off the bus
	UnknownHours     float64 `json:"unknown_hours"` // holder or activity not measured
	CostEUR          float64 `json:"cost_eur"`
	BusyEUR          float64 `json:"busy_eur"`
	IdleEUR          float64 `json:"idle_eur"` // allocated but idle
	UnallocatedEUR   float64 `json:"unallocated_eur"`
	LostEUR          float64 `json:"lost_eur"`
	UnknownEUR       float64 `json:"unknown_eur"`
	BusyShare        float64 `json:"busy_share"` // busy hours / held hours, 0–1
	// EnergyKWh is the facility energy (measured power × PUE × time, the
	// energy the EUR price), kWh; nil when no device of the group had
	// energy readings. It covers the device-hours but UnmeteredHours.
	EnergyKWh *float64 `json:"energy_kwh,omitempty"`
	// KgCO2e is the emission of that energy at its cluster's carbon
	// intensity, kg CO2e; IdleKgCO2e its part emitted while the GPUs were
	// held idle. nil without energy or without a carbon intensity.
	KgCO2e     *float64 `json:"kgco2e,omitempty"`
	IdleKgCO2e *float64 `json:"idle_kgco2e,omitempty"`
	// UnmeteredHours are the device-hours without energy readings: models
	// priced by a flat rate, GPUs whose power was not read. Their energy is
	// not known, not 0.
	UnmeteredHours float64 `json:"unmetered_hours"`
}

func (t *Totals) add(e *model.LedgerEntry) {
	t.BusyHours += e.Seconds[model.StateBusy] / 3600
	t.IdleHours += e.Seconds[model.StateIdle] / 3600
	t.UnallocatedHours += e.Seconds[model.StateUnallocated] / 3600
	t.LostHours += e.Seconds[model.StateLost] / 3600
	t.UnknownHours += e.Seconds[model.StateUnknown] / 3600
	t.BusyEUR += e.EUR[model.StateBusy]
	t.IdleEUR += e.EUR[model.StateIdle]
	t.UnallocatedEUR += e.EUR[model.StateUnallocated]
	t.LostEUR += e.EUR[model.StateLost]
	t.UnknownEUR += e.EUR[model.StateUnknown]
}

func (t *Totals) finish() {
	t.HeldHours = t.BusyHours + t.IdleHours
	t.GPUHours = t.HeldHours + t.UnallocatedHours + t.LostHours + t.UnknownHours
	t.CostEUR = t.BusyEUR + t.IdleEUR + t.UnallocatedEUR + t.LostEUR + t.UnknownEUR
	if t.HeldHours > 0 {
		t.BusyShare = t.BusyHours / t.HeldHours
	}
}

// Usage is activity and framebuffer of a group. Has* are false when no
// series carried the signal; the values are then 0.
type Usage struct {
	HasActivity bool    `json:"has_activity"`
	P95Activity float64 `json:"p95_activity"` // ratio 0–1 of the resolution-step averages
	HasFB       bool    `json:"has_framebuffer"`
	PeakFBMiB   float64 `json:"peak_fb_mib"`
	P99FBMiB    float64 `json:"p99_fb_mib"`
}

// Group is one row of a table: a team, namespace, GPU model or node.
type Group struct {
	Name string `json:"name"`
	// Cluster is a node's cluster; empty for other groups and without a
	// cluster label.
	Cluster string `json:"cluster,omitempty"`
	// Kind is which kind of number its totals are: "exact" (gputally's
	// ledger), "sampled" (the dcgm-exporter source, whole devices),
	// "allocation share" (the dcgm-exporter source, shared devices), or
	// several joined by " + " (model.Kinds).
	Kind     string  `json:"kind"`
	Totals   Totals  `json:"totals"`
	Usage    Usage   `json:"usage"`
	Previous *Totals `json:"previous,omitempty"` // the previous period, when it has data
	// OwnOrRent compares owning the GPUs with renting them; set on the
	// entries of Result.Models only, its fields inline in the JSON.
	*OwnOrRent
}

// Holding is one container on one device (a GPU, a MIG instance or a
// time-sliced share) over the range.
type Holding struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Team      string `json:"team"`
	Cluster   string `json:"cluster,omitempty"` // its device's, by the report's cluster label
	Node      string `json:"node"`
	Model     string `json:"model"`
	UUID      string `json:"uuid"`
	MIGID     string `json:"mig_instance,omitempty"` // GPU_I_ID
	Profile   string `json:"mig_profile,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Sharing   string `json:"sharing,omitempty"`
	Kind      string `json:"kind"` // which kind of number its totals are (Group.Kind)
	Totals    Totals `json:"totals"`
	Usage     Usage  `json:"usage"`
	// AtEnd is true when the holding has ledger data in the range's last
	// step bucket: it is there as the range ends. Only such holdings get
	// advice; ended ones count in every total.
	AtEnd bool `json:"at_end"`
	// EndBusyShare is its busy share in that bucket, busy ÷ (busy + idle),
	// 0–1; -1 when the source did not read the bucket apart or the holding
	// was not held in it.
	EndBusyShare float64 `json:"end_busy_share"`
	// Replicas is, for a time-sliced or MPS holding, how many replicas its
	// device offered at its last sample (replicasOf); 0 when not shared or
	// not known.
	Replicas int `json:"replicas,omitempty"`
}

// Name names the holding: namespace/pod/container.
func (h *Holding) Name() string { return h.Namespace + "/" + h.Pod + "/" + h.Container }

// Place names where the holding is, for people: its node (in its cluster).
func (h *Holding) Place() string { return model.NodeName(h.Cluster, h.Node) }

// TimelinePoint is the fleet's device-hours in one step bucket ending at Time.
type TimelinePoint struct {
	Time             time.Time `json:"time"`
	BusyHours        float64   `json:"busy_hours"`
	IdleHours        float64   `json:"idle_hours"`
	UnallocatedHours float64   `json:"unallocated_hours"`
	LostHours        float64   `json:"lost_hours"`
	UnknownHours     float64   `json:"unknown_hours"`
	Missing          bool      `json:"missing,omitempty"`
}

// usageOf reads a holding's or group's usage from its sketches (nil: no
// series carried the signal): the percentiles within the sketch's 1 %, the
// peak exact.
func usageOf(act, fb *sketch.Sketch) Usage {
	var u Usage
	if act != nil && act.Count() > 0 {
		u.HasActivity = true
		u.P95Activity = exact(act.Quantile(0.95))
	}
	if fb != nil && fb.Count() > 0 {
		u.HasFB = true
		u.P99FBMiB = exact(fb.Quantile(0.99))
		u.PeakFBMiB = exact(fb.Max())
	}
	return u
}

// exact returns the float64 with the shortest decimal form of v as a
// float32 (0.95, not 0.949999988 or 0.9500000000000001): the sources'
// values carry no more digits than that.
func exact(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
	return f
}

// groupAcc accumulates a Group: act and fb merge the sketches of its
// holdings, of fixed size however many there are.
type groupAcc struct {
	totals, prev       Totals
	carbon, prevCarbon carbonAcc
	act, fb            sketch.Sketch
	kinds              model.Kinds
}

// groupKey names a group: a node in its cluster, or a team, namespace or
// model (cluster empty).
type groupKey struct{ cluster, name string }

type groupSet map[groupKey]*groupAcc

func (g groupSet) get(k groupKey) *groupAcc {
	a := g[k]
	if a == nil {
		a = &groupAcc{}
		g[k] = a
	}
	return a
}

// groups returns the groups, per cluster (nodes) and most EUR first.
func (g groupSet) groups(withPrev bool) []Group {
	out := make([]Group, 0, len(g))
	for k, a := range g {
		a.totals.finish()
		a.carbon.fill(&a.totals)
		gr := Group{Name: k.name, Cluster: k.cluster, Kind: a.kinds.String(), Totals: a.totals, Usage: usageOf(&a.act, &a.fb)}
		if withPrev {
			a.prev.finish()
			a.prevCarbon.fill(&a.prev)
			p := a.prev
			gr.Previous = &p
		}
		out = append(out, gr)
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(b.Totals.CostEUR, a.Totals.CostEUR), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (a *analyzer) holdings(d *model.Dataset) []Holding {
	replicas := replicasOf(d)
	var out []Holding
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		if k.Holder == (model.HolderKey{}) {
			continue
		}
		var t Totals
		var c carbonAcc
		t.add(e)
		t.finish()
		c.add(e, a.grid(k.Dev.Cluster))
		c.fill(&t)
		al := d.Alloc[k]
		out = append(out, Holding{
			Namespace: k.Holder.Namespace, Pod: k.Holder.Pod, Container: k.Holder.Container,
			Team: Team(d, a.teams, k), Cluster: k.Dev.Cluster, Node: e.Host, Model: e.Model, UUID: k.Dev.UUID, MIGID: k.Dev.GI,
			Profile: e.Profile, Resource: al.Resource, Sharing: al.Sharing, Kind: e.Kind.String(),
			Totals: t, Usage: usageOf(d.Activity[k], d.FBMiB[k]),
			AtEnd: e.Last >= 0 && e.Last == d.Buckets-1, EndBusyShare: endBusyShare(d, k), Replicas: replicas[k.Dev],
		})
	}
	slices.SortFunc(out, func(a, b Holding) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Container, b.Container), cmp.Compare(a.UUID, b.UUID), cmp.Compare(a.MIGID, b.MIGID), cmp.Compare(a.Profile, b.Profile))
	})
	return out
}

// endBusyShare is holding k's busy share in the range's last bucket; -1 when
// d does not have that bucket apart or k was not held in it.
func endBusyShare(d *model.Dataset, k model.HoldingKey) float64 {
	e, ok := d.EndSeconds[k]
	if held := e[model.StateBusy] + e[model.StateIdle]; ok && held > 0 {
		return e[model.StateBusy] / held
	}
	return -1
}

// maxReplicas bounds the replicas replicasOf considers, as the simulator and
// common device plugin configs do.
const maxReplicas = 64

// replicasOf returns, per time-sliced or MPS device, the replicas it offered
// at the last sample of its holders: the smallest count n ≥ 2 that makes
// every share of the holders sampled then a whole number of replicas (a
// share is replicas held ÷ replicas offered). A device whose holders each
// held several replicas reads fewer than it offered (2 of 8 each reads as 1
// of 4). Devices whose shares fit no such count are left out: not known.
func replicasOf(d *model.Dataset) map[model.DeviceKey]int {
	last := map[model.DeviceKey]int{}
	shares := map[model.DeviceKey][]float64{}
	for _, k := range slices.SortedFunc(maps.Keys(d.Shares), model.CompareHoldingKeys) {
		s := d.Shares[k]
		switch b, ok := last[k.Dev]; {
		case !ok || s.Bucket > b:
			last[k.Dev], shares[k.Dev] = s.Bucket, []float64{s.Share}
		case s.Bucket == b:
			shares[k.Dev] = append(shares[k.Dev], s.Share)
		}
	}
	out := map[model.DeviceKey]int{}
	for dev, ss := range shares {
		for n := 2; n <= maxReplicas; n++ {
			if !slices.ContainsFunc(ss, func(s float64) bool {
				k := s * float64(n)
				return math.Abs(k-math.Round(k)) > 1e-6 || math.Round(k) < 1
			}) {
				out[dev] = n
				break
			}
		}
	}
	return out
}
