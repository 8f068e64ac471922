package attribution_test

import (
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/attribution/kubeletsim"
)

// TestSimulatedNodeFiles checks that the files kubeletsim writes for the
// simulated backend resolve through a ProcessResolver.
func TestSimulatedNodeFiles(t *testing.T) {
	dir := t.TempDir()
	proc, logs := filepath.Join(dir, "proc"), filepath.Join(dir, "pods")
	const uid = "6c7d8e9f-0a1b-4c2d-8e3f-405162738495"
	const id = "4f3e2d1c0b0a09080706050403020100ffeeddccbbaa99887766554433221100"
	for _, err := range []error{
		kubeletsim.WriteHostInit(proc),
		kubeletsim.WriteProcess(proc, 4242, uid, id),
		kubeletsim.WritePodLogs(logs, "ml", "train", uid, "trainer"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := attribution.NewProcessResolver(attribution.ProcessConfig{ProcRoot: proc, PodLogsDir: logs})
	got, err := r.Resolve(4242)
	if err != nil || got.Namespace != "ml" || got.Pod != "train" || got.PodUID != uid || got.ContainerID != id {
		t.Fatalf("Resolve = %+v, %v", got, err)
	}
	holders := []attribution.Holder{{Namespace: "ml", Pod: "train", Container: "trainer", Replicas: 1, Share: 1}}
	u := r.Split([]attribution.ProcessSample{{PID: 4242, Utilization: 0.7, UsedMemoryBytes: 1 << 30}}, holders)
	if !u.Up || u.Holders[0].Utilization != 0.7 || u.Holders[0].MemoryUsedBytes != 1<<30 {
		t.Errorf("Split = %+v", u)
	}
}
