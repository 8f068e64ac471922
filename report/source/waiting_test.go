package source_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// waitStart is when the test's kube-state-metrics history starts.
var waitStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// at is waitStart + m minutes.
func at(m float64) time.Time { return waitStart.Add(time.Duration(m * float64(time.Minute))) }

// ksmHistory is two hours of kube-state-metrics scraped every 30 s:
//
//   - nodes n1 (4 GPUs) and n2 (2 GPUs; its series missing 60 → 90 min);
//   - research/b1 bound to n1 with 2 GPUs, Running; research/done bound to
//     n2 with 2, Succeeded (its requests no longer count);
//   - research/w (2 GPUs) created at 20 min, unbound until 60 min, then
//     bound to n1 (kube_pod_status_scheduled_time 60 min);
//   - inference/m (a MIG 1g.10gb+me instance) created at 90 min, unbound,
//     deleted at 100 min;
//   - research/pair, two containers of 1 GPU each, created at 110 min and
//     unbound to the end; research/pull bound to n2 with 1 GPU all along,
//     still Pending (pulling its image): its request counts;
//   - kube_pod_scheduler: w, m and pair volcano, b1 and pull
//     default-scheduler.
func ksmHistory(t *testing.T) *engine.Store {
	t.Helper()
	b := engine.NewStoreBuilder()
	add := func(from, to float64, v float64, kv ...string) {
		lset := labels.FromStrings(append(kv, "job", "kube-state-metrics", "instance", "10.0.0.9:8080")...)
		for m := from; m < to; m += 0.5 {
			if err := b.Append(lset, at(m).UnixMilli(), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	alloc := func(node string, n float64, from, to float64) {
		add(from, to, n, "__name__", "kube_node_status_allocatable", "node", node, "resource", "nvidia_com_gpu", "unit", "integer")
	}
	alloc("n1", 4, 0, 121)
	alloc("n2", 2, 0, 60)
	alloc("n2", 2, 90, 121)
	req := func(ns, pod, uid, node, res string, n, from, to float64) {
		kv := []string{"__name__", "kube_pod_container_resource_requests", "namespace", ns, "pod", pod, "uid", uid, "container", "main", "resource", res, "unit", "integer"}
		if node != "" {
			kv = append(kv, "node", node)
		}
		add(from, to, n, kv...)
	}
	pod := func(name string, v float64, from, to float64, ns, p, uid string, kv ...string) {
		add(from, to, v, append([]string{"__name__", name, "namespace", ns, "pod", p, "uid", uid}, kv...)...)
	}
	req("research", "b1", "u-b1", "n1", "nvidia_com_gpu", 2, 0, 121)
	pod("kube_pod_status_phase", 1, 0, 121, "research", "b1", "u-b1", "phase", "Running")
	pod("kube_pod_scheduler", 1, 0, 121, "research", "b1", "u-b1", "name", "default-scheduler")
	req("research", "done", "u-d", "n2", "nvidia_com_gpu", 2, 0, 121)
	pod("kube_pod_status_phase", 0, 0, 121, "research", "done", "u-d", "phase", "Running")
	pod("kube_pod_status_phase", 1, 0, 121, "research", "done", "u-d", "phase", "Succeeded")
	req("research", "w", "u-w", "", "nvidia_com_gpu", 2, 20, 60)
	req("research", "w", "u-w", "n1", "nvidia_com_gpu", 2, 60, 121)
	pod("kube_pod_created", float64(at(20).Unix()), 20, 121, "research", "w", "u-w")
	pod("kube_pod_status_scheduled_time", float64(at(60).Unix()), 60, 121, "research", "w", "u-w")
	pod("kube_pod_status_phase", 1, 20, 60, "research", "w", "u-w", "phase", "Pending")
	pod("kube_pod_status_phase", 1, 60, 121, "research", "w", "u-w", "phase", "Running")
	pod("kube_pod_scheduler", 1, 20, 121, "research", "w", "u-w", "name", "volcano")
	req("inference", "m", "u-m", "", "nvidia_com_mig_1g_10gb_me", 1, 90, 100)
	pod("kube_pod_created", float64(at(90).Unix()), 90, 100, "inference", "m", "u-m")
	pod("kube_pod_status_phase", 1, 90, 100, "inference", "m", "u-m", "phase", "Pending")
	pod("kube_pod_scheduler", 1, 90, 100, "inference", "m", "u-m", "name", "volcano")
	for _, c := range []string{"a", "b"} {
		add(110, 121, 1, "__name__", "kube_pod_container_resource_requests", "namespace", "research", "pod", "pair", "uid", "u-pair", "container", c,
			"resource", "nvidia_com_gpu", "unit", "integer")
	}
	pod("kube_pod_created", float64(at(110).Unix()), 110, 121, "research", "pair", "u-pair")
	pod("kube_pod_status_phase", 1, 110, 121, "research", "pair", "u-pair", "phase", "Pending")
	pod("kube_pod_scheduler", 1, 110, 121, "research", "pair", "u-pair", "name", "volcano")
	req("research", "pull", "u-pull", "n2", "nvidia_com_gpu", 1, 0, 121)
	pod("kube_pod_status_phase", 1, 0, 121, "research", "pull", "u-pull", "phase", "Pending")
	pod("kube_pod_scheduler", 1, 0, 121, "research", "pull", "u-pull", "name", "default-scheduler")
	return b.Store()
}

// TestReadWaiting reads ksmHistory over (0, 120 min] at a 5 min resolution.
// By hand:
//
//   - w: requests nvidia.com/gpu ×2, created 20 min, bound to n1 at 60 min;
//     m: nvidia.com/mig-1g.10gb+me ×1, created 90 min, deleted at 100 min —
//     the end of the last 5 min step it was seen in (its last scrape,
//     99.5 min);
//   - pair: nvidia.com/gpu 1 + 1 = 2 (its containers summed), created
//     110 min, neither bound nor deleted: seen unbound at the last point;
//   - n1 offers 4 from the first point (5 min); n2 2, not known from 65 min
//     (its series has no sample in (60, 65]) until 90 min; bound to n1 2
//     (b1) from 5 min and 4 (b1 and w) from 60 min, whose point holds w's
//     first bound sample; to n2 1 (pull, Pending) from 5 min — done is
//     Succeeded;
//   - the scrape interval: 120 samples of a node's series in the last hour
//     → 30 s; schedulers: volcano 3 (w, m, pair), default-scheduler 2 (b1,
//     pull).
func TestReadWaiting(t *testing.T) {
	d := model.NewDataset(model.Range{Start: waitStart, End: at(120), Step: time.Hour, Resolution: 5 * time.Minute})
	run := engine.NewRunner(engine.NewEmbeddedQuerier(ksmHistory(t), time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil))), engine.Limits{MaxPoints: 1000}, nil)
	if err := source.ReadWaiting(context.Background(), run, source.NewIdentity(""), engine.Windows{}, d); err != nil {
		t.Fatal(err)
	}
	w := d.Waiting
	if w == nil {
		t.Fatal("no waiting data")
	}
	if len(w.Pods) != 3 {
		t.Fatalf("pods %+v, want m, pair and w", w.Pods)
	}
	m, pair, pw := w.Pods[0], w.Pods[1], w.Pods[2]
	if m.Pod.Pod != "m" || len(m.Requests) != 1 || m.Requests[0] != (model.Request{Resource: "nvidia.com/mig-1g.10gb+me", Count: 1}) ||
		!m.Created.Equal(at(90)) || !m.Scheduled.IsZero() || !m.Deleted.Equal(at(100)) {
		t.Errorf("m: %+v", m)
	}
	if pair.Pod.Pod != "pair" || len(pair.Requests) != 1 || pair.Requests[0] != (model.Request{Resource: "nvidia.com/gpu", Count: 2}) ||
		!pair.Created.Equal(at(110)) || !pair.Scheduled.IsZero() || !pair.Deleted.IsZero() {
		t.Errorf("pair: %+v", pair)
	}
	if pw.Pod.Pod != "w" || len(pw.Requests) != 1 || pw.Requests[0] != (model.Request{Resource: "nvidia.com/gpu", Count: 2}) ||
		!pw.Created.Equal(at(20)) || !pw.Scheduled.Equal(at(60)) || !pw.Deleted.IsZero() || pw.Node != "n1" {
		t.Errorf("w: %+v", pw)
	}
	gpu := func(n string) model.NodeResource { return model.NodeResource{Node: n, Resource: "nvidia.com/gpu"} }
	for _, c := range []struct {
		name string
		got  []model.Level
		want []model.Level
	}{
		{"n1 capacity", w.Capacity[gpu("n1")], []model.Level{{From: at(5), Value: 4}}},
		{"n2 capacity", w.Capacity[gpu("n2")], []model.Level{{From: at(5), Value: 2}, {From: at(65), Value: math.NaN()}, {From: at(90), Value: 2}}},
		{"n1 bound", w.Bound[gpu("n1")], []model.Level{{From: at(5), Value: 2}, {From: at(60), Value: 4}}},
		{"n2 bound", w.Bound[gpu("n2")], []model.Level{{From: at(5), Value: 1}}},
	} {
		if !sameLevels(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if w.Interval != 30*time.Second || !maps.Equal(w.Schedulers[""], map[string]int{"volcano": 3, "default-scheduler": 2}) {
		t.Errorf("interval %s, schedulers %v", w.Interval, w.Schedulers)
	}
}

func sameLevels(a, b []model.Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].From.Equal(b[i].From) || a[i].Value != b[i].Value && !(math.IsNaN(a[i].Value) && math.IsNaN(b[i].Value)) {
			return false
		}
	}
	return true
}

// TestReadWaitingWithoutKubeStateMetrics: no kube-state-metrics series, no
// waiting data — not measured, rather than no demand.
func TestReadWaitingWithoutKubeStateMetrics(t *testing.T) {
	d := model.NewDataset(model.Range{Start: waitStart, End: at(120), Step: time.Hour, Resolution: 5 * time.Minute})
	b := engine.NewStoreBuilder()
	if err := b.Append(labels.FromStrings("__name__", "gputally_up"), at(1).UnixMilli(), 1); err != nil {
		t.Fatal(err)
	}
	run := engine.NewRunner(engine.NewEmbeddedQuerier(b.Store(), time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil))), engine.Limits{MaxPoints: 1000}, nil)
	if err := source.ReadWaiting(context.Background(), run, source.NewIdentity(""), engine.Windows{}, d); err != nil {
		t.Fatal(err)
	}
	if d.Waiting != nil {
		t.Errorf("waiting %+v, want none", d.Waiting)
	}
}
