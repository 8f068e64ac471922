package advice_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// releaseStory is 4 one-hour buckets. Node a offers 4 GPUs, all bound to
// research/busy-0…3, busy throughout (2 EUR/h each). Node b offers 4, 3
// bound: notebooks/idle-0 (2 EUR/h) and idle-1 (3 EUR/h) idle all four
// hours, notebooks/idle-2 (5 EUR/h) idle in hours 0 and 1 and half busy in
// 2 and 3 (2.5 EUR idle each); its fourth GPU is free. Node c offers 2, one
// bound to notebooks/idle-c (2 EUR/h), idle all along, one free. Node d
// offers 1, bound to notebooks/idle-d (2 EUR/h), idle all along. Waiting: research/big (4
// GPUs) 0.5 → 3.5 h, notebooks/small (1) 2 → 2.5 h, research/mid and mid2
// (2 each) 2 → 3 h.
func releaseStory() *model.Dataset {
	d := hourly.Dataset(4)
	dev := func(host string, i int, rate float64) hourly.Device {
		return hourly.Device{Key: model.DeviceKey{UUID: fmt.Sprintf("GPU-%s%d", host, i)}, Host: host, GPU: fmt.Sprint(i), Model: "NVIDIA H100 80GB HBM3", EURPerHour: rate}
	}
	hold := func(dv hourly.Device, ns, pod string, busy func(b int) bool) {
		h := model.HolderKey{Namespace: ns, Pod: pod, Container: "main"}
		for b := range 4 {
			switch {
			case busy(b) && pod == "idle-2":
				hourly.Add(d, dv, h, b, model.StateBusy, 1800)
				hourly.Add(d, dv, h, b, model.StateIdle, 1800)
			case busy(b):
				hourly.Add(d, dv, h, b, model.StateBusy, 3600)
			default:
				hourly.Add(d, dv, h, b, model.StateIdle, 3600)
			}
		}
		d.Alloc[model.HoldingKey{Dev: dv.Key, Holder: h}] = model.Alloc{Resource: "nvidia.com/gpu", Sharing: "exclusive"}
	}
	for i := range 4 {
		hold(dev("a", i, 2), "research", fmt.Sprintf("busy-%d", i), func(int) bool { return true })
	}
	hold(dev("b", 0, 2), "notebooks", "idle-0", func(int) bool { return false })
	hold(dev("b", 1, 3), "notebooks", "idle-1", func(int) bool { return false })
	hold(dev("b", 2, 5), "notebooks", "idle-2", func(b int) bool { return b >= 2 })
	hold(dev("c", 0, 2), "notebooks", "idle-c", func(int) bool { return false })
	hold(dev("d", 0, 2), "notebooks", "idle-d", func(int) bool { return false })
	for b := range 4 {
		hourly.Add(d, dev("b", 3, 2), model.HolderKey{}, b, model.StateUnallocated, 3600)
	}
	gpu := "nvidia.com/gpu"
	pod := func(ns, name string, n, created, scheduled float64) model.PodWait {
		return model.PodWait{Pod: model.PodKey{Namespace: ns, Pod: name}, Requests: []model.Request{{Resource: gpu, Count: n}}, Created: hourly.At(created), Scheduled: hourly.At(scheduled), Node: "b"}
	}
	d.Waiting = &model.Waiting{Interval: 30 * time.Second,
		Capacity: map[model.NodeResource][]model.Level{{Node: "a", Resource: gpu}: hourly.Levels(0, 4), {Node: "b", Resource: gpu}: hourly.Levels(0, 4), {Node: "c", Resource: gpu}: hourly.Levels(0, 2),
			{Node: "d", Resource: gpu}: hourly.Levels(0, 1)},
		Bound: map[model.NodeResource][]model.Level{{Node: "a", Resource: gpu}: hourly.Levels(0, 4), {Node: "b", Resource: gpu}: hourly.Levels(0, 3), {Node: "c", Resource: gpu}: hourly.Levels(0, 1),
			{Node: "d", Resource: gpu}: hourly.Levels(0, 1)},
		Pods: []model.PodWait{pod("notebooks", "small", 1, 2, 2.5), pod("research", "big", 4, 0.5, 3.5), pod("research", "mid", 2, 2, 3),
			pod("research", "mid2", 2, 2, 3)},
	}
	return d
}

// TestReleaseForWaiting names the holdings whose release would have served
// the waiting pods, by hand:
//
//   - big needs 4; node a has none free, b 1, c 1: b and c fall 3 short;
//     in hours 0 and 1 b's three holdings idle the whole hour cover it (c's
//     one cannot) — idle-2 (15 EUR idle), idle-1 (12), idle-0 (8) serve it:
//     4 GPUs × 0.5 h in hour 0 and × 1 h in hour 1, a third each: 2/3 + 4/3
//     = 2 GPU-hours each. From hour 2 idle-2 is partly busy: two idle
//     holdings cannot cover 3;
//   - small (1) fits b's free GPU: no release serves it, although d's idle
//     holding would cover d's shortfall;
//   - mid (2) in hour 2: b and c both fall 1 short, b first (by name, on a
//     tie): idle-1, the most idle EUR of b's two, serves it, 2 GPUs × 1 h =
//     2 GPU-hours; mid2 then: idle-1 served mid in that hour, so idle-0
//     serves mid2.
//
// Their EUR, each holding's idle EUR spread over the hours it idled in:
// idle-1 12 × 3/4 = 9 EUR (4 GPU-hours, big and mid), idle-2 15 × 2/4 = 7.5
// (2 GPU-hours), idle-0 8 × 3/4 = 6 (4 GPU-hours, big and mid2), most EUR
// first; idle-c and idle-d none (d's one GPU falls short of every other
// pod).
func TestReleaseForWaiting(t *testing.T) {
	adv := adviseStory(t, releaseStory(), waitSettings)
	var got []advice.WaitAdvice
	for _, w := range adv.WaitAdvice {
		if w.Kind == advice.WaitRelease {
			got = append(got, w)
		}
	}
	want := []struct {
		target, pods  string
		eur, gpuHours float64
	}{{"notebooks/idle-1", "research/big,research/mid", 9, 4}, {"notebooks/idle-2", "research/big", 7.5, 2}, {"notebooks/idle-0", "research/big,research/mid2", 6, 4}}
	if len(got) != len(want) {
		t.Fatalf("releases %+v, want %d", got, len(want))
	}
	month := model.HoursPerMonth / 4
	for i, w := range want {
		g := got[i]
		if g.Target != w.target || strings.Join(g.Pods, ",") != w.pods || !approx(g.EUR, w.eur) || !approx(g.EURPerMonth, w.eur*month) || !approx(g.GPUHours, w.gpuHours) {
			t.Errorf("release %d: %+v, want %s serving %s, %g EUR, %g GPU-hours", i, g, w.target, w.pods, w.eur, w.gpuHours)
		}
		if len(g.Holdings) != 1 || g.Holdings[0] != w.target+"/main on b" {
			t.Errorf("release %d names %v, want %s/main on b", i, g.Holdings, w.target)
		}
	}
}
