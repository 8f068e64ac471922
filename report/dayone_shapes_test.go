package report

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/internal/applyspec"
)

// The day-one fleet in the label shapes real clusters have (issue 41):
// each shape of history.DCGMShapes (the published output of each is in
// testdata/real), applied to the fleet of dayone_test.go, everything else
// unchanged. What the report must say is what the ledger would — the hand
// figures of the top of dayone_test.go, or of the nodes the row runs —
// with the shape read for what it is, or a refusal that names it.
//
// Figures, as in dayone_test.go: every GPU 2.00 EUR/h, 48 h; b = 30 h less
// a 30 s grid step = 29.991667 h, batch/train-0's time on gpu-node-b.

// notReadYet is why a row's test is skipped: the one place a skip stands in
// for a test, until the source reads the shape.
const notReadYet = "report/source/dcgmexporter does not read this shape yet (issue 41 part B)"

// shapeRow is one shape on the day-one fleet.
type shapeRow struct {
	name   string
	shapes history.DCGMShapes
	legacy bool // the host label as Hostname (--collector.legacy-hostname-label)
	// nodes: the fleet's nodes the row runs (none: all), or variant builds them.
	nodes   []string
	variant func(t *testing.T) []*sim.Scenario
	want    map[string]nsWant // the namespaces' hand figures; nil: the report must fail
	check   func(t *testing.T, r *Report, err error)
	read    bool // the source reads the shape: false skips the row with notReadYet
}

// kueueKeys returns the report's Kueue quotas as "team resource" keys.
func kueueKeys(t *testing.T, r *Report) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(applyspec.CheckKueue(t, r.Apply.Kueue)))
}

