package dcgmexporter

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestDCGMEnergyOnlyWhereMetered: the dcgm-exporter source takes each
// holding's energy from the ledger it prices the grid with. ml/p holds
// GPU-0, an H100 priced by purchase (dcgmTestBook, PUE 2), at 350 W for the
// hour: 3,600 s × 700 W = 2,520,000 J busy. ml/q holds GPU-1, an L4 at
// 0.70 EUR/h flat, at 72 W: its price includes the energy, which is not
// metered — no joules, not 0 J as if measured — while its EUR are the flat
// rate's, 0.70.
func TestDCGMEnergyOnlyWhereMetered(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h100 := withPod(gpuLabels("n1", "Hostname", "0", "GPU-0", "NVIDIA H100 80GB HBM3"), "ml", "p", "main")
	l4 := withPod(gpuLabels("n1", "Hostname", "1", "GPU-1", "NVIDIA L4"), "ml", "q", "main")
	h := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", h100, always(0.5)},
		{"DCGM_FI_DEV_POWER_USAGE", h100, always(350)},
		{"DCGM_FI_DEV_FB_USED", h100, always(30000)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", l4, always(0.5)},
		{"DCGM_FI_DEV_POWER_USAGE", l4, always(72)},
		{"DCGM_FI_DEV_FB_USED", l4, always(3000)},
		ksmSeries("kube_node_status_capacity", always(2), "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"),
	}}
	d := collectHistory(t, h)
	holding := func(uuid, pod string) *model.LedgerEntry {
		e := d.Ledger[model.HoldingKey{Dev: model.DeviceKey{UUID: uuid}, Holder: model.HolderKey{Namespace: "ml", Pod: pod, Container: "main"}}]
		if e == nil {
			t.Fatalf("no holding of ml/%s on %s", pod, uuid)
		}
		return e
	}
	if e := holding("GPU-0", "p"); !e.Metered || e.Joules[model.StateBusy] != 2_520_000 || e.Seconds[model.StateBusy] != 3600 {
		t.Errorf("ml/p on the H100: metered %t, %v J, %v s; want 2,520,000 J busy over 3,600 s", e.Metered, e.Joules, e.Seconds)
	}
	if e := holding("GPU-1", "q"); e.Metered || e.Joules != [model.NumStates]float64{} || math.Abs(e.EUR[model.StateBusy]-0.7) > 1e-9 {
		t.Errorf("ml/q on the flat-rate L4: metered %t, %v J, %v EUR; want not metered, no joules, 0.70 EUR", e.Metered, e.Joules, e.EUR)
	}
}
