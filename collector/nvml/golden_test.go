package nvml

import (
	"context"
	"flag"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/collectortest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// populate gives every GPU of n distinct, plausible readings.
func populate(n *fakeNode) {
	for i, h := range n.gpus {
		h.set(func(h *hw) {
			u := uint32(i)
			h.util = gonvml.Utilization{Gpu: 10 * u, Memory: 5 * u}
			h.mem.Used = uint64(1024*(i+1)) * mib
			h.mem.Free = h.mem.Total - h.mem.Reserved - h.mem.Used
			h.temp, h.memTemp = 40+u, 50+u
			h.powerMW = 90_000 + 25_500*u
			h.energyMJ = 1_000_000_000 + 1_000_000*uint64(i)
			h.smMHz, h.memMHz = 1410, 1593
			h.replay = i % 3
			h.powerViolNS, h.thermalViolNS = 1_000_000*uint64(i), 0
			h.gpm = [4]float64{float64(9 * i), float64(7 * i), float64(3 * i), float64(2 * i)}
		})
	}
	for _, migs := range n.migs {
		for j, h := range migs {
			h.set(func(h *hw) { h.gpm = [4]float64{float64(12 * j), float64(10 * j), float64(4 * j), float64(j)} })
		}
	}
}

func TestGoldenExposition(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		node       *fakeNode
		// between the two ticks
		change func(n *fakeNode)
	}{
		{
			name: "dgxa100", host: "dgx-a100-01",
			node: newFakeNode(dgxa100.New(), map[int][]int{
				1: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE},
				6: {gonvml.GPU_INSTANCE_PROFILE_7_SLICE},
			}),
			change: func(n *fakeNode) {
				n.events.push(gonvml.EventData{Device: n.srv.Devices[3], EventType: gonvml.EventTypeXidCriticalError, EventData: 31})
			},
		},
		{
			name: "dgxh100", host: "dgx-h100-01",
			node: newFakeNode(dgxh100.New(), map[int][]int{
				2: {gonvml.GPU_INSTANCE_PROFILE_7_SLICE},
				5: {gonvml.GPU_INSTANCE_PROFILE_3_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, gonvml.GPU_INSTANCE_PROFILE_1_SLICE},
			}),
			change: func(n *fakeNode) {
				// GPU 7 falls off the bus; GPU 4 reports a double-bit ECC error.
				n.events.push(
					gonvml.EventData{Device: n.srv.Devices[4], EventType: gonvml.EventTypeXidCriticalError, EventData: 48},
					gonvml.EventData{Device: n.srv.Devices[7], EventType: gonvml.EventTypeXidCriticalError, EventData: 79},
				)
				n.gpus[4].set(func(h *hw) { h.dbe = 1 })
				n.gpus[7].set(func(h *hw) { h.lost = true })
				n.gpus[3].set(func(h *hw) { h.ret["memory_temperature"] = gonvml.ERROR_NOT_SUPPORTED })
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			populate(tc.node)
			b, err := New(tc.node.srv, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.node.srv.ShutdownFunc = func() gonvml.Return { return gonvml.SUCCESS }
			defer b.Close()
			s := collector.NewSampler(b, collector.SamplerOptions{Now: fixedClock(t0)})
			if err := s.Tick(context.Background(), t0.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
			tc.change(tc.node)
			if err := s.Tick(context.Background(), t0); err != nil {
				t.Fatal(err)
			}
			for _, names := range collectortest.Namings {
				c := collector.NewCollector(s, collector.Node{Hostname: tc.host, Names: names}, fixedClock(t0.Add(500*time.Millisecond)))
				collectortest.CompareGolden(t, c, collectortest.GoldenFile("testdata", tc.name, names), *update)
			}
		})
	}
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }
