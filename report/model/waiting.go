package model

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Waiting is what kube-state-metrics says of GPU demand over a range: the
// GPU pods and when each was created, bound to a node or deleted unbound,
// and, per node and GPU resource, what the node offers and what the pods
// bound to it request — the inputs of the free capacity a waiting pod could
// not use. A source fills it; the analysis reads it (docs/report.md,
// "Demand that waits").
type Waiting struct {
	// Interval is kube-state-metrics' scrape interval as the source read
	// it: a pod bound within it of its creation waited 0.
	Interval time.Duration
	// Pods are the GPU pods that waited for a node in the range or were
	// created in it, one per pod (a pod of several GPUs or containers
	// once), sorted (ComparePodWaits).
	Pods []PodWait
	// Capacity is, per node and GPU resource, what the node offers the
	// scheduler (kube_node_status_allocatable), and Bound what the pods
	// bound to it and not finished request of it
	// (kube_pod_container_resource_requests with its node, of pods Pending
	// or Running): devices (whole GPUs, MIG instances or replicas).
	Capacity map[NodeResource][]Level
	Bound    map[NodeResource][]Level
	// Schedulers counts, per cluster and schedulerName
	// (kube_pod_scheduler), the GPU pods of the range; nil when not read.
	Schedulers map[string]map[string]int
}

// NodeResource is one extended resource of a node in its cluster.
type NodeResource struct{ Cluster, Node, Resource string }

// Level is a step of a value over time: Value holds from From until the next
// Level's From, the last until the range's end. Before the first Level, and
// from a Level whose Value is NaN, the value is not known.
type Level struct {
	From  time.Time
	Value float64
}

// LevelAt returns the value of levels (sorted by From) at t; NaN when it is
// not known there.
func LevelAt(levels []Level, t time.Time) float64 {
	i := sort.Search(len(levels), func(i int) bool { return levels[i].From.After(t) })
	if i == 0 {
		return math.NaN()
	}
	return levels[i-1].Value
}

// Request is a pod's request of one GPU resource, summed over its
// containers: devices of the resource (a whole GPU, a MIG instance or a
// time-sliced replica each count 1; a fractional share its fraction).
type Request struct {
	Resource string  `json:"resource"`
	Count    float64 `json:"count"`
}

// PodWait is one GPU pod as kube-state-metrics saw it.
type PodWait struct {
	Pod PodKey
	// Requests are its GPU requests, one per resource, sorted by resource.
	Requests []Request
	// Created is its creation (kube_pod_created).
	Created time.Time
	// Scheduled is when it was bound to a node
	// (kube_pod_status_scheduled_time); zero: it was not bound while seen.
	Scheduled time.Time
	// Deleted is when it went away unbound: its series ended before the
	// range did; zero when it was bound or still there at the end.
	Deleted time.Time
	// Node is the node it was bound to; empty while it was not.
	Node string
}

// WaitEnd is when the pod stopped waiting: bound, deleted unbound, or — for
// a pod still waiting — end.
func (p *PodWait) WaitEnd(end time.Time) time.Time {
	switch {
	case !p.Scheduled.IsZero():
		return p.Scheduled
	case !p.Deleted.IsZero():
		return p.Deleted
	}
	return end
}

// Devices is the devices the pod requests over all its GPU resources.
func (p *PodWait) Devices() float64 {
	sum := 0.0
	for _, r := range p.Requests {
		sum += r.Count
	}
	return sum
}

// ComparePodWaits orders pods by cluster, namespace and name.
func ComparePodWaits(a, b PodWait) int {
	return cmp.Or(cmp.Compare(a.Pod.Cluster, b.Pod.Cluster), cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Pod, b.Pod.Pod))
}

// IsGPUResource says whether an extended resource name is one a GPU pod
// requests devices of: a whole GPU (nvidia.com/gpu, also HAMi's vGPU count),
// a time-sliced replica (nvidia.com/gpu.shared) or a MIG instance
// (nvidia.com/mig-<profile>). HAMi's nvidia.com/gpumem and
// nvidia.com/gpucores size a share, they count no device.
func IsGPUResource(name string) bool {
	return name == "nvidia.com/gpu" || name == "nvidia.com/gpu.shared" || strings.HasPrefix(name, "nvidia.com/mig-")
}

// ofCluster returns the part of w in cluster c; nil for a nil w.
func (w *Waiting) ofCluster(c string) *Waiting {
	if w == nil {
		return nil
	}
	out := *w
	out.Pods = slices.DeleteFunc(slices.Clone(w.Pods), func(p PodWait) bool { return p.Pod.Cluster != c })
	inC := func(k NodeResource) bool { return k.Cluster == c }
	out.Capacity = keep(w.Capacity, inC)
	out.Bound = keep(w.Bound, inC)
	out.Schedulers = keep(w.Schedulers, func(k string) bool { return k == c })
	return &out
}

// AddEUR books v EUR of state st in step bucket b to entry e, a holding in
// cluster: the entry's EUR and, for idle EUR, the cluster's idle EUR of the
// bucket (IdleEUR).
func (d *Dataset) AddEUR(e *LedgerEntry, cluster string, b, st int, v float64) {
	e.EUR[st] += v
	if st != StateIdle || v == 0 || b < 0 || b >= d.Buckets {
		return
	}
	if d.IdleEUR == nil {
		d.IdleEUR = map[string][]float64{}
	}
	if d.IdleEUR[cluster] == nil {
		d.IdleEUR[cluster] = make([]float64, d.Buckets)
	}
	d.IdleEUR[cluster][b] += v
}
