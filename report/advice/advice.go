// Package advice decides what to change and what it saves: where a saving
// is decided. From the analysis of a range it recommends draining nodes,
// releasing idle holdings, time-slicing low-duty pods and the smallest MIG
// profiles that fit (packed onto as few GPUs as their placements allow),
// counts what each frees — the measured cost of whole GPUs made free, each
// GPU once — apart from the capacity it makes reclaimable, and writes the
// configuration that applies it: mig-parted configs, the NVIDIA device
// plugin's time-slicing ConfigMap with node labels, and Kueue queues
// (docs/report.md).
//
// It makes no query and renders nothing: it reads analysis and model only,
// and the render package reads its Advice.
package advice

import (
	"cmp"
	"slices"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// Settings are the thresholds of the advice.
type Settings struct {
	// Teams (optional) names the teams of namespaces, as for the analysis;
	// the Kueue queues are per team.
	Teams analysis.TeamMap
	// Headroom multiplies the p99 framebuffer before it is compared with a
	// MIG profile's memory, busy shares before time-sliced packing, and the
	// peak of busy devices for a Kueue quota; ≥ 1.
	Headroom float64
	// ReleaseBelow: a holding busy less than this share (0–1) of the time it
	// was held is recommended for release.
	ReleaseBelow float64
	// LowDutyBelow: pods holding a whole GPU busy less than this share (0–1)
	// suit time-slicing.
	LowDutyBelow float64
	// DrainAbove: a node whose device-hours were unallocated more than this
	// share (0–1) can be drained.
	DrainAbove float64
	// MIGWeight splits a MIG GPU's cost over its instances in every MIG
	// figure, as the price book does.
	MIGWeight cost.MIGWeight
	// Scheduler is whose queues the advice writes: SchedulerKueue,
	// SchedulerVolcano, or SchedulerAuto (also ""), read per cluster from
	// the GPU pods' schedulerName (scheduler.go).
	Scheduler string
}

// Advice is what the advice recommends for one range, a plain value the
// renderers read, safe for concurrent reads. EUR/month figures are the
// measured EUR over the range scaled to a month of model.HoursPerMonth hours.
type Advice struct {
	Recommendations []Recommendation
	Packing         []Packing
	// FreedEURPerMonth is the headline: the measured cost of every GPU the
	// advice makes free, each counted once, per month.
	FreedEURPerMonth float64
	// ReclaimableEURPerMonth is the partial capacity the advice makes free,
	// shown apart and not part of the headline.
	ReclaimableEURPerMonth float64
	HoursPerMonth          float64 // the month of the EUR/month figures
	Apply                  Apply
	// WaitAdvice is what the demand that waited for a GPU calls for: queues,
	// bin-packing, releases (waitadvice.go); none frees a GPU.
	WaitAdvice []WaitAdvice
}

// Recommendation is one change, the money it frees and the evidence behind
// it. FreedEURPerMonth is the measured cost of the whole GPUs the change makes
// free (FreedGPUs), per month; no GPU is freed by two recommendations.
// ReclaimableEURPerMonth is capacity the change makes free on GPUs that stay
// in use (a released MIG instance or replica, the unused part of a MIG
// layout): real, but only money once other work fills it.
type Recommendation struct {
	Kind     string   `json:"kind"`              // "release", "time-slicing", "mig", "drain"
	Cluster  string   `json:"cluster,omitempty"` // the cluster of its nodes, by the report's cluster label
	Target   string   `json:"target"`
	Model    string   `json:"model,omitempty"`
	Profile  string   `json:"mig_profile,omitempty"` // "mig": the profiles, e.g. "1g.10gb ×2"
	Replicas int      `json:"replicas,omitempty"`
	Holdings []string `json:"holdings"` // namespace/pod/container
	Nodes    []string `json:"nodes"`    // nodes the change is applied to
	// GPUs are the UUIDs of the GPUs the change is about, sorted: those its
	// holdings hold (release, time-slicing, MIG) or the node's (drain).
	GPUs                   []string `json:"gpus"`
	FreedGPUs              []string `json:"freed_gpus"`
	FreedEURPerMonth       float64  `json:"freed_eur_per_month"`
	ReclaimableEURPerMonth float64  `json:"reclaimable_eur_per_month"`
	// MIGLayouts are, for "mig", the layouts the change gives the GPUs it
	// repartitions.
	MIGLayouts []GPULayout `json:"mig_layouts"`
	Evidence   string      `json:"evidence"`
	// Figures is which kind of number the evidence is (figures.go):
	// "exact", "sampled", "allocation share" or several.
	Figures string `json:"figures"`
}

// GPULayout is the MIG layout a recommendation gives one GPU: the profiles
// of its instances.
type GPULayout struct {
	GPU      string   `json:"gpu"` // UUID
	Profiles []string `json:"profiles"`
}

// uuids returns the sorted UUIDs of gpus.
func uuids(gpus []*gpuInfo) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.uuid
	}
	slices.Sort(out)
	return out
}

