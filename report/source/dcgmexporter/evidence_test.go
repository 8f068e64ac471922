package dcgmexporter

import (
	"math"
	"testing"

	"github.com/gputally/gputally/report/model"
)

// TestCapacityUnread: a node whose capacity was missing at more than 1 %
// of its grid points gets no drain; at exactly 1 % it does.
func TestCapacityUnread(t *testing.T) {
	for _, tc := range []struct {
		points, missing int
		want            bool
	}{{100, 0, false}, {100, 1, false}, {100, 2, true}, {200, 3, true}, {1, 1, true}} {
		n := nodeEvidence{points: tc.points, noCapacity: tc.missing}
		if got := n.capacityUnread(); got != tc.want {
			t.Errorf("%d of %d points without capacity: unread %v, want %v", tc.missing, tc.points, got, tc.want)
		}
	}
}

// TestInUseWithoutCapacity: on a node without its capacity, a GPU no pod
// is labelled on is unknown when it shows work — activity at the idle
// threshold (0.05) or above, or 1024 MiB of framebuffer or more in use —
// and unallocated otherwise.
func TestInUseWithoutCapacity(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		gr, fb  float64
		unknown bool
	}{
		{0.05, 0, true}, {0.0499, 0, false}, {0, 1024, true}, {0, 1023, false}, {nan, nan, false}, {0.9, 70000, true},
	} {
		id := &dcgmSeries{dev: model.DeviceKey{UUID: "GPU-0"}, host: "n1", model: "NVIDIA H100 80GB HBM3"}
		r := newDeviceReading(id)
		r.gr, r.fb = tc.gr, tc.fb*(1<<20) // a reading's framebuffer is in bytes
		out := classifyNode(newGridPoint(), "n1", []string{"GPU-0"}, map[string]*deviceReading{"GPU-0": r}, nil, 0, 0.05)
		if got := !out[0].state.HoldersKnown; got != tc.unknown {
			t.Errorf("activity %g, %g MiB: unknown %v, want %v", tc.gr, tc.fb, got, tc.unknown)
		}
	}
}
