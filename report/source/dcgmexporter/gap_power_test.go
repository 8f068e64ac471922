package dcgmexporter

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestDCGMGapPricedAtPowerLastRead: a gap is priced at the power the GPU was
// last read at — not at the next sample's, nor at none (0 W), nor at the
// first it read. ml/p holds GPU-0 (H100, dcgmTestBook: 1.25 EUR/h + 1 EUR/h
// per kW) busy (GR 0.5) over one hour of 30 s points; its power reads 300 W
// at points 1–20, 500 W at 21–38, nothing at 39–40 (the other fields are
// there), and 400 W from 51; points 41–50 have no sample at all: a gap. By
// hand:
//
//	busy  1–20  600 s × 1.55 EUR/h   930 EUR·s/h
//	     21–38  540 s × 1.75         945
//	     39–40   60 s × 1.75         105   (the ledger keeps 500 W)
//	     51–120 2100 s × 1.65       3465
//	     3,300 s, 5,445 / 3600 = 1.5125 EUR
//	unknown 41–50 300 s × 1.75 (500 W, last read) = 525 / 3600 = 0.145833 EUR
//
// At the next sample's 400 W the gap would cost 0.1375 EUR, at 0 W 0.104167,
// at the first power read (300 W) 0.129167. The energy follows the same
// power, × PUE 2 at the facility: busy 600 × 600 W + 540 × 1,000 + 60 ×
// 1,000 + 2,100 × 800 = 2,640,000 J; unknown 300 × 1,000 = 300,000 J (the
// 1 EUR per kW the EUR price: 0.5 EUR/kWh × 2).
func TestDCGMGapPricedAtPowerLastRead(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	inGap := func(j int) bool { return j >= 41 && j <= 50 }
	held := func(v float64) func(int) float64 {
		return func(j int) float64 {
			if inGap(j) {
				return math.NaN()
			}
			return v
		}
	}
	power := func(j int) float64 {
		switch {
		case j <= 20:
			return 300
		case j <= 38:
			return 500
		case j <= 50:
			return math.NaN() // not read at 39–40; the gap at 41–50
		}
		return 400
	}
	g := withPod(gpuLabels("n1", "Hostname", "0", "GPU-0", "NVIDIA H100 80GB HBM3"), "ml", "p", "main")
	h := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", g, held(0.5)},
		{"DCGM_FI_DEV_POWER_USAGE", g, power},
		{"DCGM_FI_DEV_FB_USED", g, held(30000)},
		ksmSeries("kube_node_status_capacity", always(1), "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"),
	}}
	d := collectHistory(t, h)
	checkEntries(t, d, []want{
		{"GPU-0", "", "ml", "p", model.StateBusy, 3300, 5445.0 / 3600, model.Sampled},
		{"GPU-0", "", "ml", "p", model.StateUnknown, 300, 525.0 / 3600, model.Sampled},
	})
	e := d.Ledger[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "ml", Pod: "p", Container: "main"}}]
	if e == nil || !e.Metered || math.Abs(e.Joules[model.StateBusy]-2_640_000) > 1e-6 || math.Abs(e.Joules[model.StateUnknown]-300_000) > 1e-6 {
		t.Errorf("ml/p's energy: %+v", e)
	}
}
