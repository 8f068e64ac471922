package model

import (
	"math"
	"testing"
	"time"
)

// TestLevelAt: 3 from 1 h, unknown (NaN) from 2 h, 5 from 4 h: before 1 h
// nothing is known; exactly at a level's start it holds.
func TestLevelAt(t *testing.T) {
	s := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return s.Add(time.Duration(h * float64(time.Hour))) }
	levels := []Level{{at(1), 3}, {at(2), math.NaN()}, {at(4), 5}}
	for _, c := range []struct {
		h    float64
		want float64
	}{{0.5, math.NaN()}, {1, 3}, {1.99, 3}, {2, math.NaN()}, {3.9, math.NaN()}, {4, 5}, {100, 5}} {
		got := LevelAt(levels, at(c.h))
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("at %g h: %g, want %g", c.h, got, c.want)
		}
	}
}

// TestAddEUR: idle EUR is booked to its cluster's bucket as well as to the
// entry; busy EUR to the entry only. Cluster x: 1.5 EUR idle in bucket 0,
// 2 in bucket 2 (two bookings of 1), busy 7 in bucket 1; cluster y: 4 idle
// in bucket 1.
func TestAddEUR(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := NewDataset(Range{Start: start, End: start.Add(3 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	e, f := &LedgerEntry{Last: -1}, &LedgerEntry{Last: -1}
	d.AddEUR(e, "x", 0, StateIdle, 1.5)
	d.AddEUR(e, "x", 1, StateBusy, 7)
	d.AddEUR(e, "x", 2, StateIdle, 1)
	d.AddEUR(e, "x", 2, StateIdle, 1)
	d.AddEUR(f, "y", 1, StateIdle, 4)
	if e.EUR[StateIdle] != 3.5 || e.EUR[StateBusy] != 7 || f.EUR[StateIdle] != 4 {
		t.Errorf("entry EUR %v and %v, want 3.5 idle + 7 busy, 4 idle", e.EUR, f.EUR)
	}
	x, y := d.IdleEUR["x"], d.IdleEUR["y"]
	if len(x) != 3 || x[0] != 1.5 || x[1] != 0 || x[2] != 2 || len(y) != 3 || y[1] != 4 {
		t.Errorf("idle EUR per bucket x %v, y %v; want [1.5 0 2], [0 4 0]", x, y)
	}
	if c := d.OfCluster("y"); len(c.IdleEUR) != 1 || c.IdleEUR["y"][1] != 4 {
		t.Errorf("cluster y's idle EUR %v, want only y's", c.IdleEUR)
	}
}

// TestIdleBuckets: AddSeconds marks the buckets with idle seconds (0 s of
// idle is none).
func TestIdleBuckets(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := NewDataset(Range{Start: start, End: start.Add(3 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	e := &LedgerEntry{Last: -1}
	g := d.GPU(GPUKey{UUID: "GPU-0"}, e)
	d.AddSeconds(e, g, 0, StateIdle, 10)
	d.AddSeconds(e, g, 1, StateIdle, 0)
	d.AddSeconds(e, g, 2, StateBusy, 10)
	if !e.IdleBuckets.Has(0) || e.IdleBuckets.Has(1) || e.IdleBuckets.Has(2) {
		t.Errorf("idle buckets %b, want only 0", e.IdleBuckets)
	}
}

// TestWaitingOfCluster: the part of the waiting data in one cluster keeps
// its pods and nodes only.
func TestWaitingOfCluster(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := NewDataset(Range{Start: start, End: start.Add(time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	d.Waiting = &Waiting{
		Pods:     []PodWait{{Pod: PodKey{Cluster: "x", Pod: "p"}}, {Pod: PodKey{Cluster: "y", Pod: "q"}}},
		Capacity: map[NodeResource][]Level{{Cluster: "x", Node: "a"}: nil, {Cluster: "y", Node: "b"}: nil},
		Bound:    map[NodeResource][]Level{{Cluster: "y", Node: "b"}: nil},
	}
	w := d.OfCluster("y").Waiting
	if len(w.Pods) != 1 || w.Pods[0].Pod.Pod != "q" || len(w.Capacity) != 1 || len(w.Bound) != 1 || len(d.Waiting.Pods) != 2 {
		t.Errorf("cluster y: %+v (of %+v)", w, d.Waiting)
	}
}
