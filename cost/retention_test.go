package cost

import (
	"math"
	"testing"
	"time"
)

// TestTotalSince: a series' Since is the ledger time of the first tick it
// was in, and stays while the series lives — also while it is retained and
// when it comes back within the window. A holder, a MIG instance or a GPU
// dropped after the window and back starts again with the later Since, even
// when its new total outgrows the old one (a reader of totals cannot tell
// that from the values). Ledger times by hand, retention 100 s:
//
//	t = 10   GPU-w (p holds it) and GPU-m (instance MIG-1, p) appear: Since 10
//	t = 100  p not on GPU-w (last there at 10); back at 110, within the window: Since 10
//	t = 210  p not on GPU-w since 110 and MIG-1 gone since 100 (GPU-m without
//	         instances): both dropped; back at 220: Since 220, and p's busy
//	         series outgrows its first life by t = 390; GPU-m's and GPU-w's
//	         own series lived on: Since 10
//	t = 400  GPU-m gone (last there at 390), dropped at 500, back at 580: Since 580
func TestTotalSince(t *testing.T) {
	p := HolderKey{"ml", "train-0", "main"}
	holders := []Holder{{Key: p, Share: 1, Activity: math.NaN()}}
	whole := func(held bool) GPUState {
		g := GPUState{UUID: "GPU-w", Model: h100, PowerW: 300, Activity: 0.9, HoldersKnown: true}
		if held {
			g.Holders = holders
		}
		return g
	}
	migGPU := func(held bool) GPUState {
		g := GPUState{UUID: "GPU-m", Model: h100, PowerW: 300, MIG: true, HoldersKnown: true}
		if held {
			g.Instances = []Instance{{UUID: "MIG-1", ComputeSlices: 7, MemorySlices: 8, Activity: 0.9, HoldersKnown: true, Holders: holders}}
		}
		return g
	}
	l := NewLedger(&bookSource{Default()}, WithRetention(100*time.Second))
	since := func(device string, h HolderKey, st State) float64 {
		t.Helper()
		tot, ok := totalsByKey(t, l)[seriesKey{device, h, st}]
		if !ok {
			t.Fatalf("no series %s %+v %s", device, h, st)
		}
		return tot.Since
	}
	check := func(at string, device string, h HolderKey, st State, want float64) {
		t.Helper()
		if got := since(device, h, st); got != want {
			t.Errorf("%s: %s %+v %s Since %g, want %g", at, device, h, st, got, want)
		}
	}
	l.Advance(10*time.Second, []GPUState{whole(true), migGPU(true)})
	check("t=10", "GPU-w", p, Busy, 10)
	check("t=10", "MIG-1", p, Busy, 10)
	l.Advance(90*time.Second, []GPUState{whole(false), migGPU(true)})
	l.Advance(10*time.Second, []GPUState{whole(true), migGPU(false)})
	check("t=110, back within the window", "GPU-w", p, Busy, 10)
	busyAt110 := totalsByKey(t, l)[seriesKey{"GPU-w", p, Busy}].Seconds
	l.Advance(100*time.Second, []GPUState{whole(false), migGPU(false)})
	if _, ok := totalsByKey(t, l)[seriesKey{"GPU-w", p, Busy}]; ok {
		t.Fatal("t=210: p's series on GPU-w are still there 100 s after it left")
	}
	l.Advance(10*time.Second, []GPUState{whole(true), migGPU(true)})
	check("t=220, back after the window", "GPU-w", p, Busy, 220)
	check("t=220, back after the window", "MIG-1", p, Busy, 220)
	check("t=220, back after the window", "MIG-1", HolderKey{}, Unallocated, 220)
	check("t=220", "GPU-m", HolderKey{}, Unallocated, 10)
	check("t=220", "GPU-w", HolderKey{}, Unallocated, 10)
	l.Advance(170*time.Second, []GPUState{whole(true), migGPU(true)})
	if busy := since("GPU-w", p, Busy); busy != 220 || totalsByKey(t, l)[seriesKey{"GPU-w", p, Busy}].Seconds <= busyAt110 {
		t.Errorf("t=390: p's new life on GPU-w since %g with %g s, want since 220 and more than its first life's %g s",
			busy, totalsByKey(t, l)[seriesKey{"GPU-w", p, Busy}].Seconds, busyAt110)
	}
	l.Advance(10*time.Second, []GPUState{whole(true)})
	l.Advance(100*time.Second, []GPUState{whole(true)})
	l.Advance(80*time.Second, []GPUState{whole(true), migGPU(false)})
	check("t=580, GPU-m back after the window", "GPU-m", HolderKey{}, Unallocated, 580)
}
