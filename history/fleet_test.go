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

	"github.com/gpuledger/gpuledger/collector/sim"
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
	for _, key := range got.byName["gpuledger_gpu_seconds_total"] {
		seconds += got.last[key]
	}
	for _, key := range got.byName["DCGM_FI_DEV_POWER_USAGE"] {
		for _, h := range []string{a.Node.Hostname, b.Node.Hostname} {
			if strings.Contains(key, `Hostname="`+h+`"`) {
				hosts[h]++
			}
		}
	}
	for _, key := range got.byName["gpuledger_cost_eur_total"] {
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
	for _, tc := range []struct {
		name  string
		nodes []*sim.Scenario
		want  string
	}{
		{"hostname", []*sim.Scenario{a, sameHost}, "both called"},
		{"seed", []*sim.Scenario{a, sameSeed}, "same seed"},
		{"none", nil, "no nodes"},
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
