package dcgmexporter

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// histSeries is one series of a dcgm-exporter or kube-state-metrics history:
// its metric, labels and, per grid point j (1…), the value of the sample
// scraped in the grid step before it; NaN where it has none.
type histSeries struct {
	metric string
	labels map[string]string
	value  func(j int) float64
}

// dcgmHistory is the history a cluster's Prometheus holds, written into the
// embedded store (the one `report --demo` reads) and read by the source
// through Prometheus' own PromQL engine, so that its queries are evaluated
// as written: each series is scraped once per grid step, scrapeLag before
// each grid point start + j × grid.
type dcgmHistory struct {
	start  time.Time
	grid   time.Duration
	series []histSeries
}

// scrapeLag is how long before a grid point its step's scrape is taken: off
// the grid, as a scrape loop's own schedule is.
const scrapeLag = 17 * time.Second

// querier writes grid points 1…points of the history into a store and
// returns the engine over it.
func (h *dcgmHistory) querier(t *testing.T, points int) engine.Querier {
	t.Helper()
	b := engine.NewStoreBuilder()
	for _, s := range h.series {
		ls := labels.NewBuilder(labels.FromMap(s.labels)).Set(pmodel.MetricNameLabel, s.metric).Labels()
		for j := 1; j <= points; j++ {
			if v := s.value(j); !math.IsNaN(v) {
				ts := h.start.Add(time.Duration(j)*h.grid - scrapeLag)
				if err := b.Append(ls, ts.UnixMilli(), v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
}

func always(v float64) func(int) float64 { return func(int) float64 { return v } }

// dcgmTestBook prices an H100 at 8760 EUR over 1 year (1.00 EUR/h of
// capital), energy at 0.50 EUR/kWh × PUE 2 (1.00 EUR/h per kW) and 0.25 EUR/h
// overhead: 1.25 + kW EUR/h; an L4 at a flat 0.70 EUR/h; MIG by memory;
// idle below 0.2 — none of them the built-in book's.
const dcgmTestBook = `
currency: EUR
defaults: {amortization_years: 1, energy_eur_per_kwh: 0.5, pue: 2, overhead_eur_per_hour: 0.25}
models:
  - {match: "H100", purchase_eur: 8760}
  - {match: "L4", hourly_eur: 0.70}
mig_weight: memory
idle: {threshold: 0.2}
`

func gpuLabels(host, hostLabel, gpu, uuid, modelName string, extra ...string) map[string]string {
	l := map[string]string{"gpu": gpu, "UUID": uuid, "pci_bus_id": "00000000:0" + gpu + ":00.0", "device": "nvidia" + gpu,
		"modelName": modelName, hostLabel: host, "DCGM_FI_DRIVER_VERSION": "550.90.07", "instance": "10.0.0.1:9400", "job": "dcgm-exporter"}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func withPod(l map[string]string, ns, pod, container string) map[string]string {
	out := map[string]string{"namespace": ns, "pod": pod, "container": container}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// collectHistory reads the first hour of h through the source.
func collectHistory(t *testing.T, h *dcgmHistory) *model.Dataset {
	t.Helper()
	return collectHistoryWith(t, h, time.Hour, Options{})
}

// collectHistoryWith reads span of h through the source with opts, priced
// by dcgmTestBook on h's grid, in 1 h buckets and 5 min resolution steps.
func collectHistoryWith(t *testing.T, h *dcgmHistory, span time.Duration, opts Options) *model.Dataset {
	t.Helper()
	book, err := cost.Parse([]byte(dcgmTestBook), "test-book.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts.Book, opts.Grid = book, h.grid
	if opts.MaxPointsPerQuery == 0 {
		opts.MaxPointsPerQuery = 1000
	}
	src := New(h.querier(t, int(span/h.grid)), opts)
	d, err := src.Collect(context.Background(), model.Range{Start: h.start, End: h.start.Add(span), Step: time.Hour, Resolution: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// want is one holding's expected device-seconds and EUR in one state.
type want struct {
	uuid, gi, ns, pod string
	state             int
	sec, eur          float64
	kind              model.Kind
}

func checkEntries(t *testing.T, d *model.Dataset, wants []want) {
	t.Helper()
	type key struct {
		k  model.HoldingKey
		st int
	}
	seen := map[key]bool{}
	for _, w := range wants {
		var e *model.LedgerEntry
		var k model.HoldingKey
		for hk, he := range d.Ledger {
			if hk.Dev.UUID == w.uuid && hk.Dev.GI == w.gi && hk.Holder.Namespace == w.ns && hk.Holder.Pod == w.pod {
				e, k = he, hk
			}
		}
		if e == nil {
			t.Errorf("%s/%s %s/%s: no entry", w.uuid, w.gi, w.ns, w.pod)
			continue
		}
		seen[key{k, w.state}] = true
		if math.Abs(e.Seconds[w.state]-w.sec) > 1e-6 || math.Abs(e.EUR[w.state]-w.eur) > 1e-9 {
			t.Errorf("%s/%s %s/%s state %d: %.3f s %.9f EUR, want %.3f s %.9f EUR", w.uuid, w.gi, w.ns, w.pod, w.state, e.Seconds[w.state], e.EUR[w.state], w.sec, w.eur)
		}
		if e.Kind != w.kind {
			t.Errorf("%s/%s %s/%s: kind %s, want %s", w.uuid, w.gi, w.ns, w.pod, e.Kind, w.kind)
		}
	}
	for k, e := range d.Ledger {
		for st := range model.NumStates {
			if (e.Seconds[st] != 0 || e.EUR[st] != 0) && !seen[key{k, st}] {
				t.Errorf("unexpected %v state %d: %.3f s %.9f EUR", k, st, e.Seconds[st], e.EUR[st])
			}
		}
	}
}

// TestDCGMExporterStateRules holds the dcgm-exporter source to EUR computed
// by hand over one hour of 30 s grid points (120) from the book above, one
// GPU per rule:
//
//	G0 a/p0/c exclusive, GR 0.5 then 0.1 (idle below 0.2), GPU_UTIL 90 ignored, 300 W:
//	   1.55 EUR/h → busy 1800 s 0.775, idle 1800 s 0.775
//	G1 no pod, 500 W, no sample at points 41–50: unallocated 3300 s 1.75×3300/3600,
//	   unknown 300 s 1.75×300/3600 (the last rate)
//	G2 time-sliced ×4 (no pod; the node offers 4 nvidia_com_gpu_shared, 2 nvidia_com_gpu
//	   for 3 whole GPUs; most framebuffer of the unlabelled), b/s0 requests 1, b/s1 2,
//	   GR 0.6, 400 W: 1.65 EUR/h → s0 busy 900 s 0.4125, s1 busy 1800 s 0.825,
//	   unallocated 900 s 0.4125, allocation share
//	G3 MIG 2× 3g.40gb (memory weight 4/8 each), 350 W on the GPU and repeated on
//	   each instance (counted once): 1.60 EUR/h; GI 1 m/i1 with GPU_UTIL 90 but no GR:
//	   unknown 1800 s 0.80 (never GPU_UTIL on MIG); GI 2 no pod: unallocated 1800 s 0.80
//	G5 (node n2, legacy Hostname) XID 79: lost at capital + overhead, 1.25
//	G6 (n2) two pods labelled on one whole GPU, 200 W: unknown, no holder, 1.45
//	G9 (n2) x/u exclusive, GPU_UTIL 10 only (0.1 < 0.2: idle), 250 W: idle 1.50
//	G7 (n3, a node whose capacity offers no nvidia.com resource: DRA) L4 no pod:
//	   unknown 0.70; G8 (n3) L4 d/t with dra_* labels, GR 0.9: busy 0.70
func TestDCGMExporterStateRules(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h100 := "NVIDIA H100 80GB HBM3"
	g0 := gpuLabels("n1", "hostname", "0", "GPU-0", h100)
	g1 := gpuLabels("n1", "hostname", "1", "GPU-1", h100)
	g2 := gpuLabels("n1", "hostname", "2", "GPU-2", h100)
	g3 := gpuLabels("n1", "hostname", "3", "GPU-3", h100)
	g3i1 := gpuLabels("n1", "hostname", "3", "GPU-3", h100, "GPU_I_PROFILE", "3g.40gb", "GPU_I_ID", "1")
	g3i2 := gpuLabels("n1", "hostname", "3", "GPU-3", h100, "GPU_I_PROFILE", "3g.40gb", "GPU_I_ID", "2")
	g5 := gpuLabels("n2", "Hostname", "0", "GPU-5", h100)
	g6 := gpuLabels("n2", "Hostname", "1", "GPU-6", h100)
	g9 := gpuLabels("n2", "Hostname", "2", "GPU-9", h100)
	g7 := gpuLabels("n3", "hostname", "0", "GPU-7", "NVIDIA L4")
	g8 := withPod(gpuLabels("n3", "hostname", "1", "GPU-8", "NVIDIA L4", "dra_claim_name", "t-gpu", "dra_driver", "gpu.nvidia.com"), "d", "t", "c")
	g1gap := func(v float64) func(int) float64 {
		return func(j int) float64 {
			if j >= 41 && j <= 50 {
				return math.NaN()
			}
			return v
		}
	}
	ksm := func(metric string, v float64, kv ...string) histSeries {
		l := map[string]string{"instance": "ksm:8080", "job": "kube-state-metrics"}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return histSeries{metric, l, always(v)}
	}
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", withPod(g0, "a", "p0", "c"), func(j int) float64 {
			if j <= 60 {
				return 0.5
			}
			return 0.1
		}},
		{"DCGM_FI_DEV_GPU_UTIL", withPod(g0, "a", "p0", "c"), always(90)},
		{"DCGM_FI_DEV_POWER_USAGE", withPod(g0, "a", "p0", "c"), always(300)},
		{"DCGM_FI_DEV_FB_USED", withPod(g0, "a", "p0", "c"), always(30000)},
		{"DCGM_FI_DEV_XID_ERRORS", withPod(g0, "a", "p0", "c"), always(0)},

		{"DCGM_FI_DEV_GPU_UTIL", g1, g1gap(50)},
		{"DCGM_FI_DEV_POWER_USAGE", g1, g1gap(500)},
		{"DCGM_FI_DEV_FB_USED", g1, g1gap(0)},

		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", g2, always(0.6)},
		{"DCGM_FI_DEV_POWER_USAGE", g2, always(400)},
		{"DCGM_FI_DEV_FB_USED", g2, always(20000)},

		{"DCGM_FI_DEV_POWER_USAGE", g3, always(350)},
		{"DCGM_FI_DEV_POWER_USAGE", withPod(g3i1, "m", "i1", "c"), always(350)},
		{"DCGM_FI_DEV_POWER_USAGE", g3i2, always(350)},
		{"DCGM_FI_DEV_GPU_UTIL", withPod(g3i1, "m", "i1", "c"), always(90)},
		{"DCGM_FI_DEV_FB_USED", withPod(g3i1, "m", "i1", "c"), always(9000)},
		{"DCGM_FI_DEV_FB_USED", g3i2, always(0)},

		{"DCGM_FI_DEV_XID_ERRORS", g5, always(79)},

		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", withPod(g6, "e", "one", "c"), always(0.9)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", withPod(g6, "e", "two", "c"), always(0.9)},
		{"DCGM_FI_DEV_POWER_USAGE", withPod(g6, "e", "one", "c"), always(200)},

		{"DCGM_FI_DEV_GPU_UTIL", withPod(g9, "x", "u", "c"), always(10)},
		{"DCGM_FI_DEV_POWER_USAGE", withPod(g9, "x", "u", "c"), always(250)},

		{"DCGM_FI_DEV_FB_USED", g7, always(1000)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", g8, always(0.9)},

		ksm("kube_node_status_capacity", 2, "node", "n1", "resource", "nvidia_com_gpu", "unit", "integer"),
		ksm("kube_node_status_capacity", 4, "node", "n1", "resource", "nvidia_com_gpu_shared", "unit", "integer"),
		ksm("kube_node_status_capacity", 2, "node", "n1", "resource", "nvidia_com_mig_3g_40gb", "unit", "integer"),
		ksm("kube_node_status_capacity", 3, "node", "n2", "resource", "nvidia_com_gpu", "unit", "integer"),
		ksm("kube_node_status_capacity", 110, "node", "n3", "resource", "pods", "unit", "integer"),
		ksm("kube_pod_container_resource_requests", 1, "namespace", "b", "pod", "s0", "container", "c", "node", "n1", "resource", "nvidia_com_gpu_shared"),
		ksm("kube_pod_container_resource_requests", 2, "namespace", "b", "pod", "s1", "container", "c", "node", "n1", "resource", "nvidia_com_gpu_shared"),
		ksm("kube_pod_status_phase", 1, "namespace", "b", "pod", "s0", "phase", "Running"),
		ksm("kube_pod_status_phase", 1, "namespace", "b", "pod", "s1", "phase", "Running"),
	}}
	d := collectHistory(t, f)
	const busy, idle, unalloc, lost, unknown = model.StateBusy, model.StateIdle, model.StateUnallocated, model.StateLost, model.StateUnknown
	sampled, share := model.Sampled, model.AllocationShare
	checkEntries(t, d, []want{
		{"GPU-0", "", "a", "p0", busy, 1800, 0.775, sampled},
		{"GPU-0", "", "a", "p0", idle, 1800, 0.775, sampled},
		{"GPU-1", "", "", "", unalloc, 3300, 1.75 * 3300 / 3600, sampled},
		{"GPU-1", "", "", "", unknown, 300, 1.75 * 300 / 3600, sampled},
		{"GPU-2", "", "b", "s0", busy, 900, 0.4125, share},
		{"GPU-2", "", "b", "s1", busy, 1800, 0.825, share},
		{"GPU-2", "", "", "", unalloc, 900, 0.4125, share},
		{"GPU-3", "1", "m", "i1", unknown, 1800, 0.80, sampled},
		{"GPU-3", "2", "", "", unalloc, 1800, 0.80, sampled},
		{"GPU-5", "", "", "", lost, 3600, 1.25, sampled},
		{"GPU-6", "", "", "", unknown, 3600, 1.45, sampled},
		{"GPU-9", "", "x", "u", idle, 3600, 1.50, sampled},
		{"GPU-7", "", "", "", unknown, 3600, 0.70, sampled},
		{"GPU-8", "", "d", "t", busy, 3600, 0.70, sampled},
	})
	if got := d.GPUs[model.GPUKey{UUID: "GPU-5"}]; got == nil || got.FirstLost != 0 || got.Host != "n2" {
		t.Errorf("GPU-5 seen as %+v, want lost from bucket 0 on n2 (the legacy Hostname label)", got)
	}
	if d.MIGMode[model.GPUKey{UUID: "GPU-3"}] != "enabled" || d.MIGMode[model.GPUKey{UUID: "GPU-0"}] != "disabled" {
		t.Errorf("MIG modes %v", d.MIGMode)
	}
	if a := d.Alloc[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-2"}, Holder: model.HolderKey{Namespace: "b", Pod: "s0", Container: "c"}}]; a.Sharing != "time-slicing" {
		t.Errorf("b/s0 allocation %+v, want time-slicing", a)
	}
	if !strings.Contains(d.Sampling, "30s grid") {
		t.Errorf("sampling %+v, want the 30s grid stated", d.Sampling)
	}
	// GR first: a/p0's activity is 0.5 for 6 resolution steps, then 0.1.
	act := d.Activity[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "a", Pod: "p0", Container: "c"}}]
	if act.Count() != 12 || float32(act.Quantile(0.5)) != float32(0.1) || act.Quantile(0.51) != 0.5 || act.Max() != 0.5 {
		t.Errorf("a/p0 activity: %d values, p50 %g, p51 %g, max %g; want 6 × 0.5 and 6 × 0.1", act.Count(), act.Quantile(0.5), act.Quantile(0.51), act.Max())
	}
}

// TestDCGMExporterExportedLabels: when Prometheus scraped dcgm-exporter
// without honor_labels, the holder is in exported_namespace, exported_pod and
// exported_container, and namespace and pod are the exporter's own pod: a GPU
// with only those is unallocated. H100 at 300 W: 1.55 EUR/h; GR 0.7.
func TestDCGMExporterExportedLabels(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	exporter := func(l map[string]string) map[string]string {
		l["namespace"], l["pod"], l["container"] = "gpu-operator", "dcgm-exporter-x7k2p", "exporter"
		return l
	}
	held := exporter(gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3",
		"exported_namespace", "ml", "exported_pod", "train-0", "exported_container", "trainer"))
	free := exporter(gpuLabels("n1", "hostname", "1", "GPU-B", "NVIDIA H100 80GB HBM3"))
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", held, always(0.7)},
		{"DCGM_FI_DEV_POWER_USAGE", held, always(300)},
		{"DCGM_FI_DEV_FB_USED", held, always(1)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", free, always(0)},
		{"DCGM_FI_DEV_POWER_USAGE", free, always(300)},
	}}
	d := collectHistory(t, f)
	checkEntries(t, d, []want{
		{"GPU-A", "", "ml", "train-0", model.StateBusy, 3600, 1.55, model.Sampled},
		{"GPU-B", "", "", "", model.StateUnallocated, 3600, 1.55, model.Sampled},
	})
	// Without kube-state-metrics the source says what it cannot tell.
	if len(d.Notes) == 0 || !strings.Contains(d.Notes[0], "kube_node_status_capacity") {
		t.Errorf("notes %q, want one about the missing capacity", d.Notes)
	}
}

// TestDCGMExporterClusters: one node name and one UUID in two clusters are
// two GPUs, each priced by its own samples: in east GPU-A is held by
// ml/train-0, busy at 300 W (1.25 + 0.30 = 1.55 EUR/h); in west it is free at
// 100 W (1.35 EUR/h), on a MIG-less node of the same name.
func TestDCGMExporterClusters(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	east := withPod(gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3", "cluster", "east"), "ml", "train-0", "trainer")
	west := gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3", "cluster", "west")
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", east, always(0.7)},
		{"DCGM_FI_DEV_POWER_USAGE", east, always(300)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", west, always(0)},
		{"DCGM_FI_DEV_POWER_USAGE", west, always(100)},
	}}
	d := collectHistoryWith(t, f, time.Hour, Options{ClusterLabel: "cluster"})
	busy := model.HoldingKey{Dev: model.DeviceKey{Cluster: "east", UUID: "GPU-A"}, Holder: model.HolderKey{Namespace: "ml", Pod: "train-0", Container: "trainer"}}
	free := model.HoldingKey{Dev: model.DeviceKey{Cluster: "west", UUID: "GPU-A"}}
	if len(d.Ledger) != 2 || d.Ledger[busy] == nil || d.Ledger[free] == nil {
		t.Fatalf("ledger %v, want east's busy holding and west's free GPU", d.Ledger)
	}
	for _, c := range []struct {
		k        model.HoldingKey
		st       int
		eur      float64
		migState string
	}{{busy, model.StateBusy, 1.55, "disabled"}, {free, model.StateUnallocated, 1.35, "disabled"}} {
		e := d.Ledger[c.k]
		if math.Abs(e.Seconds[c.st]-3600) > 1e-6 || math.Abs(e.EUR[c.st]-c.eur) > 1e-6 || e.Host != "n1" || e.Kind != model.Sampled {
			t.Errorf("%+v: %+v, want 3600 s and %.2f EUR in state %d on n1, sampled", c.k, e, c.eur, c.st)
		}
		g := c.k.Dev.GPU()
		if d.GPUs[g] == nil || d.MIGMode[g] != c.migState {
			t.Errorf("GPU %+v: seen %v, MIG mode %q", g, d.GPUs[g], d.MIGMode[g])
		}
	}
	// Without the cluster label both clusters' samples are one GPU's: the failure the label prevents.
	if d := collectHistory(t, f); len(d.GPUs) != 1 {
		t.Errorf("without a cluster label %d GPUs, want the two merged into 1", len(d.GPUs))
	}
}

// TestDCGMExporterClustersInChunks: over two hours read an hour a chunk,
// west is first seen in the second chunk and is priced from there (GPU-A
// free at 100 W: 3600 s, 1.35 EUR) beside east's whole two hours (busy at
// 300 W: 7200 s, 3.10 EUR); the sampling statement counts the short holdings
// of both clusters (ml/flash in east, ml/blip in west, one grid point each);
// kube-state-metrics series of a cluster without dcgm-exporter series get a
// note.
func TestDCGMExporterClustersInChunks(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	at := func(from, to int, v float64) func(int) float64 {
		return func(j int) float64 {
			if j < from || j > to {
				return math.NaN()
			}
			return v
		}
	}
	h100 := "NVIDIA H100 80GB HBM3"
	eastA := withPod(gpuLabels("n1", "hostname", "0", "GPU-A", h100, "cluster", "east"), "ml", "train-0", "trainer")
	eastC := withPod(gpuLabels("n1", "hostname", "1", "GPU-C", h100, "cluster", "east"), "ml", "flash", "main")
	westA := gpuLabels("n1", "hostname", "0", "GPU-A", h100, "cluster", "west")
	westB := withPod(gpuLabels("n1", "hostname", "1", "GPU-B", h100, "cluster", "west"), "ml", "blip", "main")
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", eastA, always(0.7)},
		{"DCGM_FI_DEV_POWER_USAGE", eastA, always(300)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", eastC, at(50, 50, 0.7)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", westA, at(121, 240, 0)},
		{"DCGM_FI_DEV_POWER_USAGE", westA, at(121, 240, 100)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", westB, at(200, 200, 0.7)},
		{"kube_node_status_capacity", map[string]string{"node": "m1", "resource": "nvidia_com_gpu", "cluster": "north"}, always(8)},
	}}
	d := collectHistoryWith(t, f, 2*time.Hour, Options{MaxPointsPerQuery: 120, ClusterLabel: "cluster"})
	for _, c := range []struct {
		k        model.HoldingKey
		st       int
		sec, eur float64
	}{
		{model.HoldingKey{Dev: model.DeviceKey{Cluster: "east", UUID: "GPU-A"}, Holder: model.HolderKey{Namespace: "ml", Pod: "train-0", Container: "trainer"}}, model.StateBusy, 7200, 3.10},
		{model.HoldingKey{Dev: model.DeviceKey{Cluster: "west", UUID: "GPU-A"}}, model.StateUnallocated, 3600, 1.35},
	} {
		e := d.Ledger[c.k]
		if e == nil || math.Abs(e.Seconds[c.st]-c.sec) > 1e-6 || math.Abs(e.EUR[c.st]-c.eur) > 1e-6 {
			t.Errorf("%+v: %+v, want %.0f s and %.2f EUR in state %d", c.k, e, c.sec, c.eur, c.st)
		}
	}
	if !strings.Contains(d.Sampling, "(2 holding(s) here were seen at fewer than two)") {
		t.Errorf("sampling %+v, want both clusters' short holdings counted: 2", d.Sampling)
	}
	if !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, `cluster "north", where no dcgm-exporter series are`) }) {
		t.Errorf("notes %q, want one on north's kube-state-metrics series", d.Notes)
	}
}

// TestDCGMExporterNoData: a range without dcgm-exporter samples is an error
// that says what was looked for.
func TestDCGMExporterNoData(t *testing.T) {
	empty := &dcgmHistory{start: time.Unix(0, 0), grid: DefaultGrid}
	src := New(empty.querier(t, 120), Options{})
	_, err := src.Collect(context.Background(), model.Range{Start: time.Unix(0, 0), End: time.Unix(3600, 0), Step: time.Hour, Resolution: 5 * time.Minute})
	if err == nil || !strings.Contains(err.Error(), "no dcgm-exporter samples") {
		t.Errorf("error %v, want one about no dcgm-exporter samples", err)
	}
	src = New(empty.querier(t, 120), Options{Grid: DefaultGrid})
	_, err = src.Collect(context.Background(), model.Range{Start: time.Unix(0, 0), End: time.Unix(3600, 0), Step: time.Hour, Resolution: 45 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "must divide") {
		t.Errorf("a resolution of 45s on a 30s grid: error %v, want one saying the grid must divide it", err)
	}
}
