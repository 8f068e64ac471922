package advice

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// WaitAdvice is a change that the demand that waited for a GPU calls for
// (docs/report.md, "Demand that waits"), with the EUR it is about over the
// range and per month. It frees no GPU: it is not in the headline.
type WaitAdvice struct {
	// Kind is "queues" (quotas from measured demand, Apply.Kueue or
	// Apply.Volcano), "bin-packing" (Apply.SchedulerConfig) or "release"
	// (idle holdings whose release would have served waiting pods).
	Kind    string `json:"kind"`
	Cluster string `json:"cluster,omitempty"`
	Target  string `json:"target"`
	// EUR is the money it is about, over the range: for queues the
	// allocated-idle EUR that burned while pods waited; for bin-packing the
	// cost of the free GPUs the fragmented pods could not use; for release
	// the holdings' idle EUR in the hours the pods waited.
	EUR         float64 `json:"eur"`
	EURPerMonth float64 `json:"eur_per_month"`
	// GPUHours are the GPU-hours waited it addresses: all waited, the
	// fragmented ones, or those the release would have served.
	GPUHours float64  `json:"gpu_hours"`
	Holdings []string `json:"holdings"` // release: namespace/pod/container
	Pods     []string `json:"pods"`     // the waiting pods it is about, namespace/pod
	Evidence string   `json:"evidence"`
}

// The kinds of WaitAdvice.
const (
	WaitQueues     = "queues"
	WaitBinPacking = "bin-packing"
	WaitRelease    = "release"
)

// waitAdvice makes the advice for the demand that waited in r's cluster
// (r and d are one cluster's): queues when pods waited, a bin-packing
// scheduler profile when some of it was fragmented, and the holdings whose
// release would have served waiting pods. queues names the queues' file.
func (a *adviser) waitAdvice(r *draft, d *model.Dataset, queues string) {
	w := r.Result.Waiting
	i := slices.IndexFunc(w.ByCluster, func(g analysis.ClusterWait) bool { return g.Name == d.Clusters()[0] })
	if i < 0 {
		return
	}
	c := w.ByCluster[i]
	month := r.Result.MonthFactor()
	r.WaitAdvice = append(r.WaitAdvice, WaitAdvice{Kind: WaitQueues, Target: queues, EUR: c.IdleWhileWaitingEUR, EURPerMonth: c.IdleWhileWaitingEUR * month,
		GPUHours: c.GPUHours, Pods: waitedPods(w.PodsWaited, func(p *analysis.PodWaited) bool { return true }),
		Evidence: fmt.Sprintf("%d pods waited %s GPU-hours (p95 %s h) while %s EUR of allocated GPUs idled; quotas from what each team held and waited for at once, with reclaim, give idle shares back to the queued teams",
			c.Pods, model.FormatHours(c.GPUHours), model.FormatHours(c.P95WaitHours), model.FormatEUR(c.IdleWhileWaitingEUR))})
	if c.FragmentedGPUHours > 0 {
		eur, priced := a.fragmentedEUR(d, w.PodsWaited, meanEURPerDeviceHour(r.Result))
		r.Apply.SchedulerConfig = binPackingYAML(w.PodsWaited, c.FragmentedGPUHours)
		r.WaitAdvice = append(r.WaitAdvice, WaitAdvice{Kind: WaitBinPacking, Target: "kube-scheduler profile default-scheduler", EUR: eur,
			EURPerMonth: eur * month, GPUHours: c.FragmentedGPUHours,
			Pods: waitedPods(w.PodsWaited, func(p *analysis.PodWaited) bool { return p.FragmentedGPUHours > 0 }),
			Evidence: fmt.Sprintf("%s GPU-hours waited while enough GPUs were free in the cluster, on no one node; packing GPU pods onto the fewest nodes (MostAllocated) keeps whole nodes free for them: up to %s GPU-hours served, %s",
				model.FormatHours(c.FragmentedGPUHours), model.FormatHours(c.FragmentedGPUHours), priced)})
	}
	r.WaitAdvice = append(r.WaitAdvice, a.releaseForWaiting(d, month)...)
}

