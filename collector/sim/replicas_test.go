package sim

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// notRenamed is the scenario of time-slicing without renamed resources.
const notRenamed = "../../testdata/scenarios/replicas-not-renamed.yaml"

// TestReplicasNotRenamed: a group's resource: nvidia.com/gpu advertises its
// replicas under that name — capacity 4 + 1 = 5 nvidia.com/gpu on two GPUs,
// no nvidia.com/gpu.shared — and the pods on them request nvidia.com/gpu
// with the replica's device ID.
func TestReplicasNotRenamed(t *testing.T) {
	sc, err := Load(notRenamed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	requests, capacity := b.KubeState(t0.Add(30 * time.Second))
	if len(capacity) != 1 || capacity["nvidia.com/gpu"] != 5 {
		t.Errorf("capacity %v, want nvidia.com/gpu: 5 alone", capacity)
	}
	gpu0 := b.inv.GPUs[0].UUID
	want := map[string]string{"dev/a-0": gpu0 + "::0", "dev/b-0": gpu0 + "::3", "ml/t-0": b.inv.GPUs[1].UUID}
	if len(requests) != len(want) {
		t.Fatalf("requests %+v, want %d", requests, len(want))
	}
	for _, r := range requests {
		if id := want[r.Namespace+"/"+r.Pod]; r.Resource != "nvidia.com/gpu" || r.Count != 1 || len(r.DeviceIDs) != 1 || r.DeviceIDs[0] != id {
			t.Errorf("request %+v, want nvidia.com/gpu ×1 of %s", r, id)
		}
	}
}

// TestReplicasNotRenamedErrors: a pod on replicas that are not renamed
// requests nvidia.com/gpu and names its replica.
func TestReplicasNotRenamedErrors(t *testing.T) {
	b, err := os.ReadFile(notRenamed)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	line := strings.Count(text[:strings.Index(text, "pod: b-0")], "\n") + 1
	for _, tc := range []struct{ old, new, want string }{
		{"resource: nvidia.com/gpu, device: {gpu: 0, replica: 3}", "resource: nvidia.com/gpu.shared, device: {gpu: 0, replica: 3}",
			"pods[0].resource: GPU 0 is time-sliced (replicas: 4): request nvidia.com/gpu"},
		{"device: {gpu: 0, replica: 3}", "device: {gpu: 0}", "pods[0].device.replica: required for nvidia.com/gpu on a time-sliced GPU"},
	} {
		_, err := Parse([]byte(strings.Replace(text, tc.old, tc.new, 1)), "plain.yaml")
		if want := "plain.yaml:" + strconv.Itoa(line) + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", tc.new, err, want)
		}
	}
}
