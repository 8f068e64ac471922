package nvml

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/gputally/gputally/collector"
)

// TestLostGPUKeptOnInventoryReread: a GPU that is lost before, or found lost
// while, the inventory is re-read after another GPU's MIG layout changed stays
// listed exactly as it was last read and reads as Lost in every later sample, so
// the ledger keeps charging its capital as lost. A GPU that merely fails to be
// read is still left out.
func TestLostGPUKeptOnInventoryReread(t *testing.T) {
	lostHandle := func(ret gonvml.Return) func(n *fakeNode, gpu int) {
		return func(n *fakeNode, gpu int) {
			get := n.srv.DeviceGetHandleByIndexFunc
			n.srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
				if i == gpu {
					return nil, ret
				}
				return get(i)
			}
		}
	}
	for _, tc := range []struct {
		name string
		gpu  int
		// lose runs before the first sample; reread before the inventory is re-read.
		lose, reread func(n *fakeNode, gpu int)
		lostBefore   bool // the GPU reads as lost before the re-read
		listed       bool // the GPU is listed after the re-read
	}{
		{
			name:       "lost in a sample, UUID unreadable at the re-read",
			gpu:        3,
			lose:       func(n *fakeNode, gpu int) { n.gpus[gpu].set(func(h *hw) { h.lost = true }) },
			lostBefore: true, listed: true,
		},
		{
			name: "lost in a sample, readable at the re-read",
			gpu:  3,
			lose: func(n *fakeNode, gpu int) {
				n.gpus[gpu].set(func(h *hw) { h.ret["power"] = gonvml.ERROR_GPU_IS_LOST })
			},
			reread:     func(n *fakeNode, gpu int) { n.gpus[gpu].set(func(h *hw) { delete(h.ret, "power") }) },
			lostBefore: true, listed: true,
		},
		{
			name: "lost at the re-read, handle unreadable",
			gpu:  3,
			reread: func(n *fakeNode, gpu int) {
				n.gpus[gpu].set(func(h *hw) { h.lost = true })
				lostHandle(gonvml.ERROR_GPU_IS_LOST)(n, gpu)
			},
			listed: true,
		},
		{
			name: "lost at the re-read, memory unreadable",
			gpu:  3,
			reread: func(n *fakeNode, gpu int) {
				n.gpus[gpu].set(func(h *hw) { h.ret["memory"] = gonvml.ERROR_GPU_IS_LOST })
			},
			listed: true,
		},
		{
			name: "lost in a sample, no longer enumerated",
			gpu:  7,
			lose: func(n *fakeNode, gpu int) { n.gpus[gpu].set(func(h *hw) { h.lost = true }) },
			reread: func(n *fakeNode, gpu int) {
				n.srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return gpu, gonvml.SUCCESS }
			},
			lostBefore: true, listed: true,
		},
		{
			name:   "not lost, handle unreadable at the re-read",
			gpu:    3,
			reread: lostHandle(gonvml.ERROR_UNKNOWN),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(dgxh100.New(), map[int][]int{1: {gonvml.GPU_INSTANCE_PROFILE_1_SLICE}})
			b, inv := newBackend(t, n)
			want := inv.GPUs[tc.gpu]
			if want.Index != tc.gpu || want.MemoryTotalMiB == 0 || want.Model == "" {
				t.Fatalf("GPU %d listed as %+v", tc.gpu, want)
			}
			if tc.lose != nil {
				tc.lose(n, tc.gpu)
			}
			s := sample(t, b, inv, t0, countErrs{})
			if got := s.GPUs[tc.gpu].Lost; got != tc.lostBefore {
				t.Fatalf("before the re-read: lost %v, want %v", got, tc.lostBefore)
			}

			// GPU 1's MIG layout changes: the sampler re-reads the inventory.
			n.events.push(gonvml.EventData{Device: n.srv.Devices[1], EventType: gonvml.EventMigConfigChange})
			if err := b.Sample(context.Background(), t0.Add(time.Second), newSample(inv, t0), countErrs{}); !errors.Is(err, collector.ErrInventoryChanged) {
				t.Fatalf("Sample after a MIG change: %v, want ErrInventoryChanged", err)
			}
			if tc.reread != nil {
				tc.reread(n, tc.gpu)
			}
			inv, err := b.Inventory(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			at := -1
			for i, g := range inv.GPUs {
				if g.UUID == want.UUID {
					at = i
				}
			}
			if listed := at >= 0; listed != tc.listed {
				t.Fatalf("GPU %d listed %v after the re-read, want %v: %+v", tc.gpu, listed, tc.listed, inv.GPUs)
			}
			wantGPUs := 7
			if tc.listed {
				wantGPUs = 8
			}
			if len(inv.GPUs) != wantGPUs {
				t.Fatalf("%d GPUs after the re-read, want %d", len(inv.GPUs), wantGPUs)
			}
			if !tc.listed {
				return
			}
			if !reflect.DeepEqual(inv.GPUs[at], want) {
				t.Errorf("after the re-read GPU %d is listed as\n%+v\nwant it as it was\n%+v", tc.gpu, inv.GPUs[at], want)
			}
			for k := range 3 {
				s := sample(t, b, inv, t0.Add(time.Duration(2+k)*time.Second), countErrs{})
				for i, r := range s.GPUs {
					if lost := i == at; r.Lost != lost || r.Healthy == lost {
						t.Errorf("sample %d, GPU %s: lost %v healthy %v, want lost %v", k, inv.GPUs[i].UUID, r.Lost, r.Healthy, lost)
					}
				}
			}
		})
	}
}
