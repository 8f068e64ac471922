package analysis

import (
	"fmt"
	"slices"

	"github.com/gputally/gputally/report/model"
)

// OfCluster returns the part of r in cluster c ("" without a cluster label):
// its nodes, holdings, broken GPUs and their coverage, and the pods that
// waited and its own waiting figures (Waiting.ByCluster); the fleet's figures
// stay r's. The advice reads it once per cluster, so that no change it makes
// spans two clusters. The slices it filters are new; the rest is shared with r.
func (r *Result) OfCluster(c string) *Result {
	out := *r
	out.Nodes = only(r.Nodes, func(g Group) bool { return g.Cluster == c })
	out.Holdings = only(r.Holdings, func(h Holding) bool { return h.Cluster == c })
	out.BrokenGPUs = only(r.BrokenGPUs, func(b BrokenGPU) bool { return b.Cluster == c })
	out.Coverage.Nodes = only(r.Coverage.Nodes, func(n NodeCoverage) bool { return n.Cluster == c })
	out.Coverage.GPUs = only(r.Coverage.GPUs, func(g GPUCoverage) bool { return g.Cluster == c })
	out.Coverage.Gaps = only(r.Coverage.Gaps, func(g Gap) bool { return g.Cluster == c })
	out.Waiting.PodsWaited = only(r.Waiting.PodsWaited, func(p PodWaited) bool { return p.Cluster == c })
	out.Waiting.ByCluster = only(r.Waiting.ByCluster, func(g ClusterWait) bool { return g.Name == c })
	return &out
}

// only returns the elements of s that ok accepts, in their order.
func only[T any](s []T, ok func(T) bool) []T {
	return slices.DeleteFunc(slices.Clone(s), func(v T) bool { return !ok(v) })
}

// Place names a node group for people: "cluster/node", or the name alone
// (every group but a node in a cluster).
func (g Group) Place() string { return model.NodeName(g.Cluster, g.Name) }

// Place names the node for people (model.NodeName).
func (n NodeCoverage) Place() string { return model.NodeName(n.Cluster, n.Node) }

// Place names the GPU's node for people (model.NodeName).
func (g GPUCoverage) Place() string { return model.NodeName(g.Cluster, g.Node) }

// Place names the gap's node for people (model.NodeName).
func (g Gap) Place() string { return model.NodeName(g.Cluster, g.Node) }

// unlabelledWarning says how many GPUs lack the cluster label while others
// carry it (a Prometheus without the external label among others, or a job
// relabelled apart): they are a cluster without a name. "" when none do, or
// all.
func unlabelledWarning(d *model.Dataset) string {
	with, without := 0, 0
	for k := range d.GPUs {
		if k.Cluster == "" {
			without++
		} else {
			with++
		}
	}
	if with == 0 || without == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d GPUs carry no cluster label while the others do: they are reported as a cluster without a name (its configuration goes to %s/); is the label on every cluster's series?",
		without, with+without, model.NoClusterDir)
}