// checkRecommendations holds the report's recommendations to want (kind
// and target, each freeing perMonth EUR a month) and no others.
func checkRecommendations(t *testing.T, r *Report, perMonth float64, want ...string) {
	t.Helper()
	var got []string
	for _, rec := range r.Recommendations {
		got = append(got, rec.Kind+" "+rec.Target)
		if !near(rec.FreedEURPerMonth, perMonth) {
			t.Errorf("%s %s frees %.2f EUR/month, want %.2f", rec.Kind, rec.Target, rec.FreedEURPerMonth, perMonth)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("recommendations %q, want %q", got, want)
	}
}

// baseKueue are the quotas of the whole fleet read as it is: each team and
// the resource its pods request.
var baseKueue = []string{"batch nvidia.com/gpu", "dev nvidia.com/gpu", "dev-ann nvidia.com/gpu.shared", "dev-ben nvidia.com/gpu.shared",
	"serving nvidia.com/gpu", "serving nvidia.com/mig-3g.40gb"}

// checkWholeFleet holds what the whole fleet's report says read as it is:
// the drain of gpu-node-d and the release of dev/notebook-0, each freeing
// 1461 EUR a month, and the Kueue quotas of the teams' own resources.
func checkWholeFleet(t *testing.T, r *Report) {
	t.Helper()
	checkReleaseAndDrain(t, r)
	if k := kueueKeys(t, r); !slices.Equal(k, baseKueue) {
		t.Errorf("Kueue quotas %q, want %q", k, baseKueue)
	}
}

// nodeB is gpu-node-b's hand figures: serving/embed-0 on the first
// 3g.40gb instance, half the GPU by the compute weight, 24 h and 48 EUR;
// batch/train-0 b hours busy; no holder for the free instance (24 h) and
// GPU 1 after the Job (48 − b h): 72 − b h unallocated.
func nodeB() map[string]nsWant {
	b := 30 - 30.0/3600
	return map[string]nsWant{
		"serving": {held: 24, eur: 48},
		"batch":   {held: b, busy: b, busyKnown: true, eur: 2 * b},
		"":        {unallocated: 72 - b, eur: 2 * (72 - b)},
	}
}

func shapeRows() []shapeRow {
	b := 30 - 30.0/3600
	return []shapeRow{{
		// NVIDIA's recipes: a GPU without a holder carries the exporter's
		// own pod. The exporter's pods request no GPU in kube-state-metrics
		// and are the target on every GPU of their node: no holder. So the
		// fleet's hand figures — no namespace gpu-operator, no advice or
		// queue for it, the time-sliced GPU split as before.
		name: "ServiceMonitor honorLabels true", shapes: history.DCGMShapes{ScrapeTarget: history.HonorLabels},
		want: dayOneHand(30 * time.Second),
		check: func(t *testing.T, r *Report, _ error) {
			checkWholeFleet(t, r)
			for _, h := range r.Holdings {
				if h.Namespace == "gpu-operator" {
					t.Errorf("holding %s", h.Name())
				}
			}
			if !warned(r, "scrape target", "gpu-operator/nvidia-dcgm-exporter-", "no holder") {
				t.Errorf("warnings %q, want one saying the exporter's pods are the scrape target, read as no holder", r.Warnings)
			}
		},
	}, {
		// honorLabels false: every series the exporter's pod, the holders
		// in exported_*: read from those, the hand figures.
		name: "ServiceMonitor honorLabels false", shapes: history.DCGMShapes{ScrapeTarget: history.NoHonorLabels},
		want: dayOneHand(30 * time.Second), check: func(t *testing.T, r *Report, _ error) { checkWholeFleet(t, r) }, read: true,
	}, {
		// gpu-node-b's MIG GPU an A100 80GB in one 7g.80gb instance that
		// serving/embed-0 holds (nvidia.com/mig-7g.80gb), which dcgm-exporter
		// spells 7g.79gb (gpu-operator #687): all 7 compute slices, the
		// whole GPU, 48 h and 96 EUR; GPU 1 as on the fleet: batch b, 48 − b
		// h unallocated. The holding and its quota name the resource the pod
		// requests; a warning names both spellings.
		name: "GPU_I_PROFILE 7g.79gb for nvidia.com/mig-7g.80gb", shapes: history.DCGMShapes{MIGProfiles: map[string]string{"7g.80gb": "7g.79gb"}},
		variant: func(t *testing.T) []*sim.Scenario {
			return []*sim.Scenario{dayOneVariant(t, "gpu-node-b", "  - model: NVIDIA H100 80GB HBM3\n    mig: [3g.40gb, 3g.40gb]\n", "  - model: NVIDIA A100 80GB PCIe\n    mig: [7g.80gb]\n",
				"nvidia.com/mig-3g.40gb", "nvidia.com/mig-7g.80gb")}
		},
		want: map[string]nsWant{
			"serving": {held: 48, eur: 96},
			"batch":   {held: b, busy: b, busyKnown: true, eur: 2 * b},
			"":        {unallocated: 48 - b, eur: 2 * (48 - b)},
		},
		check: func(t *testing.T, r *Report, _ error) {
			checkMIGResource(t, r, "nvidia.com/mig-7g.80gb", "7g.79gb")
		},
	}, {
		// The fleet's gpu-node-b with its 3g.40gb instances spelled 3g.39gb
		// (illustrative: the spelling rounds the instance's 39.5 GiB down,
		// as 7g.79gb does an A100 80GB's). The free instance is the one the
		// node's capacity of 2 nvidia.com/mig-3g.40gb still offers:
		// unallocated, not unknown — gpu-node-b's hand figures.
		name: "GPU_I_PROFILE 3g.39gb for nvidia.com/mig-3g.40gb, one free", shapes: history.DCGMShapes{MIGProfiles: map[string]string{"3g.40gb": "3g.39gb"}},
		nodes: []string{"gpu-node-b"}, want: nodeB(),
		check: func(t *testing.T, r *Report, _ error) {
			checkMIGResource(t, r, "nvidia.com/mig-3g.40gb", "3g.39gb")
		},
	}, {
		// Builds before the node-name fix: Hostname the exporter's pod, the
		// node relabelled into node. The node from node, never the pod:
		// the fleet's hand figures and advice, the nodes by their names.
		name: "Hostname the exporter's pod, node relabelled", shapes: history.DCGMShapes{HostnameIsPod: true, NodeLabel: "node"}, legacy: true,
		want: dayOneHand(30 * time.Second),
		check: func(t *testing.T, r *Report, _ error) {
			checkWholeFleet(t, r)
			var nodes []string
			for _, n := range r.Nodes {
				nodes = append(nodes, n.Name)
			}
			if want := []string{"gpu-node-a", "gpu-node-b", "gpu-node-c", "gpu-node-d"}; !slices.Equal(nodes, want) {
				t.Errorf("nodes %q, want %q", nodes, want)
			}
		},
	}, {
		// Hostname the exporter's pod and no label naming the node: the
		// report refuses, naming the pod it will not take for a node and
		// how to name the node.
		name: "Hostname the exporter's pod, no node label", shapes: history.DCGMShapes{HostnameIsPod: true}, legacy: true, nodes: []string{"gpu-node-a"},
		check: func(t *testing.T, _ *Report, err error) {
			for _, w := range []string{"Hostname", "nvidia-dcgm-exporter-", "exporter's pod", "--dcgm-exporter.node-label"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one saying %q", err, w)
				}
			}
		},
	}, {
		// dcgm-exporter #662 on gpu-node-a and gpu-node-c: GR_ENGINE_ACTIVE 0
		// while GPU_UTIL moves. The GPUs whose signals disagree are named
		// and read by GPU_UTIL: the trainers busy all 96 h, the notebook
		// (0 on both) idle and released, the time-sliced GPU split as
		// always (12 h a notebook, 24 h free). No trainer is released.
		name: "GR_ENGINE_ACTIVE stuck at 0", shapes: history.DCGMShapes{ProfilingStuckAtZero: true}, nodes: []string{"gpu-node-a", "gpu-node-c"},
		want: map[string]nsWant{
			"serving": {held: 96, busy: 96, busyKnown: true, eur: 192},
			"dev":     {held: 48, busy: 0, busyKnown: true, eur: 96},
			"dev-ann": {held: 12, eur: 24},
			"dev-ben": {held: 12, eur: 24},
			"":        {unallocated: 24, eur: 48},
		},
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, monthly, "release dev/notebook-0/jupyter")
			if !warned(r, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "gpu-node-a GPU 0", "gpu-node-a GPU 1", "gpu-node-c GPU 0") ||
				warned(r, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu-node-a GPU 2") {
				t.Errorf("warnings %q, want one naming the 3 GPUs whose signals disagree (not the idle notebook's)", r.Warnings)
			}
		},
	}, {
		// gpu-node-c time-sliced ×4 as nvidia.com/gpu (not renamed): the
		// allocation share as for gpu.shared, the holdings and the Kueue
		// quotas of the resource the pods request.
		name: "time-slicing without renamed resources",
		variant: func(t *testing.T) []*sim.Scenario {
			return []*sim.Scenario{dayOneVariant(t, "gpu-node-c", "nvidia.com/gpu.shared,", "nvidia.com/gpu,", "    replicas: 4\n", "    replicas: 4\n    resource: nvidia.com/gpu\n")}
		},
		want: map[string]nsWant{"dev-ann": {held: 12, eur: 24}, "dev-ben": {held: 12, eur: 24}, "": {unallocated: 24, eur: 48}},
		check: func(t *testing.T, r *Report, _ error) {
			for _, h := range r.Holdings {
				if h.Resource != "nvidia.com/gpu" || h.Sharing != "time-slicing" {
					t.Errorf("holding %s: %s, %s; want nvidia.com/gpu, time-slicing", h.Name(), h.Resource, h.Sharing)
				}
			}
			if k, want := kueueKeys(t, r), []string{"dev-ann nvidia.com/gpu", "dev-ben nvidia.com/gpu"}; !slices.Equal(k, want) {
				t.Errorf("Kueue quotas %q, want %q", k, want)
			}
		},
	}, {
		// H100 MIG instances without DCGM_FI_DEV_FB_* (#512): their state
		// comes from their GR_ENGINE_ACTIVE and pod labels, unchanged.
		name: "no framebuffer on MIG instances", shapes: history.DCGMShapes{NoMIGFramebuffer: true}, nodes: []string{"gpu-node-b"},
		want: nodeB(), read: true,
	}, {
		// pod="" on free GPUs, pod_uid="" beside a holder's,
		// DCGM_FI_PROCESS_NAME everywhere: no label of a state.
		name: "empty and extra labels", shapes: history.DCGMShapes{EmptyAndExtraLabels: true},
		want: dayOneHand(30 * time.Second), check: func(t *testing.T, r *Report, _ error) { checkWholeFleet(t, r) }, read: true,
	}, {
		name: "no pci_bus_id or driver label", shapes: history.DCGMShapes{NoPCIBusIDOrDriver: true},
		want: dayOneHand(30 * time.Second), check: func(t *testing.T, r *Report, _ error) { checkWholeFleet(t, r) }, read: true,
	}, {
		// gpu-node-d's GPU an A100 40GB seen from a vGPU guest, GRID
		// A100-10C: 10 of its 40 GB, a quarter. dev/nb-v/jupyter holds it,
		// idle (0 % on GPU_UTIL, the guest's only activity field): a
		// quarter of 2.00 EUR/h, 0.50 × 48 h = 24 EUR — never a whole A100's
		// 96 (what the simulation's own ledger charged the physical GPU) —
		// and its release frees 0.50 × 730.5 = 365.25 EUR a month.
		name: "vGPU guest GRID A100-10C", shapes: history.DCGMShapes{VGPUModel: "GRID A100-10C"},
		variant: func(t *testing.T) []*sim.Scenario {
			return []*sim.Scenario{dayOneVariant(t, "gpu-node-d", "  - model: NVIDIA H100 80GB HBM3\n", "  - model: NVIDIA A100-SXM4-40GB\n"+
				"workloads:\n  - {name: nb, pattern: idle, fb_mib: 4000}\n"+
				"pods:\n  - {namespace: dev, pod: nb-v, container: jupyter, resource: nvidia.com/gpu, device: {gpu: 0}, workload: nb}\n")}
		},
		want: map[string]nsWant{"dev": {held: 48, busy: 0, busyKnown: true, eur: 24}, "": {}},
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, 0.5*730.5, "release dev/nb-v/jupyter")
			if !warned(r, "GRID A100-10C", "10/40") {
				t.Errorf("warnings %q, want one saying the guest is priced at 10/40 of an A100 40GB", r.Warnings)
			}
		},
	}, {
		// dcgm-exporter 1.x: none of the names the source reads. The report
		// refuses, naming the version and a name it found.
		name: "1.x names", shapes: history.DCGMShapes{Names1x: true}, nodes: []string{"gpu-node-a"},
		check: func(t *testing.T, _ *Report, err error) {
			for _, w := range []string{"dcgm-exporter 1.x", "dcgm_gpu_utilization"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one saying %q", err, w)
				}
			}
		},
	}}
}

