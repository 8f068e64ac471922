package analysis_test

import (
	"testing"
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// waitGroup returns the group named name of gs.
func waitGroup(t *testing.T, gs []analysis.WaitGroup, name string) analysis.WaitGroup {
	t.Helper()
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", name, gs)
	return analysis.WaitGroup{}
}

// TestWaitingStory holds every waiting figure of hourly.WaitingStory to
// its hand-computed value.
//
// Waits in the range (from creation, or the range's start, to binding,
// deletion, or the range's end):
//   - train 0.5 → 5 h = 4.5 h × 4 GPUs = 18 GPU-hours;
//   - early, created before the range, 0 → 0.25 h = 0.25 h × 1 = 0.25 (its
//     whole wait of 2.25 h is over the 30 s interval, so it counts);
//   - quick waited 20 s, within the 30 s scrape interval: 0, not counted;
//   - nb-1 1 → 3.25 h (deleted unbound) = 2.25 h × 1 = 2.25;
//   - nb-2 3 → 6 h = 3 h × 2 = 6;
//   - mig-1 7 → 8 h (the end) = 1 h × 2 MIG instances = 2.
//
// GPU-hours 18 + 0.25 + 2.25 + 6 + 2 = 28.5 over 5 pods. Waits sorted:
// 0.25, 1, 2.25, 3, 4.5 h; nearest rank: p50 is rank ⌈2.5⌉ = 3 → 2.25 h, p95
// rank ⌈4.75⌉ = 5 → 4.5 h.
//
// Fragmented (free a, b, c): train needs 4; in [0.5, 2) free 2 + 1 + 2 = 5
// with at most 2 on a node: fragmented 1.5 h; in [2, 3) c is full, 3 free
// in all: not; in [3, 5) 5 again: 2 h. 3.5 h × 4 = 14. nb-1 (1) and nb-2 (2)
// always fit node a. mig-1 needs 2: in [7, 7.5) m1 and m2 have 1 free each,
// 2 in all: 0.5 h × 2 = 1; from 7.5 h only 1 is free. Fragmented 14 + 1 = 15.
//
// Idle while waiting: the counted pods waited in buckets early 0; train
// 0–4; nb-1 1–3; nb-2 3–5; mig-1 7: every bucket but 6 (where only quick,
// not counted, was). The hog idles 2^b EUR in bucket b: 255 − 64 = 191 EUR.
//
// Per namespace: research (train, early) 18.25 GPU-hours, 2 pods, waits
// 0.25 and 4.5: p50 rank 1 → 0.25, p95 rank ⌈1.9⌉ = 2 → 4.5, fragmented 14;
// notebooks (nb-1, nb-2) 8.25, 2 pods, p50 2.25, p95 3, fragmented 0;
// inference (mig-1) 2, 1 pod, 1 h, fragmented 1. Per team: ml (train,
// early, nb-2) 24.25, 3 pods, waits 0.25, 3, 4.5: p50 rank 2 → 3, p95
// rank 3 → 4.5; data (nb-1 by its pod label) 2.25; inference 2.
func TestWaitingStory(t *testing.T) {
	r, err := analysis.Analyze(hourly.WaitingStory(), hourly.Teams{}, true)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Waiting
	if !w.Measured || w.Interval != "30s" {
		t.Errorf("measured %v, interval %q; want true, 30s", w.Measured, w.Interval)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"gpu_hours", w.GPUHours, 28.5}, {"pods", float64(w.Pods), 5}, {"p50", w.P50WaitHours, 2.25}, {"p95", w.P95WaitHours, 4.5},
		{"fragmented", w.FragmentedGPUHours, 15}, {"idle while waiting EUR", w.IdleWhileWaitingEUR, 191},
	} {
		if !near(c.got, c.want) {
			t.Errorf("fleet %s = %g, want %g", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		groups               []analysis.WaitGroup
		name                 string
		gpuHours             float64
		pods                 int
		p50, p95, fragmented float64
	}{
		{w.ByNamespace, "research", 18.25, 2, 0.25, 4.5, 14},
		{w.ByNamespace, "notebooks", 8.25, 2, 2.25, 3, 0},
		{w.ByNamespace, "inference", 2, 1, 1, 1, 1},
		{w.ByTeam, "ml", 24.25, 3, 3, 4.5, 14},
		{w.ByTeam, "data", 2.25, 1, 2.25, 2.25, 0},
		{w.ByTeam, "inference", 2, 1, 1, 1, 1},
	} {
		g := waitGroup(t, c.groups, c.name)
		if !near(g.GPUHours, c.gpuHours) || g.Pods != c.pods || !near(g.P50WaitHours, c.p50) || !near(g.P95WaitHours, c.p95) || !near(g.FragmentedGPUHours, c.fragmented) {
			t.Errorf("%s: %+v; want %g GPU-hours, %d pods, p50 %g, p95 %g, fragmented %g", c.name, g.WaitTotals, c.gpuHours, c.pods, c.p50, c.p95, c.fragmented)
		}
	}
	if len(w.ByNamespace) != 3 || w.ByNamespace[0].Name != "research" {
		t.Errorf("namespaces %+v, want research, notebooks, inference (most GPU-hours first)", w.ByNamespace)
	}
}

// TestWaitingPodRows: one row per pod that waited — the 4-GPU train once,
// with its request of 4 — and the pods that never ran named with what
// became of them: nb-1 deleted while waiting at 3.25 h, mig-1 still
// waiting; quick (bound at once) has no row. Rows are most GPU-hours first:
// train 18, nb-2 6, nb-1 2.25, mig-1 2, early 0.25.
func TestWaitingPodRows(t *testing.T) {
	r, err := analysis.Analyze(hourly.WaitingStory(), hourly.Teams{}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pod, outcome string
		request      float64
		fragmented   float64
	}{
		{"train", analysis.OutcomeScheduled, 4, 14}, {"nb-2", analysis.OutcomeScheduled, 2, 0}, {"nb-1", analysis.OutcomeDeleted, 1, 0},
		{"mig-1", analysis.OutcomeStillWaiting, 2, 1}, {"early", analysis.OutcomeScheduled, 1, 0},
	}
	rows := r.Waiting.PodsWaited
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		p := rows[i]
		if p.Pod != w.pod || p.Outcome != w.outcome || len(p.Requests) != 1 || p.Requests[0].Count != w.request || !near(p.FragmentedGPUHours, w.fragmented) {
			t.Errorf("row %d: %+v; want %s %s ×%g, %g fragmented", i, p, w.pod, w.outcome, w.request, w.fragmented)
		}
		if p.NeverRan() != (w.outcome != analysis.OutcomeScheduled) {
			t.Errorf("%s: never ran %v", p.Pod, p.NeverRan())
		}
	}
	if d := rows[2].Deleted; d == nil || !d.Equal(hourly.At(3.25)) {
		t.Errorf("nb-1 deleted at %v, want %v", d, hourly.At(3.25))
	}
	if rows[1].Team != "ml" || rows[2].Team != "data" || rows[3].Requests[0].Resource != "nvidia.com/mig-1g.10gb" {
		t.Errorf("nb-2 team %q, nb-1 team %q, mig-1 resource %q; want ml, data, nvidia.com/mig-1g.10gb", rows[1].Team, rows[2].Team, rows[3].Requests[0].Resource)
	}
}

// TestWaitingTimeline: the devices waiting on average per 1 h bucket —
// early 0.25 h + train 0.5 h × 4 = 2.25 in bucket 0; train 4 + nb-1 1 = 5 in
// 1 and 2; train 4 + nb-1 0.25 + nb-2 2 = 6.25 in 3; 6 in 4; nb-2 2 in 5;
// none in 6; mig-1 2 in 7 — and of them fragmented: train 2 (half of
// bucket 0), 4, 0 ([2, 3) is not), 4, 4; mig-1 1 (half of bucket 7).
// Held and busy come from the ledger: 2 GPUs held all along, the hog busy
// 1 − 2^b × 0.001 of bucket b.
func TestWaitingTimeline(t *testing.T) {
	r, err := analysis.Analyze(hourly.WaitingStory(), hourly.Teams{}, true)
	if err != nil {
		t.Fatal(err)
	}
	waiting := []float64{2.25, 5, 5, 6.25, 6, 2, 0, 2}
	fragmented := []float64{2, 4, 0, 4, 4, 0, 0, 1}
	tl := r.Waiting.Timeline
	if len(tl) != 8 {
		t.Fatalf("%d points, want 8", len(tl))
	}
	for b, p := range tl {
		busy := 1 + 1 - float64(int(1)<<b)*0.001
		if !near(p.WaitingGPUs, waiting[b]) || !near(p.FragmentedGPUs, fragmented[b]) || !near(p.HeldGPUs, 2) || !near(p.BusyGPUs, busy) {
			t.Errorf("bucket %d: %+v; want waiting %g, fragmented %g, held 2, busy %g", b, p, waiting[b], fragmented[b], busy)
		}
		if !p.Time.Equal(hourly.At(float64(b + 1))) {
			t.Errorf("bucket %d ends %v, want %v", b, p.Time, hourly.At(float64(b+1)))
		}
	}
}

// TestScrapeIntervalBoundary: a pod bound exactly one scrape interval (30 s)
// after its creation waited 0 and is not counted; one bound a second later
// waited 31 s: 1 pod, 31 s × 2 GPUs.
func TestScrapeIntervalBoundary(t *testing.T) {
	for _, c := range []struct {
		wait     time.Duration
		pods     int
		gpuHours float64
	}{{30 * time.Second, 0, 0}, {31 * time.Second, 1, 2 * 31.0 / 3600}} {
		d := hourly.WaitingStory()
		d.Waiting.Pods = []model.PodWait{{Pod: model.PodKey{Namespace: "ns", Pod: "p"}, Requests: []model.Request{{Resource: "nvidia.com/gpu", Count: 2}},
			Created: hourly.At(1), Scheduled: hourly.At(1).Add(c.wait)}}
		r, err := analysis.Analyze(d, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Waiting.Pods != c.pods || !near(r.Waiting.GPUHours, c.gpuHours) {
			t.Errorf("bound after %s: %d pods, %g GPU-hours; want %d, %g", c.wait, r.Waiting.Pods, r.Waiting.GPUHours, c.pods, c.gpuHours)
		}
	}
}

// TestNotMeasured: a source that read no kube-state-metrics pod series
// leaves the waiting figures unmeasured, not zero demand.
func TestNotMeasured(t *testing.T) {
	d := hourly.WaitingStory()
	d.Waiting = nil
	r, err := analysis.Analyze(d, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Waiting.Measured || r.Waiting.Pods != 0 || len(r.Waiting.Timeline) != 0 {
		t.Errorf("waiting %+v, want not measured", r.Waiting)
	}
}

// TestWaitFromCreation: the one-interval exemption measures a pod's whole
// wait from its creation, not the part in the range. Created 1 h before the
// range and bound 10 s into it, a pod of 2 GPUs waited 1 h 0 m 10 s: it is
// counted, with the 10 s in the range — 2 × 10 s = 20/3600 GPU-hours, its
// wait 10/3600 h. Created 10 s before the range and bound 10 s into it, it
// waited 20 s, within the 30 s interval: not counted although its 10 s in
// the range are as long.
func TestWaitFromCreation(t *testing.T) {
	for _, c := range []struct {
		created  time.Duration // before the range's start
		pods     int
		gpuHours float64
	}{{time.Hour, 1, 20.0 / 3600}, {10 * time.Second, 0, 0}} {
		d := hourly.WaitingStory()
		d.Waiting.Pods = []model.PodWait{{Pod: model.PodKey{Namespace: "ns", Pod: "p"}, Requests: []model.Request{{Resource: "nvidia.com/gpu", Count: 2}},
			Created: hourly.At(0).Add(-c.created), Scheduled: hourly.At(0).Add(10 * time.Second), Node: "a"}}
		r, err := analysis.Analyze(d, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.Waiting; w.Pods != c.pods || !near(w.GPUHours, c.gpuHours) || c.pods == 1 && !near(w.P95WaitHours, 10.0/3600) {
			t.Errorf("created %s before the range: %d pods, %g GPU-hours, p95 %g h; want %d, %g, 10 s", c.created, w.Pods, w.GPUHours, w.P95WaitHours, c.pods, c.gpuHours)
		}
	}
}

// TestFreeCapacity: a node's free devices are what it offers less what its
// bound pods request, at least 0, and all it offers when no bound pod's
// series is there. A pod of 3 GPUs waits the 2 h of the range while node y
// offers 2 and node z 1 with nothing bound (z's bound series says 0, y has
// none): 3 free in all, at most 2 on one node — fragmented, 3 × 2 = 6
// GPU-hours. Node x offers 2 with 4 bound (its allocatable fell while its
// pods ran): 0 free, not −2, which would leave 1 in all and the pod merely
// too large. Without y (its bound series missing read as none free) 1 is
// free in all: not fragmented.
func TestFreeCapacity(t *testing.T) {
	gpu := "nvidia.com/gpu"
	node := func(n string) model.NodeResource { return model.NodeResource{Node: n, Resource: gpu} }
	for _, c := range []struct {
		name       string
		capacity   map[model.NodeResource][]model.Level
		fragmented float64
	}{
		{"x over-committed, y without bound pods", map[model.NodeResource][]model.Level{node("x"): hourly.Levels(0, 2), node("y"): hourly.Levels(0, 2), node("z"): hourly.Levels(0, 1)}, 6},
		{"x and z only", map[model.NodeResource][]model.Level{node("x"): hourly.Levels(0, 2), node("z"): hourly.Levels(0, 1)}, 0},
	} {
		d := hourly.Dataset(2)
		for b := range 2 {
			hourly.Add(d, hourly.Device{Key: model.DeviceKey{UUID: "GPU-x"}, Host: "x", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 2},
				model.HolderKey{Namespace: "ns", Pod: "run", Container: "main"}, b, model.StateBusy, 3600)
		}
		d.Waiting = &model.Waiting{Interval: 30 * time.Second, Capacity: c.capacity,
			Bound: map[model.NodeResource][]model.Level{node("x"): hourly.Levels(0, 4), node("z"): hourly.Levels(0, 0)},
			Pods:  []model.PodWait{{Pod: model.PodKey{Namespace: "ns", Pod: "p"}, Requests: []model.Request{{Resource: gpu, Count: 3}}, Created: hourly.At(0)}},
		}
		r, err := analysis.Analyze(d, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.Waiting; !near(w.GPUHours, 6) || !near(w.FragmentedGPUHours, c.fragmented) {
			t.Errorf("%s: %g GPU-hours, %g fragmented; want 6, %g", c.name, w.GPUHours, w.FragmentedGPUHours, c.fragmented)
		}
	}
}

// TestIdleWhileWaitingPerCluster: the idle EUR counts only in the steps in
// which a pod of the same cluster waited. Cluster east idles 1 EUR in step 0
// and 2 in step 1, its pod waits in step 0; west idles 4 and 8, its pod
// waits in step 1. East 1 EUR, west 8, the fleet 9 — not 3 + 12 = 15, as
// every cluster's idle EUR in any step a pod of any cluster waited would be.
func TestIdleWhileWaitingPerCluster(t *testing.T) {
	d := hourly.Dataset(2)
	d.Waiting = &model.Waiting{Interval: 30 * time.Second}
	for _, c := range []struct {
		cluster    string
		idle       [2]float64 // EUR per step: the GPU costs 3,600 EUR/h, so idle seconds are EUR
		waitedFrom float64
	}{{"east", [2]float64{1, 2}, 0}, {"west", [2]float64{4, 8}, 1}} {
		dev := hourly.Device{Key: model.DeviceKey{Cluster: c.cluster, UUID: "GPU-" + c.cluster}, Host: c.cluster + "-node", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EURPerHour: 3600}
		for b, eur := range c.idle {
			holder := model.HolderKey{Namespace: "nb", Pod: "hog", Container: "main"}
			hourly.Add(d, dev, holder, b, model.StateIdle, eur)
			hourly.Add(d, dev, holder, b, model.StateBusy, 3600-eur)
		}
		d.Waiting.Pods = append(d.Waiting.Pods, model.PodWait{Pod: model.PodKey{Cluster: c.cluster, Namespace: "ns", Pod: "p"},
			Requests: []model.Request{{Resource: "nvidia.com/gpu", Count: 1}}, Created: hourly.At(c.waitedFrom), Scheduled: hourly.At(c.waitedFrom + 1), Node: c.cluster + "-node"})
	}
	r, err := analysis.Analyze(d, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Waiting
	idle := map[string]float64{}
	for _, c := range w.ByCluster {
		idle[c.Name] = c.IdleWhileWaitingEUR
	}
	if !near(w.IdleWhileWaitingEUR, 9) || len(idle) != 2 || !near(idle["east"], 1) || !near(idle["west"], 8) {
		t.Errorf("idle while waiting: fleet %g, per cluster %v EUR; want 9, east 1, west 8", w.IdleWhileWaitingEUR, idle)
	}
}
