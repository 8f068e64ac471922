package attribution

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func sliceObj(driver, pool string, gen int64, devices ...map[string]any) *unstructured.Unstructured {
	devs := make([]any, len(devices))
	for i, d := range devices {
		devs[i] = d
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
		"metadata": map[string]any{"name": driver + "-" + pool},
		"spec": map[string]any{
			"driver": driver, "nodeName": pool,
			"pool":    map[string]any{"name": pool, "generation": gen, "resourceSliceCount": int64(1)},
			"devices": devs,
		},
	}}
}

func strAttr(v string) map[string]any { return map[string]any{"string": v} }

// TestSliceWatcherIndex: the attributes of v1 and v1beta1 devices, with and
// without the driver's domain, the placement from memory-slice counters or the
// device name, newer pool generations replacing older ones, other drivers skipped.
func TestSliceWatcherIndex(t *testing.T) {
	w := &SliceWatcher{sliceIndex: newSliceIndex(nil)}
	w.rebuildFromStore([]any{
		sliceObj(DefaultDRADriver, "node-a", 2,
			map[string]any{"name": "gpu-0", "attributes": map[string]any{
				"type": strAttr("gpu"), "uuid": strAttr("GPU-0"), "productName": strAttr("NVIDIA H100 80GB HBM3")}},
			map[string]any{"name": "gpu-1-mig-1g10gb-19-6", "attributes": map[string]any{
				"gpu.nvidia.com/type": strAttr("mig"), "gpu.nvidia.com/parentUUID": strAttr("GPU-1"),
				"gpu.nvidia.com/profile": strAttr("1g.10gb")}},
			map[string]any{"name": "gpu-1-mig-2g20gb-14-2", "attributes": map[string]any{
				"type": strAttr("mig"), "parentUUID": strAttr("GPU-1"), "profile": strAttr("2g.20gb")},
				"consumesCounters": []any{map[string]any{"counterSet": "gpu-1-counters", "counters": map[string]any{
					"memorySlice3": map[string]any{"value": "1"}, "memorySlice2": map[string]any{"value": "1"},
					"multiprocessors": map[string]any{"value": "32"}}}}},
		),
		// An older generation of the same pool: ignored.
		sliceObj(DefaultDRADriver, "node-a", 1,
			map[string]any{"name": "gpu-7", "attributes": map[string]any{"uuid": strAttr("GPU-7")}}),
		// v1beta1 nests the fields under basic.
		sliceObj(DefaultDRADriver, "node-b", 1,
			map[string]any{"name": "gpu-0-mig-0", "basic": map[string]any{"attributes": map[string]any{
				"type": strAttr("mig"), "uuid": strAttr("MIG-0"), "parentUUID": strAttr("GPU-0"), "profile": strAttr("3g.40gb")}}}),
		sliceObj("other.example.com", "node-a", 1,
			map[string]any{"name": "gpu-0", "attributes": map[string]any{"uuid": strAttr("GPU-X")}}),
	})
	want := map[DRADeviceRef]SliceDevice{
		{DefaultDRADriver, "node-a", "gpu-0"}:                 {Type: "gpu", UUID: "GPU-0", PlacementStart: -1},
		{DefaultDRADriver, "node-a", "gpu-1-mig-1g10gb-19-6"}: {Type: "mig", ParentUUID: "GPU-1", Profile: "1g.10gb", PlacementStart: 6},
		{DefaultDRADriver, "node-a", "gpu-1-mig-2g20gb-14-2"}: {Type: "mig", ParentUUID: "GPU-1", Profile: "2g.20gb", PlacementStart: 2},
		{DefaultDRADriver, "node-b", "gpu-0-mig-0"}:           {Type: "mig", UUID: "MIG-0", ParentUUID: "GPU-0", Profile: "3g.40gb", PlacementStart: -1},
	}
	if got := w.Status().Devices; got != len(want) {
		t.Errorf("%d devices indexed, want %d: %+v", got, len(want), w.devices)
	}
	for ref, wd := range want {
		if d, ok := w.Device(ref); !ok || !reflect.DeepEqual(d, wd) {
			t.Errorf("Device(%s) = %+v, %v; want %+v", ref, d, ok, wd)
		}
	}
	for _, ref := range []DRADeviceRef{{DefaultDRADriver, "node-a", "gpu-7"}, {"other.example.com", "node-a", "gpu-0"}} {
		if d, ok := w.Device(ref); ok {
			t.Errorf("Device(%s) = %+v, want none", ref, d)
		}
	}
	// The dynamic MIG devices without a UUID publish their GPU; neither the
	// older generation's GPU-7 nor the other driver's GPU-X is published.
	wantPub := map[string]bool{"GPU-0": true, "GPU-1": true, "MIG-0": true}
	if got := w.Published(); !maps.Equal(got, wantPub) {
		t.Errorf("Published() = %v, want %v", got, wantPub)
	}
}

