package history

import (
	"math"
	"testing"

	"github.com/gputally/gputally/cost"
)

func TestTallySumsLives(t *testing.T) {
	a := cost.Total{GPU: "GPU-a", Device: "GPU-a", Holder: cost.HolderKey{Namespace: "ci", Pod: "p", Container: "c"}, State: cost.Busy}
	b := cost.Total{GPU: "GPU-a", Device: "GPU-a", State: cost.Unallocated}
	at := func(x cost.Total, seconds float64) cost.Total { x.Seconds, x.EUR = seconds, seconds/100; return x }
	var s tally
	s.restart()
	s.add([]cost.Total{at(a, 10), at(b, 5)})
	s.add([]cost.Total{at(a, 20), at(b, 5)})
	s.add([]cost.Total{at(b, 15)})           // a ended and was dropped …
	s.add([]cost.Total{at(a, 3), at(b, 15)}) // … and came back from 0: 20 + 3
	s.restart()                              // the exporter restarts: both from 0
	s.add([]cost.Total{at(a, 0), at(b, 0)})
	s.add([]cost.Total{at(a, 7), at(b, 1)})
	got := s.totals()
	if len(got) != 2 {
		t.Fatalf("totals %+v", got)
	}
	// Sorted by holder: the unallocated series (no holder) first.
	want := []float64{15 + 1, 20 + 3 + 7}
	for i, w := range want {
		if got[i].Seconds != w || math.Abs(got[i].EUR-w/100) > 1e-12 {
			t.Errorf("totals[%d] = %v s, %v EUR; want %v s, %v EUR", i, got[i].Seconds, got[i].EUR, w, w/100)
		}
	}
	if got[1].Holder != a.Holder || got[0].State != cost.Unallocated {
		t.Errorf("totals %+v", got)
	}
}
