package model

import (
	"testing"
	"time"
)

// TestAddSeconds: over three 1 h buckets one holding has 600 s busy in
// bucket 0, a busy series that did not grow (0 s) in bucket 1 with 30 s
// unknown, and 3,600 s idle and 12 s unknown in bucket 2. Busy buckets: only
// 0 (0 s is not busy). The GPU saw 600, 30 and 3,612 s; 42 s unknown in all.
func TestAddSeconds(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := NewDataset(Range{Start: start, End: start.Add(3 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	e := &LedgerEntry{Last: -1}
	g := d.GPU(GPUKey{UUID: "GPU-0"}, e)
	for _, s := range []struct {
		b, st int
		v     float64
	}{{0, StateBusy, 600}, {1, StateBusy, 0}, {1, StateUnknown, 30}, {2, StateIdle, 3600}, {2, StateUnknown, 12}} {
		d.AddSeconds(e, g, s.b, s.st, s.v)
	}
	if !e.BusyBuckets.Has(0) || e.BusyBuckets.Has(1) || e.BusyBuckets.Has(2) {
		t.Errorf("busy buckets %b, want only bucket 0", e.BusyBuckets)
	}
	if g.Seen[0] != 600 || g.Seen[1] != 30 || g.Seen[2] != 3612 || g.Unknown != 42 || e.Last != 2 {
		t.Errorf("seen %v, unknown %g s, last %d; want [600 30 3612], 42 s, 2", g.Seen, g.Unknown, e.Last)
	}
}
