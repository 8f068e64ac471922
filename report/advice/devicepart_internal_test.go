package advice

import (
	"testing"
	"time"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// TestDevicePart: the part of a GPU one device of a resource is. A whole
// GPU 1. On an A100 80GB (its table: 1g.10gb 1 compute slice of 7 and 1
// memory slice of 8, 3g.40gb 3 and 4): 1/7 and 3/7 by compute weight, 1/8
// and 4/8 by memory weight — held or only in the table of a GPU model in
// the data; a profile no model there has is not known. A time-sliced
// replica: node t offers 8 nvidia.com/gpu.shared at the end and has 2 GPUs
// in the ledger, node u offers 4 and has none there (left out): 2 ÷ 8 =
// 1/4; without an offer of it, not known.
func TestDevicePart(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := model.NewDataset(model.Range{Start: start, End: start.Add(time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{
		{Dev: model.DeviceKey{UUID: "GPU-a", GI: "1", Profile: "1g.10gb"}, Holder: model.HolderKey{Namespace: "n", Pod: "p", Container: "c"}}: {Model: "NVIDIA A100-SXM4-80GB", Host: "m", Profile: "1g.10gb"},
		{Dev: model.DeviceKey{UUID: "GPU-t0"}}: {Model: "NVIDIA H100 80GB HBM3", Host: "t"},
		{Dev: model.DeviceKey{UUID: "GPU-t1"}}: {Model: "NVIDIA H100 80GB HBM3", Host: "t"},
	}
	shared := func(n string) model.NodeResource {
		return model.NodeResource{Node: n, Resource: "nvidia.com/gpu.shared"}
	}
	d.Waiting = &model.Waiting{Capacity: map[model.NodeResource][]model.Level{shared("t"): {{From: start, Value: 8}}, shared("u"): {{From: start, Value: 4}}}}
	for _, c := range []struct {
		weight   cost.MIGWeight
		resource string
		want     float64
		known    bool
	}{
		{cost.ComputeWeight, "nvidia.com/gpu", 1, true},
		{cost.ComputeWeight, "nvidia.com/mig-1g.10gb", 1.0 / 7, true},
		{cost.MemoryWeight, "nvidia.com/mig-1g.10gb", 1.0 / 8, true},
		{cost.ComputeWeight, "nvidia.com/mig-3g.40gb", 3.0 / 7, true},
		{cost.MemoryWeight, "nvidia.com/mig-3g.40gb", 4.0 / 8, true},
		{cost.ComputeWeight, "nvidia.com/mig-9g.999gb", 0, false},
		{cost.ComputeWeight, "nvidia.com/gpu.shared", 2.0 / 8, true},
		{cost.ComputeWeight, "example.com/fpga", 0, false},
	} {
		a := &adviser{migWeight: c.weight}
		if got, ok := a.devicePart(d, c.resource); ok != c.known || got != c.want {
			t.Errorf("%s by %s weight: %g (known %v), want %g (%v)", c.resource, c.weight, got, ok, c.want, c.known)
		}
	}
	d.Waiting.Capacity = nil
	if _, ok := (&adviser{}).devicePart(d, "nvidia.com/gpu.shared"); ok {
		t.Error("replicas known without an offer of nvidia.com/gpu.shared")
	}
}
