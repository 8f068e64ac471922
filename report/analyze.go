package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"

	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// HoursPerMonth is the month every EUR/month figure is scaled to: the
// calendar average, 365.25 days × 24 h ÷ 12 = 730.5 h (docs/report.md).
const HoursPerMonth = 365.25 * 24 / 12

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
	Name     string  `json:"name"`
	Totals   Totals  `json:"totals"`
	Usage    Usage   `json:"usage"`
	Previous *Totals `json:"previous,omitempty"` // the previous period, when it has data
}

// Holding is one container on one device (a GPU, a MIG instance or a
// time-sliced share) over the range.
type Holding struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Team      string `json:"team"`
	Node      string `json:"node"`
	Model     string `json:"model"`
	UUID      string `json:"uuid"`
	MIGID     string `json:"mig_instance,omitempty"` // GPU_I_ID
	Profile   string `json:"mig_profile,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Sharing   string `json:"sharing,omitempty"`
	Totals    Totals `json:"totals"`
	Usage     Usage  `json:"usage"`
}

// Recommendation is one change, the money it frees and the evidence behind
// it. FreedEURPerMonth is the measured cost of the whole GPUs the change makes
// free (FreedGPUs), per month; no GPU is freed by two recommendations.
// ReclaimableEURPerMonth is capacity the change makes free on GPUs that stay
// in use (a released MIG instance or replica, the unused part of a MIG
// layout): real, but only money once other work fills it.
type Recommendation struct {
	Kind                   string   `json:"kind"` // "release", "time-slicing", "mig", "drain"
	Target                 string   `json:"target"`
	Model                  string   `json:"model,omitempty"`
	Profile                string   `json:"mig_profile,omitempty"` // "mig": the profiles, e.g. "1g.10gb ×2"
	Replicas               int      `json:"replicas,omitempty"`
	Holdings               []string `json:"holdings,omitempty"` // namespace/pod/container
	Nodes                  []string `json:"nodes,omitempty"`    // nodes the change is applied to
	FreedGPUs              []string `json:"freed_gpus,omitempty"`
	FreedEURPerMonth       float64  `json:"freed_eur_per_month"`
	ReclaimableEURPerMonth float64  `json:"reclaimable_eur_per_month"`
	Evidence               string   `json:"evidence"`
}

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

// Apply holds the configuration that implements the recommendations: YAML
// files and the node labels that select them.
type Apply struct {
	// MIGParted is a mig-parted config file (version v1) with one config per
	// node, gputally-<node>, that lists every GPU of the node by index:
	// the ones the advice repartitions with their new layout, all others as
	// they are.
	MIGParted string `json:"mig_parted,omitempty"`
	// MIGPartedLabels are the kubectl commands that select those configs.
	MIGPartedLabels []string `json:"mig_parted_labels,omitempty"`
	// TimeSlicing is the device plugin's ConfigMap, one key per node class.
	TimeSlicing string `json:"time_slicing,omitempty"`
	// TimeSlicingLabels are the kubectl commands that select a key per node.
	TimeSlicingLabels []string `json:"time_slicing_labels,omitempty"`
	// TimeSlicingSharing warns of the other pods on those nodes that would
	// start sharing their GPUs, one line per node.
	TimeSlicingSharing []string `json:"time_slicing_sharing,omitempty"`
	// Kueue is a ResourceFlavor, a ClusterQueue per team and a LocalQueue per
	// namespace, kueue.x-k8s.io/v1beta2.
	Kueue string `json:"kueue,omitempty"`
}

// Any reports whether there is anything to apply.
func (a *Apply) Any() bool { return a.MIGParted != "" || a.TimeSlicing != "" || a.Kueue != "" }

// Report is the weekly report. It is a plain value: renderers only read it.
type Report struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Step   string    `json:"step"`
	Source string    `json:"source"`
	// Partial is true when more than 1 % of the device-hours the range should
	// hold are missing (no data) or unknown; Coverage says where.
	Partial    bool      `json:"partial"`
	Coverage   Coverage  `json:"coverage"`
	Warnings   []string  `json:"warnings,omitempty"`
	Fleet      Group     `json:"fleet"`
	GPUs       int       `json:"gpus"`
	Teams      []Group   `json:"teams"`
	Namespaces []Group   `json:"namespaces"`
	Models     []Group   `json:"models"`
	Nodes      []Group   `json:"nodes"`
	Holdings   []Holding `json:"holdings"`
	// BrokenGPUs are the GPUs that fell off the bus: repair or replace them.
	// No other advice is made for their holdings.
	BrokenGPUs      []BrokenGPU      `json:"broken_gpus,omitempty"`
	Recommendations []Recommendation `json:"recommendations"`
	Packing         []Packing        `json:"mig_packing,omitempty"`
	// FreedEURPerMonth is the headline: the measured cost of every GPU the
	// advice makes free, each counted once, per month of HoursPerMonth hours.
	FreedEURPerMonth float64 `json:"freed_eur_per_month"`
	// ReclaimableEURPerMonth is the partial capacity the advice makes free,
	// shown apart and not part of the headline.
	ReclaimableEURPerMonth float64         `json:"reclaimable_eur_per_month"`
	HoursPerMonth          float64         `json:"hours_per_month"` // the month of the EUR/month figures
	Apply                  Apply           `json:"apply"`
	Timeline               []TimelinePoint `json:"timeline"`
	// Heatmap is the mean device activity (0–1) by weekday (0 = Sunday) and
	// hour of day, UTC; -1 where there was no data.
	Heatmap [7][24]float64 `json:"heatmap"`
}

// MonthFactor scales an amount over the report's range to a month of
// HoursPerMonth hours.
func (r *Report) MonthFactor() float64 {
	h := r.End.Sub(r.Start).Hours()
	if h <= 0 {
		return 0
	}
	return HoursPerMonth / h
}

// percentile returns the q-quantile (0–1) of v by nearest rank; v is sorted in place.
func percentile(v []float32, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return exact(v[max(0, min(i, len(v)-1))])
}

// exact widens a float32 to the float64 with the same shortest decimal form
// (0.95, not 0.949999988).
func exact(v float32) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
	return f
}

func usageOf(act, fb []float32) Usage {
	var u Usage
	if len(act) > 0 {
		u.HasActivity = true
		u.P95Activity = percentile(act, 0.95)
	}
	if len(fb) > 0 {
		u.HasFB = true
		u.P99FBMiB = percentile(fb, 0.99)
		u.PeakFBMiB = exact(fb[len(fb)-1])
	}
	return u
}

// groupAcc accumulates a Group. act and fb are the holdings' own slices,
// joined only while the group's percentiles are computed: a holding belongs to
// five groups (fleet, model, node, team, namespace), and copies kept for each
// were most of the report's memory on large fleets.
type groupAcc struct {
	totals, prev Totals
	act, fb      [][]float32
}

type groupSet map[string]*groupAcc

func (g groupSet) get(name string) *groupAcc {
	a := g[name]
	if a == nil {
		a = &groupAcc{}
		g[name] = a
	}
	return a
}

func (g groupSet) groups(withPrev bool) []Group {
	out := make([]Group, 0, len(g))
	for name, a := range g {
		a.totals.finish()
		gr := Group{Name: name, Totals: a.totals, Usage: usageOf(slices.Concat(a.act...), slices.Concat(a.fb...))}
		if withPrev {
			a.prev.finish()
			p := a.prev
			gr.Previous = &p
		}
		out = append(out, gr)
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(b.Totals.CostEUR, a.Totals.CostEUR); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// analysis settings.
type analysis struct {
	teams    source.TeamMap
	headroom float64
	release  float64 // busy share below which a held device should be released
	lowDuty  float64 // busy share below which a pod suits time-slicing
	drain    float64 // unallocated share above which a node can be drained
	// migWeight splits a MIG GPU's cost over its instances, as the price book does.
	migWeight cost.MIGWeight
}

func (a *analysis) team(d *model.Dataset, h model.HolderKey) string {
	if t, ok := d.PodTeams[model.HolderKey{Namespace: h.Namespace, Pod: h.Pod}]; ok {
		return t
	}
	if t, ok := a.teams.Team(h.Namespace); ok {
		return t
	}
	return h.Namespace
}

// errNoDataFmt is the message when the range holds no gputally data at all.
const errNoDataFmt = "no GPU data: no gputally_gpu_seconds_total samples between %s and %s (is the exporter scraped, and is the range right?)"

// build turns the dataset into a report. It fails when there is no data, and
// when buckets are missing unless partial reports are allowed.
func (a *analysis) build(d *model.Dataset, allowPartial bool) (*Report, error) {
	r := &Report{Start: d.Start.UTC(), End: d.End.UTC(), Step: pmodel.Duration(d.Step).String()}
	if len(d.Ledger) == 0 {
		return nil, fmt.Errorf(errNoDataFmt, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339))
	}
	r.Coverage = coverageOf(d)
	if r.Coverage.partial() {
		msg := r.Coverage.summary()
		if !allowPartial {
			return nil, fmt.Errorf("%s (pass --allow-partial to report on what there is)", msg)
		}
		r.Partial = true
		r.Warnings = append(r.Warnings, msg)
	}
	for i := range d.Timeline {
		r.Timeline = append(r.Timeline, TimelinePoint{
			Time:             d.Start.Add(time.Duration(i+1) * d.Step).UTC(),
			BusyHours:        d.Timeline[i][model.StateBusy] / 3600,
			IdleHours:        d.Timeline[i][model.StateIdle] / 3600,
			UnallocatedHours: d.Timeline[i][model.StateUnallocated] / 3600,
			LostHours:        d.Timeline[i][model.StateLost] / 3600,
			UnknownHours:     d.Timeline[i][model.StateUnknown] / 3600,
			Missing:          !d.Present[i],
		})
	}
	for wd := range 7 {
		for h := range 24 {
			c := d.Heat[wd][h]
			r.Heatmap[wd][h] = -1
			if c.N > 0 {
				r.Heatmap[wd][h] = c.Sum / float64(c.N)
			}
		}
	}

	fleet, teams, namespaces, models, nodes := groupSet{}, groupSet{}, groupSet{}, groupSet{}, groupSet{}
	gpus := map[string]bool{}
	// groupsOf lists the groups an entry counts in: the fleet, its model and
	// its node, and for a held entry its team and namespace.
	groupsOf := func(k model.HoldingKey, e *model.LedgerEntry) []*groupAcc {
		gs := []*groupAcc{fleet.get(""), models.get(e.Model), nodes.get(e.Host)}
		if k.Holder != (model.HolderKey{}) {
			gs = append(gs, teams.get(a.team(d, k.Holder)), namespaces.get(k.Holder.Namespace))
		}
		return gs
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		gpus[k.Dev.UUID] = true
		act, fb := d.Activity[k], d.FBMiB[k]
		for _, g := range groupsOf(k, e) {
			g.totals.add(e)
			if k.Holder != (model.HolderKey{}) {
				g.act = append(g.act, act)
				g.fb = append(g.fb, fb)
			}
		}
	}
	for _, k := range model.SortedKeys(d.Previous) {
		e := d.Previous[k]
		for _, g := range groupsOf(k, e) {
			g.prev.add(e)
		}
	}
	withPrev := d.Previous != nil
	r.Fleet = fleet.groups(withPrev)[0]
	r.Fleet.Name = "fleet"
	r.GPUs = len(gpus)
	r.Teams = teams.groups(withPrev)
	r.Namespaces = namespaces.groups(withPrev)
	r.Models = models.groups(withPrev)
	r.Nodes = nodes.groups(withPrev)
	r.Holdings = a.holdings(d)
	r.BrokenGPUs = brokenGPUs(d)
	r.Warnings = append(r.Warnings, unknownNodeWarnings(r)...)
	r.Warnings = append(r.Warnings, unknownHoldingWarnings(r)...)
	a.recommend(r, d)
	return r, nil
}

func (a *analysis) holdings(d *model.Dataset) []Holding {
	var out []Holding
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		if k.Holder == (model.HolderKey{}) {
			continue
		}
		var t Totals
		t.add(e)
		t.finish()
		al := d.Alloc[k]
		out = append(out, Holding{
			Namespace: k.Holder.Namespace, Pod: k.Holder.Pod, Container: k.Holder.Container,
			Team: a.team(d, k.Holder), Node: e.Host, Model: e.Model, UUID: k.Dev.UUID, MIGID: k.Dev.GI,
			Profile: e.Profile, Resource: al.Resource, Sharing: al.Sharing,
			Totals: t, Usage: usageOf(d.Activity[k], d.FBMiB[k]),
		})
	}
	slices.SortFunc(out, func(a, b Holding) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Container, b.Container), cmp.Compare(a.UUID, b.UUID), cmp.Compare(a.MIGID, b.MIGID))
	})
	return out
}
