package analysis

import (
	"cmp"
	"math"
	"slices"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// Waiting is the GPU demand that waited for a node over the range
// (docs/report.md, "Demand that waits"), from kube-state-metrics
// (model.Waiting). A pod waits from its creation until it is bound to a
// node, deleted unbound, or the range ends; one bound within a scrape
// interval of kube-state-metrics waited 0 and is not counted. GPU-hours are
// the pod's request (devices of its GPU resources) × the hours it waited in
// the range.
type Waiting struct {
	// Measured is false when the source read no kube-state-metrics pod
	// series: every figure is then 0 and means "not known".
	Measured bool `json:"measured"`
	// Interval is kube-state-metrics' scrape interval as read, the wait
	// below which a pod counts as bound at once; e.g. "30s".
	Interval string `json:"interval"`
	WaitTotals
	// IdleWhileWaitingEUR is the allocated-idle EUR that accrued in the step
	// buckets in which a counted pod of the same cluster waited, summed over
	// the clusters.
	IdleWhileWaitingEUR float64     `json:"idle_while_waiting_eur"`
	ByNamespace         []WaitGroup `json:"by_namespace"`
	ByTeam              []WaitGroup `json:"by_team"`
	// ByCluster breaks the figures down by the report's cluster label; one
	// row "" without one.
	ByCluster []ClusterWait `json:"by_cluster"`
	// PodsWaited are the pods that waited, one row per pod (a pod of several GPUs
	// once, with its request), most GPU-hours first.
	PodsWaited []PodWaited `json:"pods_waited"`
	// Timeline is, per step bucket, the devices waiting on average beside
	// those held and busy.
	Timeline []WaitPoint `json:"timeline"`
}

// WaitTotals are the waiting figures of a group of pods. The JSON names are the
// report's: "gpu_hours", "pods", "p50_wait_hours", ….
type WaitTotals struct {
	GPUHours           float64 `json:"gpu_hours"`
	Pods               int     `json:"pods"`
	P50WaitHours       float64 `json:"p50_wait_hours"`
	P95WaitHours       float64 `json:"p95_wait_hours"`
	FragmentedGPUHours float64 `json:"fragmented_gpu_hours"`
}

// WaitGroup is one namespace, team or cluster's waiting figures. A
// namespace or team has no idle EUR of its own: the idle EUR while pods
// waited is its cluster's (ClusterWait).
type WaitGroup struct {
	Name string `json:"name"`
	WaitTotals
}

// ClusterWait is one cluster's waiting figures and the allocated-idle EUR
// that accrued in the step buckets in which a counted pod of it waited.
type ClusterWait struct {
	WaitGroup
	IdleWhileWaitingEUR float64 `json:"idle_while_waiting_eur"`
}

// PodWaited is one pod that waited.
type PodWaited struct {
	Cluster   string          `json:"cluster,omitempty"`
	Namespace string          `json:"namespace"`
	Pod       string          `json:"pod"`
	Team      string          `json:"team"`
	Requests  []model.Request `json:"requests"`
	Created   time.Time       `json:"created"`
	// Scheduled is when it was bound to Node; nil when it never was while
	// seen: it never ran in the range.
	Scheduled *time.Time `json:"scheduled,omitempty"`
	Node      string     `json:"node,omitempty"`
	// Deleted is when it went away unbound; nil otherwise.
	Deleted *time.Time `json:"deleted,omitempty"`
	// Outcome is "scheduled", "deleted while waiting" or "still waiting".
	Outcome            string  `json:"outcome"`
	WaitHours          float64 `json:"wait_hours"` // in the range
	GPUHours           float64 `json:"gpu_hours"`
	FragmentedGPUHours float64 `json:"fragmented_gpu_hours"`
}

// NeverRan reports whether the pod was never bound while seen.
func (p *PodWaited) NeverRan() bool { return p.Scheduled == nil }

// WaitPoint is the fleet's demand in one step bucket ending at Time: the
// devices waiting, and of them fragmented, on average over the bucket,
// beside the devices held (busy + idle) and busy.
type WaitPoint struct {
	Time           time.Time `json:"time"`
	WaitingGPUs    float64   `json:"waiting_gpus"`
	FragmentedGPUs float64   `json:"fragmented_gpus"`
	HeldGPUs       float64   `json:"held_gpus"`
	BusyGPUs       float64   `json:"busy_gpus"`
}

// The outcomes of a pod that waited.
const (
	OutcomeScheduled    = "scheduled"
	OutcomeDeleted      = "deleted while waiting"
	OutcomeStillWaiting = "still waiting"
)

// WaitSpan returns the stretch [from, to) of the range in which pod p
// waited, and whether it counts: it waited longer than the scrape interval
// d.Waiting.Interval from its creation and some of that in the range.
func WaitSpan(d *model.Dataset, p *model.PodWait) (from, to time.Time, counted bool) {
	end := p.WaitEnd(d.End)
	from, to = maxTime(p.Created, d.Start), minTime(end, d.End)
	return from, to, end.Sub(p.Created) > d.Waiting.Interval && to.After(from)
}

// waiting analyses d.Waiting; teams names the teams of namespaces.
func waiting(d *model.Dataset, teams TeamMap) Waiting {
	w := Waiting{Timeline: []WaitPoint{}}
	if d.Waiting == nil {
		return w
	}
	w.Measured, w.Interval = true, pmodel.Duration(d.Waiting.Interval).String()
	free := freeTimelines(d.Waiting)
	waitingSec, fragSec := make([]float64, d.Buckets), make([]float64, d.Buckets)
	waitedIn := map[string]model.BucketSet{} // per cluster, the buckets a counted pod waited in
	fleet, namespaces, teamsOf, clusters := &waitAcc{}, map[string]*waitAcc{}, map[string]*waitAcc{}, map[string]*waitAcc{}
	for i := range d.Waiting.Pods {
		p := &d.Waiting.Pods[i]
		from, to, counted := WaitSpan(d, p)
		if !counted {
			continue
		}
		row := podRow(d, teams, p, from, to)
		devices := p.Devices()
		in := waitedIn[p.Pod.Cluster]
		for b := max(0, int(from.Sub(d.Start)/d.Step)); b < d.Buckets; b++ {
			bs, be := d.Start.Add(time.Duration(b)*d.Step), d.Start.Add(time.Duration(b+1)*d.Step)
			if !bs.Before(to) {
				break
			}
			lo, hi := maxTime(from, bs), minTime(to, be)
			if !hi.After(lo) {
				continue
			}
			f := devices * fragmentedSeconds(p, lo, hi, free)
			waitingSec[b] += devices * hi.Sub(lo).Seconds()
			fragSec[b] += f
			row.FragmentedGPUHours += f / 3600
			in.Add(b)
		}
		waitedIn[p.Pod.Cluster] = in
		w.PodsWaited = append(w.PodsWaited, row)
		for _, g := range []*waitAcc{fleet, get(namespaces, row.Namespace), get(teamsOf, row.Team), get(clusters, row.Cluster)} {
			g.add(&row)
		}
	}
	idle := map[string]float64{} // per cluster
	for c, in := range waitedIn {
		for b, v := range d.IdleEUR[c] {
			if in.Has(b) {
				idle[c] += v
			}
		}
		w.IdleWhileWaitingEUR += idle[c]
	}
	w.WaitTotals = fleet.totals()
	w.ByNamespace, w.ByTeam = groupsOf(namespaces), groupsOf(teamsOf)
	for _, g := range groupsOf(clusters) {
		w.ByCluster = append(w.ByCluster, ClusterWait{WaitGroup: g, IdleWhileWaitingEUR: idle[g.Name]})
	}
	slices.SortFunc(w.PodsWaited, func(a, b PodWaited) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
	step := d.Step.Seconds()
	for b := range d.Buckets {
		w.Timeline = append(w.Timeline, WaitPoint{
			Time:        d.Start.Add(time.Duration(b+1) * d.Step).UTC(),
			WaitingGPUs: waitingSec[b] / step, FragmentedGPUs: fragSec[b] / step,
			HeldGPUs: (d.Timeline[b][model.StateBusy] + d.Timeline[b][model.StateIdle]) / step, BusyGPUs: d.Timeline[b][model.StateBusy] / step,
		})
	}
	return w
}

// podRow is the row of pod p, which waited in [from, to) of the range.
func podRow(d *model.Dataset, teams TeamMap, p *model.PodWait, from, to time.Time) PodWaited {
	row := PodWaited{Cluster: p.Pod.Cluster, Namespace: p.Pod.Namespace, Pod: p.Pod.Pod, Team: PodTeam(d, teams, p.Pod),
		Requests: slices.Clone(p.Requests), Created: p.Created.UTC(), Node: p.Node, WaitHours: to.Sub(from).Hours()}
	row.GPUHours = p.Devices() * row.WaitHours
	switch {
	case !p.Scheduled.IsZero():
		t := p.Scheduled.UTC()
		row.Scheduled, row.Outcome = &t, OutcomeScheduled
	case !p.Deleted.IsZero():
		t := p.Deleted.UTC()
		row.Deleted, row.Outcome = &t, OutcomeDeleted
	default:
		row.Outcome = OutcomeStillWaiting
	}
	return row
}

// waitAcc accumulates a group's waiting figures.
type waitAcc struct {
	gpuHours, fragmented float64
	waits                []float64 // hours, per pod
}

func get(m map[string]*waitAcc, k string) *waitAcc {
	a := m[k]
	if a == nil {
		a = &waitAcc{}
		m[k] = a
	}
	return a
}

func (a *waitAcc) add(row *PodWaited) {
	a.gpuHours += row.GPUHours
	a.fragmented += row.FragmentedGPUHours
	a.waits = append(a.waits, row.WaitHours)
}

func (a *waitAcc) totals() WaitTotals {
	slices.Sort(a.waits)
	return WaitTotals{GPUHours: a.gpuHours, Pods: len(a.waits), P50WaitHours: nearestRank(a.waits, 0.50), P95WaitHours: nearestRank(a.waits, 0.95),
		FragmentedGPUHours: a.fragmented}
}

// groupsOf returns the groups of m, most GPU-hours waited first.
func groupsOf(m map[string]*waitAcc) []WaitGroup {
	out := make([]WaitGroup, 0, len(m))
	for name, a := range m {
		out = append(out, WaitGroup{Name: name, WaitTotals: a.totals()})
	}
	slices.SortFunc(out, func(a, b WaitGroup) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// nearestRank is the q-quantile (0–1) of sorted by the nearest-rank method:
// the value at rank ⌈q × n⌉ (from 1); 0 for no values.
func nearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := max(1, int(math.Ceil(q*float64(len(sorted)))))
	return sorted[rank-1]
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
