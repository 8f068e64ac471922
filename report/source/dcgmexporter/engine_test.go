package dcgmexporter

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// The dcgm-exporter source's rules held to hand-computed EUR on histories in
// the label sets dcgm-exporter and kube-state-metrics write, evaluated by
// Prometheus' engine (source_test.go has the fixtures: dcgmHistory, the book
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
	d := collectHistoryWith(t, h, 2*time.Hour, Options{})
	checkEntries(t, d, []want{
		{"GPU-0", "", "ml", "train-0", model.StateBusy, 3330, 1.43375, model.Sampled},
		{"GPU-0", "", "", "", model.StateUnallocated, 3870, 1.66625, model.Sampled},
	})
	e := d.Ledger[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "ml", Pod: "train-0", Container: "main"}}]
	if e == nil || !e.BusyBuckets.Has(0) || !e.BusyBuckets.Has(1) || e.BusyBuckets.Has(2) {
		t.Errorf("ml/train-0 %+v, want busy seconds in both buckets (600 s and 2,730 s)", e)
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
// The source reads each once (source.DefaultDedupeLabels). GPU-S (timeSlicedNode)
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
	d := collectHistoryWith(t, h, time.Hour, Options{DedupeLabels: source.DefaultDedupeLabels})
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

// TestDCGMExporterClustersKeepHoldingsApart: clusters east and west each
// have node n1 with GPU-T (time-sliced ×2, no nvidia_com_gpu offered; GR 0.6,
// 400 W: 1.65 EUR/h) and GPU-M (MIG, 2 × 3g.40gb, by memory 4/8 each; 350 W:
// 1.60 EUR/h) — the same names and UUIDs. In both, ml/x holds GI 1 (GR 0.9 in
// east: busy; 0.1 in west: idle) and ml/nb-0 requests a replica of GPU-T; it
// runs in east and has completed in west. By hand, per cluster:
//
//	east  GPU-T  ml/nb-0 busy 1,800 s 0.825, free 1,800 s 0.825
//	      GPU-M  GI 1 ml/x busy 1,800 s 0.80, GI 2 free 1,800 s 0.80
//	west  GPU-T  free 3,600 s 1.65
//	      GPU-M  GI 1 ml/x idle 1,800 s 0.80, GI 2 free 1,800 s 0.80
//
// and ml/x's activity per 5 minutes is 0.9 in east and 0.1 in west. Keyed
// without the cluster, the pods' phases (Running in east) were in neither
// cluster, and the MIG holdings of both were one.
func TestDCGMExporterClustersKeepHoldingsApart(t *testing.T) {
	h100 := "NVIDIA H100 80GB HBM3"
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	all := []holderRun{{1, 120, "", "", ""}}
	for _, c := range []struct {
		name string
		gr   float64
	}{{"east", 0.9}, {"west", 0.1}} {
		cl := []string{"cluster", c.name}
		h.series = append(h.series, deviceSeries(gpuLabels("n1", "hostname", "0", "GPU-T", h100, cl...), all, map[string]func(int) float64{
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(0.6), "DCGM_FI_DEV_POWER_USAGE": always(400), "DCGM_FI_DEV_FB_USED": always(20000)})...)
		h.series = append(h.series, deviceSeries(gpuLabels("n1", "hostname", "1", "GPU-M", h100, cl...), all, map[string]func(int) float64{
			"DCGM_FI_DEV_POWER_USAGE": always(350)})...)
		gi := func(id string) map[string]string {
			return gpuLabels("n1", "hostname", "1", "GPU-M", h100, append([]string{"GPU_I_ID", id, "GPU_I_PROFILE", "3g.40gb"}, cl...)...)
		}
		h.series = append(h.series, deviceSeries(gi("1"), []holderRun{{1, 120, "ml", "x", "main"}}, map[string]func(int) float64{
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(c.gr), "DCGM_FI_DEV_FB_USED": always(30000)})...)
		h.series = append(h.series, deviceSeries(gi("2"), all, map[string]func(int) float64{
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(0), "DCGM_FI_DEV_FB_USED": always(0)})...)
		for _, r := range []struct {
			resource string
			n        float64
		}{{"nvidia_com_gpu_shared", 2}, {"nvidia_com_mig_3g_40gb", 2}, {"pods", 110}} {
			h.series = append(h.series, ksmSeries("kube_node_status_capacity", always(r.n), append([]string{"node", "n1", "resource", r.resource, "unit", "integer"}, cl...)...))
		}
		h.series = append(h.series, sharedPod("ml", "nb-0", 1, func(int) bool { return c.name == "east" }, cl...)...)
	}
	d := collectHistoryWith(t, h, time.Hour, Options{ClusterLabel: "cluster"})
	share := model.AllocationShare
	east, west := d.OfCluster("east"), d.OfCluster("west")
	if n := len(east.Ledger) + len(west.Ledger); n != len(d.Ledger) {
		t.Errorf("%d of %d holdings in east or west", n, len(d.Ledger))
	}
	checkEntries(t, east, []want{
		{"GPU-T", "", "ml", "nb-0", model.StateBusy, 1800, 0.825, share},
		{"GPU-T", "", "", "", model.StateUnallocated, 1800, 0.825, share},
		{"GPU-M", "1", "ml", "x", model.StateBusy, 1800, 0.80, model.Sampled},
		{"GPU-M", "2", "", "", model.StateUnallocated, 1800, 0.80, model.Sampled},
	})
	checkEntries(t, west, []want{
		{"GPU-T", "", "", "", model.StateUnallocated, 3600, 1.65, share},
		{"GPU-M", "1", "ml", "x", model.StateIdle, 1800, 0.80, model.Sampled},
		{"GPU-M", "2", "", "", model.StateUnallocated, 1800, 0.80, model.Sampled},
	})
	for c, want := range map[string]float32{"east": 0.9, "west": 0.1} {
		k := model.HoldingKey{Dev: model.DeviceKey{Cluster: c, UUID: "GPU-M", GI: "1", Profile: "3g.40gb"}, Holder: model.HolderKey{Namespace: "ml", Pod: "x", Container: "main"}}
		act := d.Activity[k]
		if act.Count() != 12 || float32(act.Quantile(0)) != want || float32(act.Max()) != want {
			t.Errorf("%s ml/x activity: %d values from %g to %g, want 12 × %g", c, act.Count(), act.Quantile(0), act.Max(), want)
		}
	}
}

// TestDCGMExporterRepartitionedInstance: GPU-R (H100, 350 W: 1.60 EUR/h,
// MIG by memory) is 3g.40gb GI 1 (m/a, busy) + 3g.40gb GI 2 (free) for grid
// points 1–60, then repartitioned: GI 1 is 4g.40gb (m/b, busy) + 3g.40gb
// GI 2 for points 61–120. GPU_I_ID 1 with another profile is another device
// (model.DeviceKey), each with its own holding. By hand, each half hour
// (1,800 s, 0.80 EUR at the GPU's rate):
//
//	GI 1 3g.40gb m/a busy  1,800 × 4/8 = 900 s  0.40 EUR
//	GI 1 4g.40gb m/b busy  1,800 × 4/8 = 900 s  0.40 EUR
//	GI 2 3g.40gb free      3,600 × 4/8 = 1,800 s 0.80 EUR
func TestDCGMExporterRepartitionedInstance(t *testing.T) {
	h100 := "NVIDIA H100 80GB HBM3"
	h := &dcgmHistory{start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), grid: 30 * time.Second}
	h.series = deviceSeries(gpuLabels("n1", "hostname", "0", "GPU-R", h100), []holderRun{{1, 120, "", "", ""}},
		map[string]func(int) float64{"DCGM_FI_DEV_POWER_USAGE": always(350)})
	for _, in := range []struct {
		gi, profile string
		run         holderRun
	}{
		{"1", "3g.40gb", holderRun{1, 60, "m", "a", "main"}},
		{"1", "4g.40gb", holderRun{61, 120, "m", "b", "main"}},
		{"2", "3g.40gb", holderRun{1, 120, "", "", ""}},
	} {
		l := gpuLabels("n1", "hostname", "0", "GPU-R", h100, "GPU_I_ID", in.gi, "GPU_I_PROFILE", in.profile)
		gr := 0.0
		if in.run.ns != "" {
			gr = 0.9
		}
		h.series = append(h.series, deviceSeries(l, []holderRun{in.run}, map[string]func(int) float64{
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE": always(gr), "DCGM_FI_DEV_FB_USED": always(1000)})...)
	}
	// The device plugin offers what the layout has: two 3g.40gb, then one
	// and a 4g.40gb.
	halves := func(first, second float64) func(int) float64 {
		return func(j int) float64 {
			if j <= 60 {
				return first
			}
			return second
		}
	}
	for _, c := range []struct {
		resource      string
		first, second float64
	}{{"nvidia_com_mig_3g_40gb", 2, 1}, {"nvidia_com_mig_4g_40gb", 0, 1}, {"pods", 110, 110}} {
		h.series = append(h.series, ksmSeries("kube_node_status_capacity", halves(c.first, c.second), "node", "n1", "resource", c.resource, "unit", "integer"))
	}
	d := collectHistory(t, h)
	holding := func(gi, profile, pod string) model.HoldingKey {
		k := model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-R", GI: gi, Profile: profile}}
		if pod != "" {
			k.Holder = model.HolderKey{Namespace: "m", Pod: pod, Container: "main"}
		}
		return k
	}
	for _, c := range []struct {
		k        model.HoldingKey
		st       int
		sec, eur float64
	}{
		{holding("1", "3g.40gb", "a"), model.StateBusy, 900, 0.40},
		{holding("1", "4g.40gb", "b"), model.StateBusy, 900, 0.40},
		{holding("2", "3g.40gb", ""), model.StateUnallocated, 1800, 0.80},
	} {
		e := d.Ledger[c.k]
		if e == nil || math.Abs(e.Seconds[c.st]-c.sec) > 1e-6 || math.Abs(e.EUR[c.st]-c.eur) > 1e-9 || e.Profile != c.k.Dev.Profile {
			t.Errorf("%+v: %+v, want %g s %g EUR in state %d", c.k, e, c.sec, c.eur, c.st)
		}
	}
	var sec float64
	for k, e := range d.Ledger {
		for st := range model.NumStates {
			sec += e.Seconds[st]
		}
		if k.Dev.GI != "" && d.Activity[k].Count() == 0 && k.Holder != (model.HolderKey{}) {
			t.Errorf("%+v: no activity", k)
		}
	}
	if math.Abs(sec-3600) > 1e-6 {
		t.Errorf("GPU-R: %g device-seconds, want 3600", sec)
	}
}
