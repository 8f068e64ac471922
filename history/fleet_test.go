package history

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

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
	seen := map[string]bool{}
	for _, f := range got.families {
		if seen[f] {
			t.Errorf("family %s appears twice", f)
		}
		seen[f] = true
	}
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
