package dcgm

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

// TestLostGPUKeptOnReconnect: when the inventory is read again after a
// reconnect, a GPU that was lost, or whose attributes now fail with
// DCGM_ST_GPU_IS_LOST, stays listed exactly as it was and reads as Lost in
// every later sample, so the ledger keeps charging its capital as lost. A GPU
// whose attributes fail otherwise still fails the reconnect.
func TestLostGPUKeptOnReconnect(t *testing.T) {
	errLost := &statusError{op: "read device attributes", code: stGPUIsLost, msg: "GPU is lost"}
	for _, tc := range []struct {
		name       string
		lostBefore bool // lost before the hostengine goes away
		// reconnect changes the node before the backend reconnects.
		reconnect func(n *fakeNode, id uint)
		kept      bool
	}{
		{
			name:       "lost, no longer listed",
			lostBefore: true,
			reconnect: func(n *fakeNode, id uint) {
				n.gpus = slices.DeleteFunc(n.gpus, func(g uint) bool { return g == id })
				delete(n.lostGPUs, id)
			},
			kept: true,
		},
		{
			name:       "lost, attributes readable, identity fields blank, DCGM no longer says lost",
			lostBefore: true,
			reconnect: func(n *fakeNode, id uint) {
				delete(n.values, gpuEnt(id))
				delete(n.lostGPUs, id)
			},
			kept: true,
		},
		{
			name: "lost while reconnecting: attributes fail with GPU lost",
			reconnect: func(n *fakeNode, id uint) {
				n.infoErr[id] = errLost
				n.lostGPUs[id] = true
			},
			kept: true,
		},
		{
			name: "not lost, attributes fail otherwise",
			reconnect: func(n *fakeNode, id uint) {
				n.infoErr[id] = &statusError{op: "read device attributes", code: stNoPermission, msg: "no permission"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := a100Node(3)
			b, clock, _ := newTestBackend(t, n)
			id := n.gpuOf(1)
			want := b.inv.GPUs[1]
			if want.Index != 1 || want.UUID == "" {
				t.Fatalf("GPU 1 listed as %+v", want)
			}
			n.lostGPUs[id] = tc.lostBefore
			if s := mustSample(t, b, errCounts{}); s.GPUs[1].Lost != tc.lostBefore {
				t.Fatalf("before the reconnect: lost %v, want %v", s.GPUs[1].Lost, tc.lostBefore)
			}

			n.down = true
			if _, err := sample(t, b, errCounts{}); !errors.Is(err, ErrDisconnected) {
				t.Fatalf("Sample while down: %v", err)
			}
			tc.reconnect(n, id)
			n.down = false
			clock.Advance(time.Minute)
			if !tc.kept {
				if _, err := sample(t, b, errCounts{}); !errors.Is(err, ErrDisconnected) {
					t.Fatalf("Sample after reconnecting: %v, want ErrDisconnected", err)
				}
				return
			}
			for k := range 3 {
				s := mustSample(t, b, errCounts{})
				if len(b.inv.GPUs) != 3 || !reflect.DeepEqual(b.inv.GPUs[1], want) {
					t.Fatalf("after the reconnect the GPUs are %+v, want GPU 1 as it was: %+v", b.inv.GPUs, want)
				}
				for i, r := range s.GPUs {
					if lost := i == 1; r.Lost != lost || r.Healthy == lost {
						t.Errorf("sample %d, GPU %d: lost %v healthy %v, want lost %v", k, i, r.Lost, r.Healthy, lost)
					}
				}
			}
		})
	}
}

// TestLostGPUKeptOnMIGChange: GPU 1 is lost, then GPU 2's MIG layout changes.
// The next Inventory reads the devices again: GPU 2 lists its new instance, GPU
// 1 is still listed as it was and every later sample marks it lost, although
// DCGM no longer lists it.
func TestLostGPUKeptOnMIGChange(t *testing.T) {
	n := a100Node(3)
	b, _, _ := newTestBackend(t, n)
	lostID, migID := n.gpuOf(1), n.gpuOf(2)
	want := b.inv.GPUs[1]
	n.lostGPUs[lostID] = true
	if s := mustSample(t, b, errCounts{}); !s.GPUs[1].Lost {
		t.Fatal("GPU 1 not lost")
	}
	n.gpus = slices.DeleteFunc(n.gpus, func(g uint) bool { return g == lostID })
	delete(n.lostGPUs, lostID)
	n.addInstance(migID, 8, 5, 0, 1, "1g.5gb", "MIG-c", 4864)
	if _, err := sample(t, b, errCounts{}); !errors.Is(err, collector.ErrInventoryChanged) {
		t.Fatalf("Sample after the MIG change: %v, want ErrInventoryChanged", err)
	}
	for k := range 3 {
		s := mustSample(t, b, errCounts{})
		inv, err := b.Inventory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(inv.GPUs) != 3 || !reflect.DeepEqual(inv.GPUs[1], want) {
			t.Fatalf("after the MIG change the GPUs are %+v, want GPU 1 as it was: %+v", inv.GPUs, want)
		}
		if g := inv.GPUs[2]; !g.MIGEnabled || len(g.Instances) != 1 || g.Instances[0].GPUInstanceID != 5 {
			t.Fatalf("GPU 2 after the MIG change: %+v, want its GPU instance 5", g)
		}
		for i, r := range s.GPUs {
			if lost := i == 1; r.Lost != lost || r.Healthy == lost {
				t.Errorf("sample %d, GPU %d: lost %v healthy %v, want lost %v", k, i, r.Lost, r.Healthy, lost)
			}
		}
	}
}
