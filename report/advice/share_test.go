package advice_test

import (
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// TestAllocationShareFreesNothing: two nodes sat wholly unallocated for the
// range and are drained; the one whose GPU's figures are an allocation share
// (a time-sliced GPU's free replicas, from the dcgm-exporter source) frees
// nothing, the sampled one frees its GPU's 10 EUR over the day.
func TestAllocationShareFreesNothing(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	d := model.NewDataset(model.Range{Start: start, End: start.Add(24 * time.Hour), Step: 24 * time.Hour, Resolution: 5 * time.Minute})
	d.Ledger = map[model.HoldingKey]*model.LedgerEntry{}
	for _, g := range []struct {
		uuid, node string
		kind       model.Kind
	}{{"GPU-shared", "ts-node", model.AllocationShare}, {"GPU-whole", "free-node", model.Sampled}} {
		e := &model.LedgerEntry{Model: "NVIDIA H100 80GB HBM3", Host: g.node, GPU: "0", Last: 0, Kind: g.kind}
		e.Seconds[model.StateUnallocated], e.EUR[model.StateUnallocated] = 86400, 10
		d.Ledger[model.HoldingKey{Dev: model.DeviceKey{UUID: g.uuid}}] = e
		d.GPUs[model.GPUKey{UUID: g.uuid}] = &model.GPUSeen{Host: g.node, GPU: "0", Seen: []float64{86400}, FirstLost: -1}
		d.MIGMode[model.GPUKey{UUID: g.uuid}] = "disabled"
	}
	d.Present[0] = true
	a, err := analysis.Analyze(d, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	adv := advice.Advise(a, d, advice.Settings{Headroom: 1.2, ReleaseBelow: 0.05, LowDutyBelow: 0.3, DrainAbove: 0.95})
	freed := map[string]float64{}
	for _, r := range adv.Recommendations {
		if r.Kind == "drain" {
			freed[r.Target] = r.FreedEURPerMonth
		}
	}
	month := model.HoursPerMonth / 24
	if len(freed) != 2 || freed["ts-node"] != 0 || freed["free-node"] != 10*month {
		t.Errorf("drains free %v EUR/month, want ts-node 0 (allocation share) and free-node %.2f", freed, 10*month)
	}
	if adv.FreedEURPerMonth != 10*month {
		t.Errorf("headline %.2f EUR/month, want %.2f: only the sampled GPU", adv.FreedEURPerMonth, 10*month)
	}
}
