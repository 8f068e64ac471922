package nvml

import (
	"context"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
)

// BenchmarkSample is one Sample of a DGX H100 mock with 8 GPUs × 7 MIG
// instances (1g.10gb), each GPU with two compute processes. The mock's own
// cost (locks, closures) is included.
func BenchmarkSample(b *testing.B) {
	seven := []int{0, 0, 0, 0, 0, 0, 0}
	for i := range seven {
		seven[i] = gonvml.GPU_INSTANCE_PROFILE_1_SLICE
	}
	mig := map[int][]int{}
	for i := range 8 {
		mig[i] = seven
	}
	n := newFakeNode(dgxh100.New(), mig)
	populate(n)
	for _, h := range n.gpus {
		h.set(func(h *hw) {
			h.procs = []gonvml.ProcessInfo{
				{Pid: 100, UsedGpuMemory: 1 << 30, GpuInstanceId: 0},
				{Pid: 200, UsedGpuMemory: 2 << 30, GpuInstanceId: 3},
			}
		})
	}
	be, inv := newBackend(b, n)
	if len(inv.GPUs) != 8 || len(inv.GPUs[7].Instances) != 7 {
		b.Fatalf("inventory: %d GPUs, %d instances on the last", len(inv.GPUs), len(inv.GPUs[7].Instances))
	}
	s := newSample(inv, t0)
	errs := countErrs{}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Time = t0.Add(time.Duration(i) * time.Second)
		if err := be.Sample(ctx, s.Time, s, errs); err != nil {
			b.Fatal(err)
		}
	}
}
