package history

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
)

// waitScenario: research/train (4 GPUs) is created at 1 h and bound at 3 h;
// notebooks/nb (2 GPUs) waits from 2 h and is deleted at 4 h; the node's
// pods are scheduled by volcano.
const waitScenario = `seed: 7
scheduler: volcano
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 5
workloads:
  - {name: train, pattern: training, fb_mib: 60000}
pods:
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train, created: 1h, start: 3h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: train, created: 1h, start: 3h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 2}, workload: train, created: 1h, start: 3h}
  - {namespace: research, pod: train, container: main, resource: nvidia.com/gpu, device: {gpu: 3}, workload: train, created: 1h, start: 3h}
pending:
  - {namespace: notebooks, pod: nb, resource: nvidia.com/gpu, count: 2, created: 2h, deleted: 4h}
`

// scrapesAt keeps the scrapes at the times it is asked for.
type scrapesAt map[time.Time][]*dto.MetricFamily

func (s scrapesAt) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	if _, ok := s[t]; ok {
		s[t] = mfs
	}
	return nil
}

// series returns the samples of family name in mfs whose labels include
// every pair of want, as "label=value,…" of their labels → value.
func series(mfs []*dto.MetricFamily, name string, want ...string) map[string]float64 {
	out := map[string]float64{}
	mf := familyOf(mfs, name)
	for _, m := range mf.GetMetric() {
		text := labelText(m)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(","+text+",", ","+w+",")
		}
		if ok {
			out[text] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestKubeStateOfWaitingPods: both flavours write kube-state-metrics'
// series of the pods as the API server knew them at each scrape — at 2 h 15
// train and nb pending (unschedulable, requests without a node, kube_pod_info
// without one), at 3 h 45 train bound at 3 h on sim-node-0 and nb still
// pending, at 4 h 15 nb gone — each family once per scrape and each series
// once in it.
func TestKubeStateOfWaitingPods(t *testing.T) {
	for _, flavor := range []string{FlavorGputally, FlavorDCGMExporter} {
		sc, err := sim.Parse([]byte(waitScenario), "wait.yaml")
		if err != nil {
			t.Fatal(err)
		}
		at := func(h, m int) time.Time { return start.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
		got := scrapesAt{at(2, 15): nil, at(3, 45): nil, at(4, 15): nil}
		if _, err := Run(context.Background(), Options{Scenario: sc, Start: start, Duration: 5 * time.Hour, SampleInterval: 15 * time.Minute,
			ScrapeInterval: 15 * time.Minute, Flavor: flavor}, got); err != nil {
			t.Fatal(err)
		}
		train, nb := []string{"namespace=research", "pod=train"}, []string{"namespace=notebooks", "pod=nb"}
		for _, c := range []struct {
			at                   time.Time
			name                 string
			match                []string
			want                 float64 // -1: no such series
			labels               string  // of the one series, when not ""
			trainBound, nbExists bool
		}{
			{at(2, 15), "kube_pod_created", train, float64(at(1, 0).Unix()), "", false, true},
			{at(2, 15), "kube_pod_status_unschedulable", train, 1, "", false, true},
			{at(2, 15), "kube_pod_status_scheduled_time", train, -1, "", false, true},
			{at(2, 15), "kube_pod_status_phase", append(train, "phase=Pending"), 1, "", false, true},
			{at(2, 15), "kube_pod_container_resource_requests", train, 4, "container,namespace,pod,resource,uid,unit", false, true},
			{at(2, 15), "kube_pod_container_resource_requests", nb, 2, "container,namespace,pod,resource,uid,unit", false, true},
			{at(2, 15), "kube_pod_info", train, 1, "host_network,namespace,pod,uid", false, true},
			{at(2, 15), "kube_pod_scheduler", append(train, "name=volcano"), 1, "", false, true},
			{at(3, 45), "kube_pod_status_scheduled_time", train, float64(at(3, 0).Unix()), "", true, true},
			{at(3, 45), "kube_pod_status_unschedulable", train, -1, "", true, true},
			{at(3, 45), "kube_pod_status_phase", append(train, "phase=Running"), 1, "", true, true},
			{at(3, 45), "kube_pod_container_resource_requests", append(train, "node=sim-node-0"), 4, "", true, true},
			{at(3, 45), "kube_pod_info", append(train, "node=sim-node-0"), 1, "", true, true},
			{at(3, 45), "kube_pod_status_unschedulable", nb, 1, "", true, true},
			{at(4, 15), "kube_pod_created", nb, -1, "", true, false},
			{at(4, 15), "kube_node_status_allocatable", []string{"node=sim-node-0", "resource=nvidia_com_gpu"}, 5, "", true, false},
		} {
			s := series(got[c.at], c.name, c.match...)
			switch {
			case c.want < 0 && len(s) > 0:
				t.Errorf("%s at %s: %s %v, want none", flavor, c.at.Sub(start), c.name, s)
			case c.want >= 0 && len(s) != 1:
				t.Errorf("%s at %s: %s %v, want one series", flavor, c.at.Sub(start), c.name, s)
			case c.want >= 0:
				for labels, v := range s {
					if v != c.want || c.labels != "" && names(labels) != c.labels {
						t.Errorf("%s at %s: %s{%s} = %g, want %g with labels %s", flavor, c.at.Sub(start), c.name, labels, v, c.want, c.labels)
					}
				}
			}
		}
		for when, mfs := range got {
			seen := map[string]bool{}
			for _, mf := range mfs {
				if seen[mf.GetName()] {
					t.Errorf("%s at %s: family %s twice", flavor, when.Sub(start), mf.GetName())
				}
				seen[mf.GetName()] = true
				keys := map[string]bool{}
				for _, m := range mf.GetMetric() {
					k := labelText(m)
					if keys[k] {
						t.Errorf("%s at %s: %s series %s twice", flavor, when.Sub(start), mf.GetName(), k)
					}
					keys[k] = true
				}
			}
		}
	}
}

// labelText is m's labels as "name=value,…".
func labelText(m *dto.Metric) string {
	var labels []string
	for _, p := range m.GetLabel() {
		labels = append(labels, p.GetName()+"="+p.GetValue())
	}
	return strings.Join(labels, ",")
}

// names are the label names of "name=value,…".
func names(labels string) string {
	var out []string
	for _, l := range strings.Split(labels, ",") {
		out = append(out, l[:strings.Index(l, "=")])
	}
	return strings.Join(out, ",")
}

// TestNoKubeStateWithoutWaiting: the gputally flavour of a scenario whose
// pods do not wait writes no kube-state-metrics series, as before.
func TestNoKubeStateWithoutWaiting(t *testing.T) {
	sink := &lastScrapeSink{names: map[string]bool{}}
	if _, err := Run(context.Background(), Options{Scenario: sim.Default(), Start: start, Duration: time.Hour, ScrapeInterval: time.Minute}, sink); err != nil {
		t.Fatal(err)
	}
	for name := range sink.names {
		if strings.HasPrefix(name, "kube_") {
			t.Errorf("family %s", name)
		}
	}
}

// TestFleetKubeStateOnEveryNode: in gputally's flavour, a fleet with one
// node whose pods wait writes kube-state-metrics' node series for every
// node — the free GPUs of the others are what a waiting pod is measured
// against.
func TestFleetKubeStateOnEveryNode(t *testing.T) {
	waits, err := sim.Parse([]byte(waitScenario), "wait.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other := sim.Default() // no pod of it waits
	other.Node.Hostname, other.Seed = "other", 99
	nodes := map[string]bool{}
	sink := sinkOf(func(mfs []*dto.MetricFamily) {
		for labels := range series(mfs, "kube_node_status_allocatable", "resource=nvidia_com_gpu") {
			for _, l := range strings.Split(labels, ",") {
				if n, ok := strings.CutPrefix(l, "node="); ok {
					nodes[n] = true
				}
			}
		}
	})
	if _, err := RunFleet(context.Background(), Options{Start: start, Duration: 10 * time.Minute, ScrapeInterval: time.Minute}, []*sim.Scenario{waits, other}, sink); err != nil {
		t.Fatal(err)
	}
	if !nodes["sim-node-0"] || !nodes["other"] || len(nodes) != 2 {
		t.Errorf("allocatable of nodes %v, want sim-node-0 and other", nodes)
	}
}

// sinkOf is a Sink that hands each scrape's families to f.
type sinkOf func([]*dto.MetricFamily)

func (f sinkOf) AddScrape(mfs []*dto.MetricFamily, _ time.Time) error { f(mfs); return nil }
