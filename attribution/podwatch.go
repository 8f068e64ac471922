package attribution

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// DefaultNodeInterval is how often a PodWatcher reads its node's HAMi
// registration by default.
const DefaultNodeInterval = 5 * time.Minute

// PodWatcherConfig configures a PodWatcher.
type PodWatcherConfig struct {
	// Kubeconfig is the kubeconfig file to reach the API server with; "" uses the
	// in-cluster service account.
	Kubeconfig string
	// NodeName selects the pods bound to this node (spec.nodeName). Required.
	NodeName string
	// ReadNode reads the node's hami.io/node-nvidia-register annotation (a
	// `get` on this Node) every NodeInterval: the memory and cores HAMi offers
	// of each GPU, which differ from NVML's when HAMi's
	// deviceMemoryScaling or deviceCoreScaling is not 1.
	ReadNode     bool
	NodeInterval time.Duration // 0 means DefaultNodeInterval
	Logger       *slog.Logger
}

// PodWatcher keeps the pods bound to its node in memory through one watch
// (client-go informer, field selector spec.nodeName, each pod cut to what
// fractional attribution reads as it arrives) and, when configured, reads the
// node's HAMi registration. When the API server becomes unreachable it keeps
// the last listed pods; Status says Up false. Pods and Status are safe for
// concurrent use; Run is called once.
type PodWatcher struct {
	apiHealth
	node apiHealth // reads of the Node
	cfg  PodWatcherConfig
	rest *rest.Config

	mu     sync.Mutex
	view   *PodView
	pods   []Pod
	synced bool
	reg    string
}

// NewPodWatcher checks cfg and builds the API client; it contacts nothing.
func NewPodWatcher(cfg PodWatcherConfig) (*PodWatcher, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("pod watch: no node name (set --hostname or NODE_NAME)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NodeInterval <= 0 {
		cfg.NodeInterval = DefaultNodeInterval
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("pod watch: %w", err)
	}
	log := cfg.Logger.With("component", "podwatch", "node", cfg.NodeName)
	return &PodWatcher{
		apiHealth: apiHealth{log: log, kind: "pod"},
		node:      apiHealth{log: log, kind: "node"},
		cfg:       cfg,
		rest:      rc,
		view:      &PodView{},
	}, nil
}

// Pods returns the pods as last seen.
func (w *PodWatcher) Pods() *PodView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.view
}

// Status says whether the watch is current and how many pods it knows.
func (w *PodWatcher) Status() PodStatus {
	return PodStatus{Up: w.up.Load(), Pods: len(w.Pods().Pods)}
}

// Run watches the node's pods, and reads the node every NodeInterval when
// configured, until ctx is done.
func (w *PodWatcher) Run(ctx context.Context) {
	dyn, err := dynamic.NewForConfig(w.rest)
	if err != nil {
		w.fail("pod watch: API client", err)
		return
	}
	w.run(ctx, dyn)
}

// run is Run with the API client dyn.
func (w *PodWatcher) run(ctx context.Context, dyn dynamic.Interface) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if w.cfg.ReadNode {
		nodes := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
		wg.Go(func() { w.readNode(ctx, nodes) })
	}
	pods := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	selector := fields.OneTermEqualSelector("spec.nodeName", w.cfg.NodeName).String()
	w.watch(ctx, dyn, pods, selector, trimPod, w.setPods)
}

// readNode gets the node now and every NodeInterval until ctx is done, and
// keeps its HAMi registration. A failed read keeps the last one.
func (w *PodWatcher) readNode(ctx context.Context, nodes dynamic.ResourceInterface) {
	tick := time.NewTicker(w.cfg.NodeInterval)
	defer tick.Stop()
	for {
		n, err := nodes.Get(ctx, w.cfg.NodeName, metav1.GetOptions{})
		w.node.observe("get", err)
		if err == nil {
			reg := n.GetAnnotations()[hamiRegister]
			if len(reg) > maxAnnotationBytes {
				reg = oversized
			}
			w.mu.Lock()
			w.reg = reg
			w.publish()
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// setPods publishes the pods of the informer's store.
func (w *PodWatcher) setPods(objs []any, synced bool) {
	pods := make([]Pod, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			pods = append(pods, podFromObject(u))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods, w.synced = pods, w.synced || synced
	w.publish()
}

// publish replaces the view. w.mu is held.
func (w *PodWatcher) publish() {
	w.view = NewPodView(w.synced, w.pods, w.reg)
}

// trimPod cuts a pod to what fractional attribution reads before the informer
// stores it, so that the cache holds a few hundred bytes per pod rather than
// its whole spec and status. It is idempotent.
func trimPod(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	names := func(path ...string) []any {
		list, _, _ := unstructured.NestedSlice(u.Object, path...)
		out := make([]any, 0, len(list))
		for _, c := range list {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			out = append(out, map[string]any{"name": name})
		}
		return out
	}
	statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "initContainerStatuses")
	inits := make([]any, 0, len(statuses))
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		code, terminated, _ := unstructured.NestedFieldNoCopy(m, "state", "terminated", "exitCode")
		st := map[string]any{}
		if terminated {
			st["state"] = map[string]any{"terminated": map[string]any{"exitCode": code}}
		}
		inits = append(inits, st)
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
	meta := map[string]any{
		"name": u.GetName(), "namespace": u.GetNamespace(), "uid": string(u.GetUID()),
		"resourceVersion": u.GetResourceVersion(),
	}
	t := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta,
		"spec":   map[string]any{"nodeName": node, "initContainers": names("spec", "initContainers"), "containers": names("spec", "containers")},
		"status": map[string]any{"phase": phase, "initContainerStatuses": inits},
	}}
	t.SetLabels(keep(u.GetLabels(), keptLabel))
	t.SetAnnotations(keep(u.GetAnnotations(), keptAnnotation))
	return t, nil
}

// podFromObject reads a (trimmed) pod object.
func podFromObject(u *unstructured.Unstructured) Pod {
	names := func(path ...string) []string {
		list, _, _ := unstructured.NestedSlice(u.Object, path...)
		out := make([]string, 0, len(list))
		for _, c := range list {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			out = append(out, name)
		}
		return out
	}
	p := Pod{
		Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()),
		InitContainers: names("spec", "initContainers"), Containers: names("spec", "containers"),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
	}
	p.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "initContainerStatuses")
	// HAMi's AllInitContainersSucceeded: there are some, and all ended with 0.
	p.InitDone = len(statuses) > 0
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		code, terminated, _ := unstructured.NestedFieldNoCopy(m, "state", "terminated", "exitCode")
		if !terminated || !isZero(code) {
			p.InitDone = false
		}
	}
	return p
}

// isZero reports whether a JSON number decoded into an object is 0.
func isZero(v any) bool {
	switch n := v.(type) {
	case int64:
		return n == 0
	case float64:
		return n == 0
	case int:
		return n == 0
	}
	return false
}