func TestDiscoverSliceVersion(t *testing.T) {
	group := func(v string, resources ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: schema.GroupVersion{Group: "resource.k8s.io", Version: v}.String()}
		for _, r := range resources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
		}
		return l
	}
	fake := func(served []*metav1.APIResourceList) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			for _, l := range served {
				if path == "/apis/"+l.GroupVersion {
					return json.Marshal(l)
				}
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{}, path)
		}
	}
	tests := []struct {
		name    string
		served  []*metav1.APIResourceList
		want    string
		wantErr bool
	}{
		{"v1 preferred", []*metav1.APIResourceList{group("v1beta1", "resourceslices"), group("v1", "resourceslices", "resourceclaims")}, "v1", false},
		{"v1beta2 next", []*metav1.APIResourceList{group("v1beta1", "resourceslices"), group("v1beta2", "resourceslices")}, "v1beta2", false},
		{"v1beta1 last", []*metav1.APIResourceList{group("v1beta1", "resourceslices")}, "v1beta1", false},
		{"a version without slices is skipped", []*metav1.APIResourceList{group("v1", "resourceclaims"), group("v1beta1", "resourceslices")}, "v1beta1", false},
		{"none", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := discoverSliceVersion(fake(tc.served))
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("discoverSliceVersion = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDiscoverSliceVersionFails(t *testing.T) {
	down := errors.New("connection refused")
	if _, err := discoverSliceVersion(func(string) ([]byte, error) { return nil, down }); !errors.Is(err, down) {
		t.Errorf("error %v, want the API server's", err)
	}
}

// FuzzResourceSlice: any ResourceSlice JSON the API server could send is indexed
// without panicking, and every indexed device has a placement of -1 or more and
// belongs to a tracked driver.
func FuzzResourceSlice(f *testing.F) {
	f.Add([]byte(`{"spec":{"driver":"gpu.nvidia.com","pool":{"name":"n","generation":1},"devices":[{"name":"gpu-0-mig-1g10gb-19-6","attributes":{"parentUUID":{"string":"GPU-1"},"profile":{"string":"1g.10gb"}}}]}}`))
	f.Add([]byte(`{"spec":{"driver":"gpu.nvidia.com","pool":{"name":"n"},"devices":[{"name":"x","consumesCounters":[{"counters":{"memorySlice-1":{},"memorySlice99999999999999999999":{},"memorySlice3":{"value":"1"}}}]}]}}`))
	f.Add([]byte(`{"spec":{"driver":"gpu.nvidia.com","devices":[{"name":"d","basic":{"attributes":{"uuid":{"int":5}}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return
		}
		w := &SliceWatcher{sliceIndex: newSliceIndex(nil), apiHealth: apiHealth{log: slog.New(slog.DiscardHandler), kind: "ResourceSlice"}}
		w.rebuildFromStore([]any{u})
		for ref, d := range w.devices {
			if d.PlacementStart < -1 {
				t.Errorf("%s: placement %d", ref, d.PlacementStart)
			}
			if ref.Driver != DefaultDRADriver {
				t.Errorf("%s: a device of an untracked driver", ref)
			}
		}
	})
}

// TestSliceWatcherLogsFailureAndRecoveryOnce: a failing list or watch sets the
// watcher down and is logged once however often it repeats, its recovery once; a
// compacted resource version is no failure.
func TestSliceWatcherLogsFailureAndRecoveryOnce(t *testing.T) {
	var buf bytes.Buffer
	w := &SliceWatcher{sliceIndex: newSliceIndex(nil), apiHealth: apiHealth{log: slog.New(slog.NewTextHandler(&buf, nil)), kind: "ResourceSlice"}}
	w.observe("list", nil)
	if !w.Status().Up {
		t.Fatal("down after a successful list")
	}
	for range 3 {
		w.observe("watch", errors.New("connection refused"))
	}
	if w.Status().Up {
		t.Error("up after failed watches")
	}
	w.observe("list", nil)
	w.observe("watch", nil)
	w.observe("watch", apierrors.NewResourceExpired("too old resource version"))
	if !w.Status().Up {
		t.Error("down after a recovery and an expired resource version")
	}
	if n := strings.Count(buf.String(), "ResourceSlice watch failed"); n != 1 {
		t.Errorf("failure logged %d times, want once:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), "recovered"); n != 1 {
		t.Errorf("recovery logged %d times, want once:\n%s", n, buf.String())
	}
}
