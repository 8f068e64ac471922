package report

import (
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

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
	Partial    bool               `json:"partial"`
	Coverage   analysis.Coverage  `json:"coverage"`
	Warnings   []string           `json:"warnings,omitempty"`
	Fleet      analysis.Group     `json:"fleet"`
	GPUs       int                `json:"gpus"`
	Teams      []analysis.Group   `json:"teams"`
	Namespaces []analysis.Group   `json:"namespaces"`
	Models     []analysis.Group   `json:"models"`
	Nodes      []analysis.Group   `json:"nodes"`
	Holdings   []analysis.Holding `json:"holdings"`
	// BrokenGPUs are the GPUs that fell off the bus: repair or replace them.
	// No other advice is made for their holdings.
	BrokenGPUs      []analysis.BrokenGPU `json:"broken_gpus,omitempty"`
	Recommendations []Recommendation     `json:"recommendations"`
	Packing         []Packing            `json:"mig_packing,omitempty"`
	// FreedEURPerMonth is the headline: the measured cost of every GPU the
	// advice makes free, each counted once, per month of HoursPerMonth hours.
	FreedEURPerMonth float64 `json:"freed_eur_per_month"`
	// ReclaimableEURPerMonth is the partial capacity the advice makes free,
	// shown apart and not part of the headline.
	ReclaimableEURPerMonth float64                  `json:"reclaimable_eur_per_month"`
	HoursPerMonth          float64                  `json:"hours_per_month"` // the month of the EUR/month figures
	Apply                  Apply                    `json:"apply"`
	Timeline               []analysis.TimelinePoint `json:"timeline"`
	// Heatmap is the mean device activity (0–1) by weekday (0 = Sunday) and
	// hour of day, UTC; -1 where there was no data.
	Heatmap [7][24]float64 `json:"heatmap"`
}

// MonthFactor scales an amount over the report's range to a month of
// HoursPerMonth hours.
func (r *Report) MonthFactor() float64 { return model.MonthFactor(r.Start, r.End) }

// reportOf returns the report of the analysis a, without advice.
func reportOf(a *analysis.Result) *Report {
	return &Report{Start: a.Start, End: a.End, Step: a.Step, Partial: a.Partial, Coverage: a.Coverage, Warnings: a.Warnings,
		Fleet: a.Fleet, GPUs: a.GPUs, Teams: a.Teams, Namespaces: a.Namespaces, Models: a.Models, Nodes: a.Nodes,
		Holdings: a.Holdings, BrokenGPUs: a.BrokenGPUs, Timeline: a.Timeline, Heatmap: a.Heatmap}
}
