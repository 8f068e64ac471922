package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gputally/gputally/collector/collectortest"
	"github.com/gputally/gputally/cost"
)

// TestEnergyAbsentForFlatRates: gputally_energy_joules_total is there for a
// GPU whose price meters energy (testdata/attributed_with_ledger.golden.prom:
// GPU-aaaa at 412.5 W × PUE 1.4 × 3600 s = 2,079,000 J busy) and absent —
// not 0 — for GPUs priced by a flat hourly_eur, whose price includes energy
// gputally does not meter, although their power is read.
func TestEnergyAbsentForFlatRates(t *testing.T) {
	flat, err := cost.Parse([]byte("models: [{match: H100, hourly_eur: 3}]\n"), "flat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		book   *cost.Book
		series int
	}{
		{"purchase-priced", cost.Default(), 12}, // both GPUs: every series of the ledger
		{"flat rate", flat, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSampler(&fakeBackend{power: 412.5}, SamplerOptions{Interval: time.Hour, Now: fixedClock(t0),
				Holders: fakeHolders{podsOnNode}, Ledger: cost.NewLedger(staticBook{tc.book})})
			_ = s.Tick(context.Background(), t0.Add(-time.Hour))
			_ = s.Tick(context.Background(), t0)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewCollector(s, Node{Hostname: "node-a"}, fixedClock(t0)))
			n, err := testutil.GatherAndCount(reg, "gputally_energy_joules_total")
			if err != nil {
				t.Fatal(err)
			}
			costs, err := testutil.GatherAndCount(reg, "gputally_cost_eur_total")
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.series || costs != 12 {
				t.Errorf("%d energy series and %d cost series, want %d and 12", n, costs, tc.series)
			}
			if tc.series == 0 {
				return
			}
			text, err := collectortest.Text(reg)
			if err != nil {
				t.Fatal(err)
			}
			want := `gputally_energy_joules_total{UUID="GPU-aaaa",container="trainer",device="nvidia0",gpu="0",hostname="node-a",modelName="NVIDIA H100 80GB HBM3",namespace="ml",pci_bus_id="00000000:07:00.0",pod="train-0",state="busy"} 2.079e+06`
			if !strings.Contains(string(text), want+"\n") {
				t.Errorf("no series\n%s\nin\n%s", want, text)
			}
		})
	}
}
