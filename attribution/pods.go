package attribution

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
)

// Pod is what fractional attribution reads of one pod bound to this node: who
// it is, whether it still runs, its containers, and the labels and
// annotations through which HAMi and KAI-Scheduler say what it holds (only
// those keys are kept, see keptLabel and keptAnnotation).
type Pod struct {
	Namespace, Name, UID string
	// Phase is the pod's status.phase: Pending, Running, Succeeded, Failed or Unknown.
	Phase string
	// InitContainers and Containers are the container names of the spec, in
	// order: HAMi's annotation lists init containers first, then the others.
	InitContainers, Containers []string
	// InitDone is true when the pod has init containers and every one ended
	// with exit code 0 (HAMi's AllInitContainersSucceeded,
	// Project-HAMi/HAMi@4707fb0:pkg/util/util.go:162-172): from then on only the
	// app containers' grants hold the GPU.
	InitDone    bool
	Labels      map[string]string
	Annotations map[string]string
}

// Terminal reports whether the pod ended (Succeeded or Failed): it holds nothing.
func (p *Pod) Terminal() bool { return p.Phase == "Succeeded" || p.Phase == "Failed" }

// PodView is what a PodSource knows at one moment. It is immutable once
// returned: callers must not modify it.
type PodView struct {
	// Synced is true once the pods of the node were listed: Pods is then
	// complete. Before, nothing may be concluded from a pod's absence.
	Synced bool
	// Pods are the pods bound to this node, sorted by namespace and name.
	Pods []Pod
	// HAMiRegistration is the node's hami.io/node-nvidia-register
	// annotation: HAMi's device plugin's JSON of the GPUs it offers, with the
	// memory and cores a share is a fraction of. "" when absent or not read.
	HAMiRegistration string
}

// PodStatus is how current a PodSource is.
type PodStatus struct {
	Up   bool // the last list or watch of the node's pods succeeded
	Pods int  // pods bound to the node
}

// PodSource gives the pods bound to this node. Implementations answer from
// memory (a watch cache or the simulator), never block, and are safe for
// concurrent use. *PodWatcher is one.
type PodSource interface {
	Pods() *PodView
	Status() PodStatus
}

// HAMi's and KAI-Scheduler's keys that fractional attribution reads.
const (
	// hamiAllocated is the grant of every container, written by HAMi's
	// scheduler extender and never erased (devices.go:451-483; device.go:167).
	hamiAllocated = "hami.io/vgpu-devices-allocated"
	// hamiBindPhase is "success" once HAMi's device plugin allocated the pod
	// (pkg/util/types.go:23; plugin/util.go:388-416).
	hamiBindPhase = "hami.io/bind-phase"
	// hamiRegister is the node annotation of HAMi's device plugin
	// (pkg/device/nvidia/device.go:42).
	hamiRegister = "hami.io/node-nvidia-register"

	// KAI-Scheduler's, kai-scheduler/KAI-Scheduler@d5bc503:pkg/common/constants/constants.go.
	kaiFraction      = "gpu-fraction"
	kaiMemory        = "gpu-memory"
	kaiContainerName = "gpu-fraction-container-name"
	kaiReceivedType  = "received-resource-type"
	kaiGPUGroup      = "runai-gpu-group"
	kaiAppLabel      = "app"
	// kaiReservedGPU is the GPU UUID a reservation pod patches onto itself,
	// despite the name (pkg/resourcereservation/patcher/pod_patcher.go:16).
	kaiReservedGPU = "run.ai/reserve_for_gpu_index"
)

// maxAnnotationBytes bounds the annotation values a Pod keeps; a longer one is
// replaced by oversized, which no parser accepts.
const maxAnnotationBytes = 64 << 10

// oversized stands for an annotation value longer than maxAnnotationBytes.
const oversized = "\x00oversized"

// keptAnnotation reports whether fractional attribution reads annotation key.
func keptAnnotation(key string) bool {
	switch key {
	case hamiAllocated, hamiBindPhase, kaiFraction, kaiMemory, kaiContainerName, kaiReceivedType, kaiReservedGPU:
		return true
	}
	return false
}

// keptLabel reports whether fractional attribution reads label key.
func keptLabel(key string) bool {
	return key == kaiGPUGroup || key == kaiAppLabel || strings.HasPrefix(key, kaiGPUGroup+"/")
}

// keep returns the entries of m whose key keeps, values over
// maxAnnotationBytes replaced by oversized; nil when none.
func keep(m map[string]string, keeps func(string) bool) map[string]string {
	var out map[string]string
	for k, v := range m {
		if !keeps(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		if len(v) > maxAnnotationBytes {
			v = oversized
		}
		out[k] = v
	}
	return out
}

// NewPodView returns the view of pods (sorted, labels and annotations cut to
// the kept keys) and the node's HAMi registration; synced says the pods are
// complete. It is how a PodSource that is not a watch (the simulator, tests)
// makes its views.
func NewPodView(synced bool, pods []Pod, hamiRegistration string) *PodView {
	v := &PodView{Synced: synced, Pods: make([]Pod, len(pods)), HAMiRegistration: hamiRegistration}
	for i, p := range pods {
		p.Labels, p.Annotations = keep(p.Labels, keptLabel), keep(p.Annotations, keptAnnotation)
		v.Pods[i] = p
	}
	slices.SortFunc(v.Pods, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return v
}

// MemoryPods is a PodSource over a view held in memory, always up: the
// simulated node's pods, and tests'. It is safe for concurrent use.
type MemoryPods struct{ view atomic.Pointer[PodView] }

// NewMemoryPods returns a source that gives view until Set.
func NewMemoryPods(view *PodView) *MemoryPods {
	s := &MemoryPods{}
	s.view.Store(view)
	return s
}

// Set replaces the view.
func (s *MemoryPods) Set(view *PodView) { s.view.Store(view) }

// Pods returns the view.
func (s *MemoryPods) Pods() *PodView { return s.view.Load() }

// Status says the source is up.
func (s *MemoryPods) Status() PodStatus { return PodStatus{Up: true, Pods: len(s.view.Load().Pods)} }
