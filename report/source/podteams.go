package source

import (
	"context"
	"fmt"
	"maps"
	"slices"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/team"
)

// ReadPodTeams fills d.PodTeams from kube-state-metrics' kube_pod_labels:
// per pod the value of the pod label teamLabel names (none when teamLabel is
// ""), the max over each step bucket of d's range read through win, and
// notes when no series carries it or when the pods' clusters hold no GPU.
// It makes run.Requests(d.Start+d.Step, d.End, d.Step) requests.
func ReadPodTeams(ctx context.Context, run *engine.Runner, id Identity, win engine.Windows, teamLabel string, d *model.Dataset) error {
	if teamLabel == "" {
		return nil
	}
	label := team.KubePodLabel(teamLabel)
	err := run.Run(ctx, "kube_pod_labels", fmt.Sprintf(
		"max by (%s) (max_over_time(kube_pod_labels{%s!=\"\"}[%s]))", id.By("namespace, pod, "+label), label, win.Of(d.Step)),
		d.Start.Add(d.Step), d.End, d.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				pod := model.PodKey{Cluster: id.ClusterOf(s.Metric), Namespace: string(s.Metric["namespace"]), Pod: string(s.Metric["pod"])}
				d.PodTeams[pod] = string(s.Metric[pmodel.LabelName(label)])
			}
		})
	if err != nil {
		return err
	}
	if len(d.PodTeams) == 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("--team-label=%s: no kube_pod_labels series with %s in the range, so each pod's team is its namespace's (or the team map's): kube-state-metrics exports a pod label only when allowed (--metric-labels-allowlist=pods=[%s]); is it, and is kube-state-metrics scraped?",
			teamLabel, label, teamLabel))
	}
	d.Notes = append(d.Notes, teamsElsewhere(d)...)
	return nil
}

// teamsElsewhere names the clusters of kube_pod_labels series that no GPU is
// in: their team labels match no holding, as when the cluster label is on
// gputally's series and not on kube-state-metrics' (or the other way round).
func teamsElsewhere(d *model.Dataset) []string {
	gpus := map[string]bool{}
	for k := range d.GPUs {
		gpus[k.Cluster] = true
	}
	elsewhere := map[string]bool{}
	for k := range d.PodTeams {
		if !gpus[k.Cluster] {
			elsewhere[k.Cluster] = true
		}
	}
	var out []string
	for _, c := range slices.Sorted(maps.Keys(elsewhere)) {
		out = append(out, fmt.Sprintf("kube_pod_labels series in cluster %q, where no GPU is: their team labels are not used (is the cluster label on both kube-state-metrics and the GPU series, with the same value?)", c))
	}
	return out
}
