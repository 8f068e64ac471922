package dcgmexporter

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/model"
)

// What the source read otherwise than its labels say, and so says: the
// scrape target's pods it read as no holder (target.go) and the MIG
// profiles dcgm-exporter spells otherwise than the device plugin
// (migspell.go).

// scrapeTargets notes the pods read as the scrape target at a grid point.
func (e *dcgmEvidence) scrapeTargets(pods map[model.HolderKey]bool) {
	for h := range pods {
		if e.targets == nil {
			e.targets = map[string]bool{}
		}
		e.targets[h.Namespace+"/"+h.Pod] = true
	}
}

// spelled notes that dcgm-exporter spelled as spelled a MIG instance the
// device plugin offers as profile.
func (n *nodeEvidence) spelled(spelled, profile string) {
	if spelled == profile {
		return
	}
	if n.spellings == nil {
		n.spellings = map[[2]string]bool{}
	}
	n.spellings[[2]string{spelled, profile}] = true
}

// shapeWarnings say how the cluster's shapes were read.
func (e *dcgmEvidence) shapeWarnings() []string {
	var out []string
	if len(e.targets) > 0 {
		pods := slices.Sorted(maps.Keys(e.targets))
		out = append(out, fmt.Sprintf("%d pod(s)%s labelled on GPUs request no GPU in kube-state-metrics and hold no DRA claim: %s. They are the scrape target — the dcgm-exporter pod whose namespace, pod and container a ServiceMonitor with honorLabels: true writes on the GPUs dcgm-exporter labelled no pod on — and are read as no holder",
			len(pods), inCluster(e.cluster), strings.Join(pods, ", ")))
	}
	for _, name := range slices.Sorted(maps.Keys(e.nodes)) {
		n := e.nodes[name]
		for _, s := range slices.SortedFunc(maps.Keys(n.spellings), func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) }) {
			out = append(out, fmt.Sprintf("node %s: dcgm-exporter writes GPU_I_PROFILE %s for the MIG instances the device plugin offers as nvidia.com/mig-%s (the same compute slices, the memory rounded down): they are read as %s",
				model.NodeName(e.cluster, name), s[0], s[1], s[1]))
		}
	}
	return out
}