// Advise makes the recommendations for a, the analysis of d (docs/report.md):
// drain, release, time-slicing and MIG, in that order, each among the
// holdings and GPUs no earlier recommendation covers, most EUR freed first;
// the headline; and the configuration to apply them. A broken GPU's
// holdings, and holdings with too much unknown time, get none. A fleet in
// several clusters, or in one named by the cluster label, is advised one
// cluster at a time: no change packs pods of two clusters together, each
// recommendation names its cluster, and each cluster gets its own
// configuration (Apply.Clusters). It only reads a and d.
func Advise(a *analysis.Result, d *model.Dataset, s Settings) *Advice {
	ad := &adviser{teams: s.Teams, headroom: s.Headroom, release: s.ReleaseBelow, lowDuty: s.LowDutyBelow, drain: s.DrainAbove, migWeight: s.MIGWeight, scheduler: s.Scheduler}
	clusters := d.Clusters()
	out := &Advice{HoursPerMonth: model.HoursPerMonth}
	for _, c := range clusters {
		part, r, dc := &Advice{}, a, d
		if len(clusters) > 1 {
			r, dc = a.OfCluster(c), d.OfCluster(c)
		}
		ad.recommend(&draft{Result: r, Advice: part}, dc)
		for i := range part.Recommendations {
			part.Recommendations[i].Cluster = c
		}
		for i := range part.Packing {
			part.Packing[i].Cluster = c
		}
		for i := range part.WaitAdvice {
			part.WaitAdvice[i].Cluster = c
		}
		out.WaitAdvice = append(out.WaitAdvice, part.WaitAdvice...)
		out.Recommendations = append(out.Recommendations, part.Recommendations...)
		out.Packing = append(out.Packing, part.Packing...)
		out.FreedEURPerMonth += part.FreedEURPerMonth
		out.ReclaimableEURPerMonth += part.ReclaimableEURPerMonth
		switch {
		case c == "" && len(clusters) == 1: // no cluster label: the flat configuration
			out.Apply = part.Apply
		case part.Apply.Any():
			part.Apply.Cluster = c
			out.Apply.Clusters = append(out.Apply.Clusters, part.Apply)
		}
	}
	slices.SortStableFunc(out.Recommendations, byFreed)
	return out
}

// draft is the analysis the advice reads and the advice it writes.
type draft struct {
	*analysis.Result
	*Advice
}

// adviser holds the settings of the advice.
type adviser struct {
	teams    analysis.TeamMap
	headroom float64
	release  float64 // busy share below which a held device should be released
	lowDuty  float64 // busy share below which a pod suits time-slicing
	drain    float64 // unallocated share above which a node can be drained
	// migWeight splits a MIG GPU's cost over its instances, as the price book does.
	migWeight cost.MIGWeight
	scheduler string // Settings.Scheduler
}

// recommend fills r.Recommendations, r.Packing, r.Apply and the headline
// (docs/report.md): drain, release, time-slicing and MIG, in that order, each
// among the holdings and GPUs no earlier recommendation covers.
func (a *adviser) recommend(r *draft, d *model.Dataset) {
	p := newPlan(r, d)
	a.drainNodes(r, p)
	a.releaseIdle(r, p)
	ts := a.timeSlicing(r, p)
	layouts := a.migSizing(r, p)
	slices.SortStableFunc(r.Recommendations, byFreed)
	for i := range r.Recommendations {
		rec := &r.Recommendations[i]
		rec.Figures = figuresOf(d, rec)
		r.FreedEURPerMonth += rec.FreedEURPerMonth
		r.ReclaimableEURPerMonth += rec.ReclaimableEURPerMonth
	}
	r.Apply.MIGParted, r.Apply.MIGPartedLabels = migPartedConfig(p, layouts)
	r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels, r.Apply.TimeSlicingSharing = timeSlicingConfig(r, p, ts)
	qs, how := a.quotas(d)
	sched, chosen := a.schedulerOf(d)
	file := ApplyKueueFile
	if sched == SchedulerVolcano {
		r.Apply.Volcano, file = volcanoYAML(qs, clusterCapacity(d), a.headroom, how, chosen), ApplyVolcanoFile
	} else if r.Apply.Kueue = kueueYAML(qs, a.headroom, how); r.Apply.Kueue != "" {
		r.Apply.Kueue = commentLines([]string{"# Scheduler: " + chosen + "."}) + r.Apply.Kueue
	}
	a.waitAdvice(r, d, file)
}

// byFreed orders recommendations by EUR freed, then reclaimable, most first,
// then by kind, cluster and target.
func byFreed(x, y Recommendation) int {
	return cmp.Or(cmp.Compare(y.FreedEURPerMonth, x.FreedEURPerMonth), cmp.Compare(y.ReclaimableEURPerMonth, x.ReclaimableEURPerMonth),
		cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Target, y.Target))
}
