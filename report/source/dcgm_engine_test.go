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

// timeSlicedNode is node n1 of the tests below: GPU-E exclusive, held by
// a/p0 (GR 0.5, 300 W: 1.55 EUR/h, busy), and GPU-S time-sliced ×4 (no pod
// labelled on it, the most framebuffer of the node's unlabelled GPUs; GR 0.6,
// 400 W: 1.65 EUR/h, its holders busy). kube-state-metrics: the node offers
// 1 nvidia_com_gpu (GPU-E) and 4 nvidia_com_gpu_shared.
func timeSlicedNode(extra ...string) []histSeries {
	h100 := "NVIDIA H100 80GB HBM3"
	out := deviceSeries(gpuLabels("n1", "hostname", "0", "GPU-E", h100, extra...), []holderRun{{1, 240, "a", "p0", "main"}}, map[string]func(int) float64{
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(0.5), "DCGM_FI_DEV_POWER_USAGE": always(300), "DCGM_FI_DEV_FB_USED": always(30000)})
	out = append(out, deviceSeries(gpuLabels("n1", "hostname", "1", "GPU-S", h100, extra...), []holderRun{{1, 240, "", "", ""}}, map[string]func(int) float64{
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(0.6), "DCGM_FI_DEV_POWER_USAGE": always(400), "DCGM_FI_DEV_FB_USED": always(20000)})...)
	capacity := func(resource string, v float64) histSeries {
		return ksmSeries("kube_node_status_capacity", always(v), append([]string{"node", "n1", "resource", resource, "unit", "integer"}, extra...)...)
	}
	return append(out, capacity("nvidia_com_gpu", 1), capacity("nvidia_com_gpu_shared", 4), capacity("pods", 110))
}

// sharedPod is the kube-state-metrics series of pod ns/pod requesting
// replicas of nvidia_com_gpu_shared on n1: its request, and its phase
// (Running while running(j), else Succeeded) — kube-state-metrics keeps a
// completed pod's request series until the pod is deleted.
func sharedPod(ns, pod string, replicas float64, running func(j int) bool, extra ...string) []histSeries {
	phase := func(want bool) func(int) float64 {
		return func(j int) float64 {
			if running(j) == want {
				return 1
			}
			return 0
		}
	}
	kv := append([]string{"namespace", ns, "pod", pod, "uid", "uid-" + pod}, extra...)
	return []histSeries{
		ksmSeries("kube_pod_container_resource_requests", always(replicas), append([]string{"container", "main", "node", "n1", "resource", "nvidia_com_gpu_shared", "unit", "integer"}, kv...)...),
		ksmSeries("kube_pod_status_phase", phase(true), append([]string{"phase", "Running"}, kv...)...),
		ksmSeries("kube_pod_status_phase", phase(false), append([]string{"phase", "Succeeded"}, kv...)...),
	}
}

func allHour(int) bool { return true }

// TestDCGMExporterHACopies: an HA pair of Prometheus servers without
// deduplication holds every series twice, differing in prometheus_replica.
// The source reads each once (DefaultDedupeLabels). GPU-S (timeSlicedNode)
// is split by requested replicas: b/s0 1 of 4, b/s1 2 of 4, 1 free. By hand,
// over the hour at 1.65 EUR/h:
//
//	b/s0  900 s  0.4125 EUR    b/s1  1,800 s  0.825 EUR    free  900 s  0.4125 EUR
//	a/p0 on GPU-E  3,600 s  1.55 EUR busy
//
// Each request counted twice, the pods' shares (0.5 + 0.5 + 1 + 1) were
// scaled down to the whole GPU: the free replica's 0.4125 EUR on the pods,
// +33 %.
func TestDCGMExporterHACopies(t *testing.T) {
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	one := append(timeSlicedNode(), sharedPod("b", "s0", 1, allHour)...)
	one = append(one, sharedPod("b", "s1", 2, allHour)...)
	for _, replica := range []string{"a", "b"} {
		for _, s := range one {
			l := map[string]string{"prometheus_replica": replica}
			for k, v := range s.labels {
				l[k] = v
			}
			h.series = append(h.series, histSeries{s.metric, l, s.value})
		}
	}
	d := collectHistoryWith(t, h, time.Hour, DCGMExporterOptions{DedupeLabels: DefaultDedupeLabels})
	share := model.AllocationShare
	checkEntries(t, d, []want{
		{"GPU-E", "", "a", "p0", model.StateBusy, 3600, 1.55, model.Sampled},
		{"GPU-S", "", "b", "s0", model.StateBusy, 900, 0.4125, share},
		{"GPU-S", "", "b", "s1", model.StateBusy, 1800, 0.825, share},
		{"GPU-S", "", "", "", model.StateUnallocated, 900, 0.4125, share},
	})
}

