package source

import (
	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// DefaultClusterLabel is the label that names a series' cluster when one
// engine holds several: the usual external label of each cluster's
// Prometheus. Series without it are in the cluster "".
const DefaultClusterLabel = "cluster"

// Identity reads what a device series names — its cluster, GPU, instance
// and holder — and writes the grouping that keeps them apart in a query.
// With a cluster label, a GPU is its cluster and UUID, and a pod its
// cluster, namespace and name: the same node, UUID or pod name in two
// clusters is two. The zero value reads no cluster.
type Identity struct {
	cluster pmodel.LabelName // "": none
}

// NewIdentity returns the Identity of series whose cluster is named by
// label; "": one cluster.
func NewIdentity(label string) Identity { return Identity{pmodel.LabelName(label)} }

// Label is the label that names a series' cluster; "": none.
func (id Identity) Label() pmodel.LabelName { return id.cluster }

// By returns the labels of a `by (…)` clause: labels, after the cluster
// label when there is one.
func (id Identity) By(labels string) string {
	if id.cluster == "" {
		return labels
	}
	return string(id.cluster) + ", " + labels
}

// ByDevice is the `by (…)` clause of a series per holding.
func (id Identity) ByDevice() string {
	return id.By("UUID, GPU_I_ID, GPU_I_PROFILE, namespace, pod, container")
}

// ClusterOf returns the cluster of series m; "" without a cluster label.
func (id Identity) ClusterOf(m pmodel.Metric) string {
	if id.cluster == "" {
		return ""
	}
	return string(m[id.cluster])
}

// HoldingOf returns the holding series m is of.
func (id Identity) HoldingOf(m pmodel.Metric) model.HoldingKey {
	return model.HoldingKey{
		Dev:    model.DeviceKey{Cluster: id.ClusterOf(m), UUID: string(m["UUID"]), GI: string(m["GPU_I_ID"]), Profile: string(m["GPU_I_PROFILE"])},
		Holder: model.HolderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"]), Container: string(m["container"])},
	}
}

// GPUOf returns the physical GPU series m is on.
func (id Identity) GPUOf(m pmodel.Metric) model.GPUKey {
	return model.GPUKey{Cluster: id.ClusterOf(m), UUID: string(m["UUID"])}
}
