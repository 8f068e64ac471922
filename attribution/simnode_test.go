package attribution_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
)

// TestSimulatedNodeFiles checks that the files kubeletsim writes for the
// simulated backend, on disk and in memory, resolve through a ProcessResolver,
// and that a process whose files are removed has ended.
func TestSimulatedNodeFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tree  kubeletsim.Tree
		files attribution.Files // nil: the host's
	}{
		{"host", kubeletsim.HostTree{}, nil},
		{"memory", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tree == nil {
				mem := kubeletsim.NewMemFS()
				tc.tree, tc.files = mem, mem
			}
			dir := t.TempDir()
			proc, logs := filepath.Join(dir, "proc"), filepath.Join(dir, "pods")
			const uid = "6c7d8e9f-0a1b-4c2d-8e3f-405162738495"
			const id = "4f3e2d1c0b0a09080706050403020100ffeeddccbbaa99887766554433221100"
			for _, err := range []error{
				kubeletsim.WriteHostInit(tc.tree, proc),
				kubeletsim.WriteProcess(tc.tree, proc, 4242, uid, id),
				kubeletsim.WritePodLogs(tc.tree, logs, "ml", "train", uid, "trainer"),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			r := attribution.NewProcessResolver(attribution.ProcessConfig{ProcRoot: proc, PodLogsDir: logs, Files: tc.files})
			got, err := r.Resolve(4242)
			if err != nil || got.Namespace != "ml" || got.Pod != "train" || got.PodUID != uid || got.ContainerID != id || !slices.Equal(got.Containers, []string{"trainer"}) {
				t.Fatalf("Resolve = %+v, %v", got, err)
			}
			holders := []attribution.Holder{{Namespace: "ml", Pod: "train", Container: "trainer", Replicas: 1, Share: 1}}
			u := r.Split([]attribution.ProcessSample{{PID: 4242, Utilization: 0.7, UsedMemoryBytes: 1 << 30}}, holders)
			if !u.Up || u.Holders[0].Utilization != 0.7 || u.Holders[0].MemoryUsedBytes != 1<<30 {
				t.Errorf("Split = %+v", u)
			}
			// The process ends: its PID is gone.
			if err := kubeletsim.RemoveProcess(tc.tree, proc, 4242); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Resolve(4242); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Resolve after the process ended: %v, want fs.ErrNotExist", err)
			}
		})
	}
}
