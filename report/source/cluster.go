package source

import (
	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// DefaultClusterLabel is the label that names a series' cluster when one
// engine holds several: the usual external label of each cluster's
// Prometheus. Series without it are in the cluster "".
const DefaultClusterLabel = "cluster"

// identity reads what a device series names — its cluster, GPU, instance
// and holder — and writes the grouping that keeps them apart in a query.
// With a cluster label, a GPU is its cluster and UUID, and a pod its
// cluster, namespace and name: the same node, UUID or pod name in two
// clusters is two. The zero value reads no cluster.
type identity struct {
	cluster pmodel.LabelName // "": none
}

// by returns the labels of a `by (…)` clause: labels, after the cluster
// label when there is one.
func (id identity) by(labels string) string {
	if id.cluster == "" {
		return labels
	}
	return string(id.cluster) + ", " + labels
}

// byDevice is the `by (…)` clause of a series per holding.
func (id identity) byDevice() string {
	return id.by("UUID, GPU_I_ID, GPU_I_PROFILE, namespace, pod, container")
}

// clusterOf returns the cluster of series m; "" without a cluster label.
func (id identity) clusterOf(m pmodel.Metric) string {
	if id.cluster == "" {
		return ""
	}
	return string(m[id.cluster])
}

// holdingOf returns the holding series m is of.
func (id identity) holdingOf(m pmodel.Metric) model.HoldingKey {
	return model.HoldingKey{
		Dev:    model.DeviceKey{Cluster: id.clusterOf(m), UUID: string(m["UUID"]), GI: string(m["GPU_I_ID"]), Profile: string(m["GPU_I_PROFILE"])},
		Holder: model.HolderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"]), Container: string(m["container"])},
	}
}

// gpuOf returns the physical GPU series m is on.
func (id identity) gpuOf(m pmodel.Metric) model.GPUKey {
	return model.GPUKey{Cluster: id.clusterOf(m), UUID: string(m["UUID"])}
}