// checkMIGResource holds the MIG holding serving/embed-0/server to the
// resource its pod requests, in its row and its team's Kueue quota, and a
// warning naming the exporter's spelling beside the resource.
func checkMIGResource(t *testing.T, r *Report, resource, spelled string) {
	t.Helper()
	for _, h := range r.Holdings {
		if h.Pod == "embed-0" && h.Resource != resource {
			t.Errorf("holding %s: resource %s, want %s", h.Name(), h.Resource, resource)
		}
	}
	if k := kueueKeys(t, r); !slices.Contains(k, "serving "+resource) || slices.ContainsFunc(k, func(s string) bool { return strings.Contains(s, spelled) }) {
		t.Errorf("Kueue quotas %q, want serving %s and none of %s", k, resource, spelled)
	}
	if !warned(r, spelled, resource) {
		t.Errorf("warnings %q, want one naming %s and %s", r.Warnings, spelled, resource)
	}
	if _, ok := recommendation(r, "drain", "gpu-node-b"); ok {
		t.Errorf("recommendations %+v: drain gpu-node-b, whose MIG instance runs a pod", r.Recommendations)
	}
}

// TestDayOneShapes: the day-one fleet in each real shape (shapeRows) reads
// as the ledger would, or is refused by name.
func TestDayOneShapes(t *testing.T) {
	for _, row := range shapeRows() {
		t.Run(row.name, func(t *testing.T) {
			if !row.read {
				t.Skip(notReadYet)
			}
			nodes := dayOneNodes(t, row.nodes...)
			if row.variant != nil {
				nodes = row.variant(t)
			}
			o := dayOneOptions()
			o.LegacyHostnameLabel = row.legacy
			if !row.shapes.Zero() {
				sh := row.shapes
				o.DCGMExporter.Shapes = &sh
			}
			r, err := dayOneReport(t, simulateDayOne(t, o, nodes, nil), dayOneConfig(t))
			switch {
			case row.want == nil && err == nil:
				t.Fatalf("a report, want an error")
			case row.want != nil && err != nil:
				t.Fatal(err)
			case row.want != nil:
				checkNamespaces(t, r, row.want)
			}
			if row.check != nil {
				row.check(t, r, err)
			}
		})
	}
}
