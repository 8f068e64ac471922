package sim

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitBase is a node of five GPUs on which research/train (4 GPUs) is
// created at 1 h and bound at 3 h until 5 h, ci/build runs 30 min of every
// hour on GPU 4, and two pods no node takes: notebooks/nb (2 GPUs, created
// at 2 h, deleted at 4 h) and inference/mig (a MIG 1g.10gb instance, from
// the start to the end). Its pods are scheduled by volcano.
const waitBase = `seed: 7
scheduler: volcano
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 5
workloads:
  - {name: train, pattern: training, fb_mib: 60000}
pods:
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train, created: 1h, start: 3h, end: 5h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: train, created: 1h, start: 3h, end: 5h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 2}, workload: train, created: 1h, start: 3h, end: 5h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 3}, workload: train, created: 1h, start: 3h, end: 5h}
jobs:
  - {namespace: ci, name: build, container: main, resource: nvidia.com/gpu, device: {gpu: 4}, workload: train, every: 1h, run: 30m}
pending:
  - {namespace: notebooks, pod: nb, resource: nvidia.com/gpu, count: 2, created: 2h, deleted: 4h}
  - {namespace: inference, pod: mig, container: server, resource: nvidia.com/mig-1g.10gb, count: 1, created: 0s}
`

// TestPodsAt: what the API server knows of the pods at each time — bound
// pods with their node and the time they were bound, pending ones without —
// one state per pod, a multi-GPU pod's devices summed per container.
func TestPodsAt(t *testing.T) {
	sc, err := Parse([]byte(waitBase), "wait.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	b, err := New(sc, Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	at := func(h float64) time.Time { return start.Add(time.Duration(h * float64(time.Hour))) }
	describe := func(s PodState) string {
		out := fmt.Sprintf("%s/%s node=%q created=%s", s.Namespace, s.Pod, s.Node, s.Created.Sub(start))
		if !s.Scheduled.IsZero() {
			out += " bound=" + s.Scheduled.Sub(start).String()
		}
		for _, r := range s.Requests {
			out += fmt.Sprintf(" %s:%s×%d", r.Container, r.Resource, r.Count)
		}
		return out
	}
	for _, c := range []struct {
		h    float64
		want []string
	}{
		{0.25, []string{
			`ci/build-0 node="sim-node-0" created=0s bound=0s main:nvidia.com/gpu×1`,
			`inference/mig node="" created=0s server:nvidia.com/mig-1g.10gb×1`}},
		{2.25, []string{
			`ci/build-2 node="sim-node-0" created=2h0m0s bound=2h0m0s main:nvidia.com/gpu×1`,
			`inference/mig node="" created=0s server:nvidia.com/mig-1g.10gb×1`,
			`notebooks/nb node="" created=2h0m0s main:nvidia.com/gpu×2`,
			`research/train node="" created=1h0m0s main:nvidia.com/gpu×4`}},
		{3.75, []string{
			`inference/mig node="" created=0s server:nvidia.com/mig-1g.10gb×1`,
			`notebooks/nb node="" created=2h0m0s main:nvidia.com/gpu×2`,
			`research/train node="sim-node-0" created=1h0m0s bound=3h0m0s main:nvidia.com/gpu×4`}},
		{4, []string{
			`ci/build-4 node="sim-node-0" created=4h0m0s bound=4h0m0s main:nvidia.com/gpu×1`,
			`inference/mig node="" created=0s server:nvidia.com/mig-1g.10gb×1`,
			`research/train node="sim-node-0" created=1h0m0s bound=3h0m0s main:nvidia.com/gpu×4`}},
		{5, []string{
			`ci/build-5 node="sim-node-0" created=5h0m0s bound=5h0m0s main:nvidia.com/gpu×1`,
			`inference/mig node="" created=0s server:nvidia.com/mig-1g.10gb×1`}},
	} {
		var got []string
		for _, s := range b.Pods(at(c.h)) {
			got = append(got, describe(s))
			if s.Scheduler != "volcano" {
				t.Errorf("%s: scheduler %q, want volcano", s.Pod, s.Scheduler)
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("at %g h:\n%s\nwant\n%s", c.h, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if !sc.Waits() {
		t.Error("a scenario with pending pods does not wait")
	}
	if Default().Waits() {
		t.Error("the built-in scenario waits")
	}
}

// TestWaitingErrors: each broken line is named with its file, line and
// field.
func TestWaitingErrors(t *testing.T) {
	const train = "workload: train, created: 1h, start: 3h, end: 5h}"
	for _, tt := range []struct {
		name, old, new string
		line           int
		field, msg     string
	}{
		{"created after start", "gpu: 0}, workload: train, created: 1h", "gpu: 0}, workload: train, created: 4h", 9, "pods[0].created", "between 0 and the pod's start (3h0m0s)"},
		{"created apart", "gpu: 1}, " + train, "gpu: 1}, workload: train, created: 2h, start: 3h, end: 5h}", 10, "pods[1].created", "created at 1h0m0s in pods[0]"},
		{"created on one entry only", "gpu: 2}, " + train, "gpu: 2}, workload: train, start: 3h, end: 5h}", 11, "pods[2]", "give each the same created"},
		{"created not a duration", "created: 2h, deleted", "created: 7200, deleted", 16, "pending[0].created", "duration"},
		{"pending resource", "resource: nvidia.com/gpu, count: 2", "resource: amd.com/gpu, count: 2", 16, "pending[0].resource", "not a GPU resource"},
		{"pending count", "count: 2", "count: 0", 16, "pending[0].count", "between 1 and 64"},
		{"deleted before created", "deleted: 4h", "deleted: 2h", 16, "pending[0].deleted", "after created (2h0m0s)"},
		{"pending twice", "namespace: inference, pod: mig", "namespace: notebooks, pod: nb", 17, "pending[1].pod", "pending twice"},
		{"pending pod that runs", "namespace: notebooks, pod: nb", "namespace: research, pod: train", 16, "pending[0].pod", "runs on the node in pods[0]"},
		{"pending namespace", "namespace: notebooks", "namespace: Notebooks", 16, "pending[0].namespace", "not a valid namespace"},
		{"scheduler", "scheduler: volcano", "scheduler: Volcano_1", 2, "scheduler", "not a valid scheduler name"},
		{"unknown pending key", "deleted: 4h}", "deleted: 4h, gpu: 1}", 16, "pending[0].gpu", "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(waitBase, tt.old) {
				t.Fatalf("waitBase lacks %q", tt.old)
			}
			_, err := Parse([]byte(strings.Replace(waitBase, tt.old, tt.new, 1)), "bad.yaml")
			prefix := "bad.yaml:" + strconv.Itoa(tt.line) + ": " + tt.field + ": "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v\nwant prefix %q and %q", err, prefix, tt.msg)
			}
		})
	}
}

// TestPodsInTurn: pod entries may hold a whole GPU one after another — a
// pod that waited is bound to the GPUs another freed — but not at once, nor
// beside a job.
func TestPodsInTurn(t *testing.T) {
	const base = `seed: 3
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
workloads:
  - {name: w, pattern: idle, fb_mib: 1000}
pods:
  - {namespace: nb, pod: old, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w, end: 8h}
  - {namespace: ml, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w, created: 2h, start: 8h}
`
	sc, err := Parse([]byte(base), "turn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	b, err := New(sc, Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h    float64
		want string
	}{{7, "ml/train: node=\"\"; nb/old: node=\"sim-node-0\""}, {9, "ml/train: node=\"sim-node-0\""}} {
		var got []string
		for _, s := range b.Pods(start.Add(time.Duration(c.h * float64(time.Hour)))) {
			got = append(got, fmt.Sprintf("%s/%s: node=%q", s.Namespace, s.Pod, s.Node))
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("at %g h: %s, want %s", c.h, strings.Join(got, "; "), c.want)
		}
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"overlapping", "end: 8h}", "end: 9h}", "pods[1].device: GPU 0 is already held by pods[0]"},
		{"beside a job", "pods:\n  - {namespace: nb, pod: old, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w, end: 8h}",
			"jobs:\n  - {namespace: ci, name: b, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: w, every: 1h, run: 10m}\npods:", "jobs[0].device: GPU 0 is already held by pods[0]"},
	} {
		_, err := Parse([]byte(strings.Replace(base, tc.old, tc.new, 1)), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
