package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// TestInventoryMIGPlacement: a MIG instance carries the memory slices its GPU
// instance occupies (what DRA's dynamic MIG devices are matched by), and none
// when NVML does not give the GPU instance.
func TestInventoryMIGPlacement(t *testing.T) {
	n := newFakeNode(dgxh100.New(), map[int][]int{0: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE}})
	d := n.srv.Devices[0].(*server.Device)
	placed := map[uint32]gonvml.GpuInstancePlacement{0: {Start: 4, Size: 4}, 1: {Start: 2, Size: 1}}
	for gi := range d.GpuInstances {
		gi.Info.Placement = placed[gi.Info.Id]
	}
	_, inv := newBackend(t, n)
	insts := inv.GPUs[0].Instances
	if len(insts) != 2 {
		t.Fatalf("%d instances, want 2", len(insts))
	}
	for _, in := range insts {
		want := placed[uint32(in.GPUInstanceID)]
		if in.PlacementStart != int(want.Start) || in.PlacementSize != int(want.Size) {
			t.Errorf("GPU instance %d: placement %d+%d, want %d+%d", in.GPUInstanceID, in.PlacementStart, in.PlacementSize, want.Start, want.Size)
		}
	}

	d.GetGpuInstanceByIdFunc = func(int) (gonvml.GpuInstance, gonvml.Return) { return nil, gonvml.ERROR_NO_PERMISSION }
	_, inv = newBackend(t, n)
	for _, in := range inv.GPUs[0].Instances {
		if in.PlacementSize != 0 {
			t.Errorf("GPU instance %d: placement %d+%d without access to it, want unknown (size 0)", in.GPUInstanceID, in.PlacementStart, in.PlacementSize)
		}
	}
}