// TestDCGMExporterEndedPodHoldsNoReplicas: b/done (2 replicas of GPU-S,
// timeSlicedNode) completes after grid point 60; kube-state-metrics keeps its
// request series, with phase Succeeded. It holds replicas only while it
// runs. b/s0 (1 replica) runs all hour. By hand, at 1.65 EUR/h:
//
//	b/s0    120 points × 30 s × 1/4 =   900 s   0.4125 EUR
//	b/done   60 points × 30 s × 2/4 =   900 s   0.4125 EUR
//	free     60 × 30 × 1/4 + 60 × 30 × 3/4 = 1,800 s   0.825 EUR
//
// Counting its lingering request, b/done held 1,800 s (0.825 EUR) and the
// GPU had 450 s free.
func TestDCGMExporterEndedPodHoldsNoReplicas(t *testing.T) {
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	h.series = append(timeSlicedNode(), sharedPod("b", "s0", 1, allHour)...)
	h.series = append(h.series, sharedPod("b", "done", 2, func(j int) bool { return j <= 60 })...)
	d := collectHistory(t, h)
	share := model.AllocationShare
	checkEntries(t, d, []want{
		{"GPU-E", "", "a", "p0", model.StateBusy, 3600, 1.55, model.Sampled},
		{"GPU-S", "", "b", "s0", model.StateBusy, 900, 0.4125, share},
		{"GPU-S", "", "b", "done", model.StateBusy, 900, 0.4125, share},
		{"GPU-S", "", "", "", model.StateUnallocated, 1800, 0.825, share},
	})
}

// TestDCGMExporterUnofferedMIG: GPU-M (H100, 350 W: 1.60 EUR/h) in MIG mode,
// 3g.40gb + 2g.20gb + 2 × 1g.10gb, priced by memory slices (4, 2, 1, 1 of 8:
// 0.80, 0.40, 0.20, 0.20 EUR/h). The node's device plugin offers one
// nvidia_com_mig_3g_40gb and one nvidia_com_mig_1g_10gb, no 2g.20gb. m/a holds
// 1g.10gb GI 9 (GR 0.5: busy), which uses the one 1g.10gb the device plugin
// offers: the free GI 10 is handed out by something else, as is the free
// 2g.20gb — unknown, not unallocated; the free 3g.40gb is offered:
// unallocated. By hand, over the hour:
//
//	GI 1  3g.40gb  unallocated  3,600 s × 4/8 = 1,800 s  0.80 EUR
//	GI 5  2g.20gb  unknown      3,600 s × 2/8 =   900 s  0.40 EUR
//	GI 9  1g.10gb  m/a busy     3,600 s × 1/8 =   450 s  0.20 EUR
//	GI 10 1g.10gb  unknown                        450 s  0.20 EUR
func TestDCGMExporterUnofferedMIG(t *testing.T) {
	h100 := "NVIDIA H100 80GB HBM3"
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	h.series = deviceSeries(gpuLabels("n2", "hostname", "0", "GPU-M", h100), []holderRun{{1, 120, "", "", ""}},
		map[string]func(int) float64{"DCGM_FI_DEV_POWER_USAGE": always(350)})
	for _, in := range []struct {
		gi, profile string
		holder      holderRun
	}{
		{"1", "3g.40gb", holderRun{1, 120, "", "", ""}},
		{"5", "2g.20gb", holderRun{1, 120, "", "", ""}},
		{"9", "1g.10gb", holderRun{1, 120, "m", "a", "main"}},
		{"10", "1g.10gb", holderRun{1, 120, "", "", ""}},
	} {
		l := gpuLabels("n2", "hostname", "0", "GPU-M", h100, "GPU_I_ID", in.gi, "GPU_I_PROFILE", in.profile)
		h.series = append(h.series, deviceSeries(l, []holderRun{in.holder}, map[string]func(int) float64{
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(0.5), "DCGM_FI_DEV_FB_USED": always(5000)})...)
	}
	for _, c := range []struct {
		resource string
		n        float64
	}{{"nvidia_com_mig_3g_40gb", 1}, {"nvidia_com_mig_1g_10gb", 1}, {"pods", 110}} {
		h.series = append(h.series, ksmSeries("kube_node_status_capacity", always(c.n), "node", "n2", "resource", c.resource, "unit", "integer"))
	}
	d := collectHistory(t, h)
	checkEntries(t, d, []want{
		{"GPU-M", "1", "", "", model.StateUnallocated, 1800, 0.80, model.Sampled},
		{"GPU-M", "5", "", "", model.StateUnknown, 900, 0.40, model.Sampled},
		{"GPU-M", "9", "m", "a", model.StateBusy, 450, 0.20, model.Sampled},
		{"GPU-M", "10", "", "", model.StateUnknown, 450, 0.20, model.Sampled},
	})
}

// TestDCGMExporterSingleMissedPoint: GPU-1 (no pod, 500 W: 1.75 EUR/h, on a
// node whose device plugin offers it) has no sample at grid point 61 alone,
// between two that have one: that grid step is unknown, charged to the
// GPU's time at its last rate. By hand: unallocated 119 × 30 = 3,570 s,
// 1.75 × 3,570 / 3,600 = 1.7354167 EUR; unknown 30 s, 0.0145833 EUR.
func TestDCGMExporterSingleMissedPoint(t *testing.T) {
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	h.series = deviceSeries(gpuLabels("n1", "hostname", "1", "GPU-1", "NVIDIA H100 80GB HBM3"), []holderRun{{1, 60, "", "", ""}, {62, 120, "", "", ""}},
		map[string]func(int) float64{"DCGM_FI_DEV_GPU_UTIL": always(0), "DCGM_FI_DEV_POWER_USAGE": always(500), "DCGM_FI_DEV_FB_USED": always(0)})
	h.series = append(h.series, ksmSeries("kube_node_status_capacity", always(1), "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"))
	d := collectHistory(t, h)
	checkEntries(t, d, []want{
		{"GPU-1", "", "", "", model.StateUnallocated, 3570, 1.75 * 3570 / 3600, model.Sampled},
		{"GPU-1", "", "", "", model.StateUnknown, 30, 1.75 * 30 / 3600, model.Sampled},
	})
}
