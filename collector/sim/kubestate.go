package sim

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// PodRequest is one running container's request of a device plugin resource,
// as kube-state-metrics' kube_pod_container_resource_requests shows it: the
// devices (or time-sliced replicas) it holds of the resource, and which (as
// the kubelet's pod-resources API names them: what dcgm-exporter maps).
type PodRequest struct {
	Namespace, Pod, UID, Container string
	Resource                       string // e.g. nvidia.com/gpu.shared
	Count                          int
	DeviceIDs                      []string // "GPU-<uuid>", "GPU-<uuid>::<replica>", "MIG-<uuid>"
}

// KubeState is what the API server knows of the node at t, for a
// kube-state-metrics of the simulation: the running containers' requests of
// the device plugin's resources, sorted (DRA claims are not requests), and the
// node's capacity per resource (devices or replicas advertised). The
// backend's start must be fixed (Options.Start, or a first Sample). Safe for
// concurrent use.
func (b *Backend) KubeState(t time.Time) (requests []PodRequest, capacity map[string]int) {
	since := t.UnixNano() - b.start
	index := map[[4]string]int{}
	for _, e := range b.running(since) {
		if e.draDevice != "" || !strings.HasPrefix(e.resource, "nvidia.com/") {
			continue
		}
		k := [4]string{e.namespace, e.pod, e.container, e.resource}
		if i, ok := index[k]; ok {
			requests[i].Count++
			requests[i].DeviceIDs = append(requests[i].DeviceIDs, e.deviceID)
			continue
		}
		index[k] = len(requests)
		requests = append(requests, PodRequest{Namespace: e.namespace, Pod: e.pod, UID: e.uid, Container: e.container, Resource: e.resource, Count: 1,
			DeviceIDs: []string{e.deviceID}})
	}
	slices.SortFunc(requests, func(x, y PodRequest) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Pod, y.Pod), cmp.Compare(x.Container, y.Container), cmp.Compare(x.Resource, y.Resource))
	})
	capacity = map[string]int{}
	for _, a := range b.allocatable(since) {
		capacity[a.Resource] += len(a.DeviceIDs)
	}
	return requests, capacity
}
