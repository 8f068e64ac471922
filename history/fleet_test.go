package history

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
)

// TestWriteFleetMergesNodes runs two 8-GPU nodes for 30 minutes: the stream
// is valid OpenMetrics with every family once, holds both nodes' series, and
// its EUR is the two ledgers' total.
func TestWriteFleetMergesNodes(t *testing.T) {
	a, b := sim.Default(), sim.Default()
	b.Seed++
	b.Node.Hostname = "sim-node-1"
	var buf bytes.Buffer
	res, err := WriteFleet(context.Background(), &buf, Options{Start: start, Duration: 30 * time.Minute}, []*sim.Scenario{a, b})
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, buf.Bytes())
	checkFamiliesOnce(t, got.families)
	hosts := map[string]int{}
	var seconds, written float64
	for _, key := range got.byName["gputally_gpu_seconds_total"] {
		seconds += got.last[key]
	}
	for _, key := range got.byName["DCGM_FI_DEV_POWER_USAGE"] {
		for _, h := range []string{a.Node.Hostname, b.Node.Hostname} {
			if strings.Contains(key, `hostname="`+h+`"`) {
				hosts[h]++
			}
		}
	}
	for _, key := range got.byName["gputally_cost_eur_total"] {
		written += got.last[key]
	}
	ledger := 0.0
	for _, tot := range res.Totals {
		ledger += tot.EUR
	}
	if hosts[a.Node.Hostname] != 8 || hosts[b.Node.Hostname] != 8 {
		t.Errorf("power series per node %v, want 8 each", hosts)
	}
	if want := 16 * 1800.0; math.Abs(seconds-want) > 1e-6*want {
		t.Errorf("GPU-seconds %v, want %v", seconds, want)
	}
	if ledger <= 0 || math.Abs(written-ledger) > 1e-9*ledger {
		t.Errorf("written EUR %v, ledgers' EUR %v", written, ledger)
	}
}

func TestWriteFleetRejectsClashingNodes(t *testing.T) {
	a := sim.Default()
	sameHost := sim.Default()
	sameHost.Seed++
	sameSeed := sim.Default()
	sameSeed.Node.Hostname = "other"
	pendingA, pendingB := sim.Default(), sim.Default()
	pendingB.Seed++
	pendingB.Node.Hostname = "other"
	pendingA.Pending = []sim.PendingPod{{Namespace: "nb", Pod: "nb-1", Resource: "nvidia.com/gpu", Count: 1}}
	pendingB.Pending = pendingA.Pending
	for _, tc := range []struct {
		name  string
		nodes []*sim.Scenario
		want  string
	}{
		{"hostname", []*sim.Scenario{a, sameHost}, "both called"},
		{"seed", []*sim.Scenario{a, sameSeed}, "same seed"},
		{"none", nil, "no nodes"},
		{"pending twice", []*sim.Scenario{pendingA, pendingB}, "nodes 1 and 2 both list pending pod nb/nb-1"},
	} {
		_, err := WriteFleet(context.Background(), &bytes.Buffer{}, Options{Start: start, Duration: time.Minute}, tc.nodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestRunFleetHandsNodesInTurn: RunFleet hands node 1's scrapes, then node
// 2's, each sample labelled with its node's instance; the progress counts the
// fleet's virtual time, two nodes × 2 h.
func TestRunFleetHandsNodesInTurn(t *testing.T) {
	a, b := sim.Default(), sim.Default()
	b.Seed++
	b.Node.Hostname = "sim-node-1"
	var order []string
	var progress []time.Duration
	sink := sinkFunc(func(mfs []*dto.MetricFamily, _ time.Time) error {
		instances := map[string]bool{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				n := 0
				for _, l := range m.GetLabel() {
					if l.GetName() == "instance" {
						instances[l.GetValue()] = true
						n++
					}
				}
				if n != 1 {
					t.Fatalf("%s sample with %d instance labels", mf.GetName(), n)
				}
			}
		}
		if len(instances) != 1 {
			t.Fatalf("one scrape of instances %v, want one", instances)
		}
		for i := range instances {
			if len(order) == 0 || order[len(order)-1] != i {
				order = append(order, i)
			}
		}
		return nil
	})
	_, err := RunFleet(context.Background(), Options{Start: start, Duration: 2 * time.Hour, ScrapeInterval: time.Minute,
		Progress: func(done, total time.Duration) {
			if total != 4*time.Hour {
				t.Errorf("progress total %s, want 4h", total)
			}
			progress = append(progress, done)
		}}, []*sim.Scenario{a, b}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{cmp.Or(a.Node.Hostname, sim.DefaultHostname), "sim-node-1"}; !slices.Equal(order, want) {
		t.Errorf("scrapes came from %v in turn, want %v", order, want)
	}
	if want := []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
}

type sinkFunc func(mfs []*dto.MetricFamily, t time.Time) error

func (f sinkFunc) AddScrape(mfs []*dto.MetricFamily, t time.Time) error { return f(mfs, t) }

// TestRunFleetSeedsAndRestarts: with Options.Seed set, node i runs with seed
// + i, so the two nodes of one scenario have GPUs of their own; each node's
// exporter restart counts in the fleet's Result.
func TestRunFleetSeedsAndRestarts(t *testing.T) {
	node := func(host string) *sim.Scenario {
		sc, err := sim.Parse([]byte(`node: {hostname: `+host+`}
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
events:
  - {at: 20m, exporter: stopped, for: 10m}
`), host+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	res, err := RunFleet(context.Background(), Options{Start: start, Duration: time.Hour, Seed: 7},
		[]*sim.Scenario{node("node-a"), node("node-b")}, sinkFunc(func([]*dto.MetricFamily, time.Time) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]bool{}
	for _, tot := range res.Totals {
		gpus[tot.GPU] = true
	}
	if len(gpus) != 4 || res.Restarts != 2 {
		t.Errorf("%d GPUs, %d restarts; want 4 GPUs (2 a node) and 2 restarts (1 a node)", len(gpus), res.Restarts)
	}
}
