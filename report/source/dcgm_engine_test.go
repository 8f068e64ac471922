package source

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// The dcgm-exporter source's rules held to hand-computed EUR on histories in
// the label sets dcgm-exporter and kube-state-metrics write, evaluated by
// Prometheus' engine (dcgm_test.go has the fixtures: dcgmHistory, the book
// dcgmTestBook — an H100 costs 1.25 EUR/h + 1 EUR/h per kW — and checkEntries).

// holderRun is a run of grid points from…to (inclusive) in which a device's
// series carry one container's labels; ns "" for none.
type holderRun struct {
	from, to           int
	ns, pod, container string
}

// deviceSeries returns the series of a device labelled base: per field,
// its value at each grid point of runs, under the labels of the run the
// point is in; no sample outside them.
func deviceSeries(base map[string]string, runs []holderRun, fields map[string]func(j int) float64) []histSeries {
	var out []histSeries
	for _, r := range runs {
		l := base
		if r.ns != "" {
			l = withPod(base, r.ns, r.pod, r.container)
		}
		for name, v := range fields {
			out = append(out, histSeries{name, l, func(j int) float64 {
				if j < r.from || j > r.to {
					return math.NaN()
				}
				return v(j)
			}})
		}
	}
	return out
}

// ksmSeries is one kube-state-metrics series, with the scrape target's labels.
func ksmSeries(metric string, v func(int) float64, kv ...string) histSeries {
	l := map[string]string{"instance": "10.0.0.9:8080", "job": "kube-state-metrics"}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return histSeries{metric, l, v}
}

// TestDCGMExporterHolderBackAfterRetention: the StatefulSet pod ml/train-0
// holds GPU-0 (H100, 300 W: 1.55 EUR/h) busy at grid points 1–20, is gone
// (the GPU unlabelled and idle: unallocated) at points 21–149, and is back
// under the same name at points 150–240, busy again. The source's ledger
// drops a series missing for a bucket and four grid steps (3,720 s): the
// holder's, last seen at 600 s, goes at point 144 (4,320 s); it was still
// there at the end of the first bucket (3,600 s) with 600 s, and comes back
// before the end of the second with 2,730 s. By hand:
//
//	busy        (20 + 91) × 30 = 3,330 s   3,330 × 1.55 / 3600 = 1.43375 EUR
//	            (bucket 1: 600 s; bucket 2: 91 × 30 = 2,730 s)
//	unallocated 129 × 30       = 3,870 s   3,870 × 1.55 / 3600 = 1.66625 EUR
//
// Reading the second bucket as the growth since the first bucket's 600 s
// lost those 600 s (0.258 EUR): 2,730 s busy and 1.17542 EUR.
func TestDCGMExporterHolderBackAfterRetention(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h100 := "NVIDIA H100 80GB HBM3"
	runs := []holderRun{{1, 20, "ml", "train-0", "main"}, {21, 149, "", "", ""}, {150, 240, "ml", "train-0", "main"}}
	gr := func(j int) float64 {
		if j <= 20 || j >= 150 {
			return 0.8
		}
		return 0
	}
	h := &dcgmHistory{start: start, grid: 30 * time.Second}
	h.series = deviceSeries(gpuLabels("n1", "Hostname", "0", "GPU-0", h100), runs, map[string]func(int) float64{
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": gr, "DCGM_FI_DEV_POWER_USAGE": always(300), "DCGM_FI_DEV_FB_USED": always(1000)})
	h.series = append(h.series, ksmSeries("kube_node_status_capacity", always(1), "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"))
	d := collectHistoryWith(t, h, 2*time.Hour, DCGMExporterOptions{})
	checkEntries(t, d, []want{
		{"GPU-0", "", "ml", "train-0", model.StateBusy, 3330, 1.43375, model.Sampled},
		{"GPU-0", "", "", "", model.StateUnallocated, 3870, 1.66625, model.Sampled},
	})
	e := d.Ledger[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "ml", Pod: "train-0", Container: "main"}}]
	if e == nil || len(e.BusyPerBucket) != 2 || e.BusyPerBucket[0] != 600 || e.BusyPerBucket[1] != 2730 {
		t.Errorf("ml/train-0 busy per bucket %v, want [600 2730]", e)
	}
}
