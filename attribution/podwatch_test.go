package attribution

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// apiPod is a pod as the API server serves it: a HAMi pod with an init
// container still running, and the fields and metadata a watch must not keep.
func apiPod(name string, initExit *int64) *unstructured.Unstructured {
	initStatus := map[string]any{"name": "fetch", "state": map[string]any{"running": map[string]any{"startedAt": "2026-01-02T03:04:05Z"}}}
	if initExit != nil {
		initStatus["state"] = map[string]any{"terminated": map[string]any{"exitCode": *initExit, "reason": "Completed"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": name, "namespace": "ml", "uid": "uid-" + name, "resourceVersion": "7",
			"labels": map[string]any{"app": "infer", "hami.io/vgpu-node": "node-a", "pod-template-hash": "abc"},
			"annotations": map[string]any{
				"hami.io/vgpu-devices-allocated":                   ";" + hamiGPUa + ",NVIDIA,3000,20:;",
				"hami.io/vgpu-devices-to-allocate":                 ";;",
				"hami.io/bind-phase":                               "success",
				"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 500),
			},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
		"spec": map[string]any{
			"nodeName":       "node-a",
			"initContainers": []any{map[string]any{"name": "fetch", "image": "busybox", "command": []any{"sh"}}},
			"containers":     []any{map[string]any{"name": "server", "image": "vllm", "env": []any{map[string]any{"name": "A", "value": "b"}}}},
		},
		"status": map[string]any{"phase": "Pending", "initContainerStatuses": []any{initStatus}, "podIP": "10.0.0.7"},
	}}
}

func newFakeAPI(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podsGVR: "PodList", nodesGVR: "NodeList"}, objs...)
}

// waitView waits, for at most a minute, until the watcher's view satisfies ok.
func waitView(t *testing.T, w *PodWatcher, ok func(*PodView) bool) *PodView {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v := w.Pods()
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("view never became as expected: %+v", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPodWatcher: the watch lists and watches the node's pods by field
// selector, keeps only what attribution reads, follows updates (an init
// container ending), and reads the node's HAMi registration.
func TestPodWatcher(t *testing.T) {
	node := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": "node-a", "annotations": map[string]any{
			"hami.io/node-nvidia-register": `[{"id":"` + hamiGPUa + `","count":10,"devmem":81559,"devcore":100}]`,
			"hami.io/node-handshake":       "Reported 2026-01-02 03:04:05",
		}},
	}}
	api := newFakeAPI(apiPod("infer-0", nil), node)
	w := &PodWatcher{
		apiHealth: apiHealth{log: slog.New(slog.DiscardHandler), kind: "pod"},
		node:      apiHealth{log: slog.New(slog.DiscardHandler), kind: "node"},
		cfg:       PodWatcherConfig{NodeName: "node-a", ReadNode: true, NodeInterval: time.Hour},
		view:      &PodView{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.run(ctx, api) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	v := waitView(t, w, func(v *PodView) bool { return v.Synced && len(v.Pods) == 1 && v.HAMiRegistration != "" })
	want := Pod{
		Namespace: "ml", Name: "infer-0", UID: "uid-infer-0", Phase: "Pending",
		InitContainers: []string{"fetch"}, Containers: []string{"server"},
		Labels: map[string]string{"app": "infer"},
		Annotations: map[string]string{
			"hami.io/vgpu-devices-allocated": ";" + hamiGPUa + ",NVIDIA,3000,20:;", "hami.io/bind-phase": "success",
		},
	}
	if !reflect.DeepEqual(v.Pods[0], want) {
		t.Errorf("pod\n got %+v\nwant %+v", v.Pods[0], want)
	}
	if !strings.Contains(v.HAMiRegistration, `"devmem":81559`) || !w.Status().Up || w.Status().Pods != 1 {
		t.Errorf("registration %q, status %+v", v.HAMiRegistration, w.Status())
	}
	// The init container ends: the pod's app containers alone hold the GPU.
	zero := int64(0)
	updated := apiPod("infer-0", &zero)
	updated.Object["status"].(map[string]any)["phase"] = "Running"
	if _, err := api.Resource(podsGVR).Namespace("ml").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, w, func(v *PodView) bool { return len(v.Pods) == 1 && v.Pods[0].InitDone && v.Pods[0].Phase == "Running" })
	// A new pod arrives, the first leaves.
	if _, err := api.Resource(podsGVR).Namespace("ml").Create(ctx, apiPod("infer-1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := api.Resource(podsGVR).Namespace("ml").Delete(ctx, "infer-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, w, func(v *PodView) bool { return len(v.Pods) == 1 && v.Pods[0].Name == "infer-1" })
	// Every list and watch of pods asked for this node's alone (the writes
	// are the test's own).
	var pods, gets int
	for _, a := range api.Actions() {
		switch {
		case a.GetResource() == podsGVR && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete"):
		case a.GetResource() == podsGVR && (a.GetVerb() == "list" || a.GetVerb() == "watch"):
			pods++
			var sel string
			switch act := a.(type) {
			case k8stesting.ListAction:
				sel = act.GetListRestrictions().Fields.String()
			case k8stesting.WatchAction:
				sel = act.GetWatchRestrictions().Fields.String()
			}
			if sel != "spec.nodeName=node-a" {
				t.Errorf("%s of pods with field selector %q, want spec.nodeName=node-a", a.GetVerb(), sel)
			}
		case a.GetResource() == nodesGVR:
			gets++
			if a.GetVerb() != "get" {
				t.Errorf("%s of nodes: only get is needed", a.GetVerb())
			}
		default:
			t.Errorf("unexpected API call %s %s", a.GetVerb(), a.GetResource())
		}
	}
	if pods < 2 || gets != 1 {
		t.Errorf("%d lists and watches of pods, %d gets of the node; want a list and a watch, one get", pods, gets)
	}
}

// TestPodWatcherEmptyNodeSyncs: a node without pods is listed (Synced) all the
// same: nothing is held there, which differs from not knowing.
func TestPodWatcherEmptyNodeSyncs(t *testing.T) {
	w := &PodWatcher{
		apiHealth: apiHealth{log: slog.New(slog.DiscardHandler), kind: "pod"},
		cfg:       PodWatcherConfig{NodeName: "node-a"},
		view:      &PodView{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.run(ctx, newFakeAPI()) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	if w.Pods().Synced {
		t.Log("synced before the first list (the watch was fast)")
	}
	waitView(t, w, func(v *PodView) bool { return v.Synced && len(v.Pods) == 0 })
}

// TestTrimPodIsIdempotent: the informer may hand an object already trimmed.
func TestTrimPodIsIdempotent(t *testing.T) {
	one, _ := trimPod(apiPod("p", nil))
	two, _ := trimPod(one)
	if !reflect.DeepEqual(one, two) {
		t.Errorf("trimming twice changed the object:\n%v\n%v", one, two)
	}
	if got := podFromObject(one.(*unstructured.Unstructured)); got.InitDone || len(got.Annotations) != 2 {
		t.Errorf("trimmed pod %+v", got)
	}
}