// waitedPods names the pods of ps that keep accepts.
func waitedPods(ps []analysis.PodWaited, keep func(*analysis.PodWaited) bool) []string {
	var out []string
	for i := range ps {
		if keep(&ps[i]) {
			out = append(out, ps[i].Namespace+"/"+ps[i].Pod)
		}
	}
	slices.Sort(out)
	return out
}

// fragmentedEUR is what the devices the pods waited for fragmented cost
// over that time: per resource, its fragmented device-hours × rate (EUR per
// GPU-hour) × the part of a GPU one device of it is (devicePart); and how
// they were priced, for the evidence. A resource whose part is not known is
// left out, and the sentence names it.
func (a *adviser) fragmentedEUR(d *model.Dataset, pods []analysis.PodWaited, rate float64) (float64, string) {
	hours := map[string]float64{} // device-hours fragmented per resource
	for _, p := range pods {
		devices := 0.0
		for _, r := range p.Requests {
			devices += r.Count
		}
		for _, r := range p.Requests {
			if p.FragmentedGPUHours > 0 && devices > 0 {
				hours[r.Resource] += p.FragmentedGPUHours * r.Count / devices
			}
		}
	}
	eur, parts, unpriced := 0.0, []string{}, []string{}
	for _, r := range slices.Sorted(maps.Keys(hours)) {
		part, ok := a.devicePart(d, r)
		if !ok {
			unpriced = append(unpriced, r)
			continue
		}
		eur += hours[r] * rate * part
		parts = append(parts, fmt.Sprintf("%s %s EUR", r, model.FormatEUR(rate*part)))
	}
	priced := fmt.Sprintf("priced per device-hour at the cluster's %s EUR per GPU-hour × the part of a GPU a device is: %s", model.FormatEUR(rate), strings.Join(parts, ", "))
	if len(unpriced) > 0 {
		priced += fmt.Sprintf("; %s not priced: what part of a GPU one of its devices is was not read", strings.Join(unpriced, ", "))
	}
	return eur, priced
}

// meanEURPerDeviceHour is the cluster's cost per GPU-hour over the range (a
// MIG instance or a replica counting as its part of a GPU).
func meanEURPerDeviceHour(r *analysis.Result) float64 {
	if t := r.Fleet.Totals; t.GPUHours > 0 {
		return t.CostEUR / t.GPUHours
	}
	return 0
}

// binPackingYAML is a KubeSchedulerConfiguration whose default profile
// scores nodes by NodeResourcesFit's MostAllocated strategy, weighted on
// the GPU resources the pods that waited requested (kube-scheduler:
// pkg/scheduler/apis/config/validation ValidateNodeResourcesFitArgs,
// weights in (0, 100]).
func binPackingYAML(pods []analysis.PodWaited, fragmented float64) string {
	res := map[string]bool{}
	for _, p := range pods {
		if p.FragmentedGPUHours > 0 {
			for _, r := range p.Requests {
				res[r.Resource] = true
			}
		}
	}
	var lines []string
	for _, r := range slices.Sorted(maps.Keys(res)) {
		lines = append(lines, "              - name: "+r, "                weight: 5")
	}
	return commentLines([]string{
		fmt.Sprintf("# %s GPU-hours waited fragmented: enough GPUs of the resource were free in the cluster, on no one node.", model.FormatHours(fragmented)),
		"# This profile packs pods onto the nodes already most allocated, GPUs first (weight 5; cpu and memory 1), so whole",
		"# nodes stay free for multi-GPU pods. It is the scheduler's whole configuration: pass it to kube-scheduler with",
		"# --config (managed control planes: their scheduler settings, or a second scheduler under another schedulerName).",
	}) + `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
` + strings.Join(lines, "\n") + `
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
`
}
