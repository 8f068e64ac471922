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
// testdata/real), applied to the nodes of the fleet of dayone_test.go that
// show it, everything else unchanged. What the report must say is what the
// ledger would — each node's hand figures below — with the shape read for
// what it is, or a refusal that names it.
//
// The rows are scraped every 5 minutes, so that the grid is 5 min: a tenth
// of the simulation of 30 s scrapes, for the same figures but train-0's
// end, known to the 5 min before it (its last labelled scrape). Every GPU
// 2.00 EUR/h over 48 h, as in dayone_test.go:
//
//	gpu-node-a  serving 96 h busy (192 EUR), dev 48 h idle (96 EUR)
//	gpu-node-b  serving/embed-0 24 h (48 EUR: half the MIG GPU by the compute
//	            weight), batch b = 30 h − 5 min busy (2b EUR), no holder
//	            72 − b h: the free instance 24 h and GPU 1 after the Job 48 − b h
//	gpu-node-c  dev-ann and dev-ben 12 h each (24 EUR, 1 of 4 replicas), no
//	            holder 24 h (the free replicas)
//	gpu-node-d  no holder 48 h (96 EUR)

// shapeStep is the rows' scrape interval and grid.
const shapeStep = 5 * time.Minute

// shapeRow is one shape on nodes of the day-one fleet.
type shapeRow struct {
	name   string
	shapes history.DCGMShapes
	legacy bool   // the host label as Hostname (--collector.legacy-hostname-label)
	names  string // the names dcgm-exporter writes (history.Names); "": 4.8's
	// nodes: the fleet's nodes the row runs, or variant builds them.
	nodes   []string
	variant func(t *testing.T) []*sim.Scenario
	config  func(cfg *Config) // (optional) changes the report's configuration
	want    map[string]nsWant // the namespaces' hand figures; nil: the report must fail
	// hours is how long the history is (0: 48 h): a row that must fail needs
	// no more than two.
	hours int
	check func(t *testing.T, r *Report, err error)
}

// node hand figures (above), per namespace ("" no holder).
func nodeFigures(name string) map[string]nsWant {
	b := 30 - shapeStep.Hours()
	return map[string]map[string]nsWant{
		"gpu-node-a": {"serving": {held: 96, busy: 96, busyKnown: true, eur: 192}, "dev": {held: 48, busy: 0, busyKnown: true, eur: 96}},
		"gpu-node-b": {"serving": {held: 24, eur: 48}, "batch": {held: b, busy: b, busyKnown: true, eur: 2 * b}, "": {unallocated: 72 - b, eur: 2 * (72 - b)}},
		"gpu-node-c": {"dev-ann": {held: 12, eur: 24}, "dev-ben": {held: 12, eur: 24}, "": {unallocated: 24, eur: 48}},
		"gpu-node-d": {"": {unallocated: 48, eur: 96}},
	}[name]
}

// figures adds the hand figures of nodes; a namespace's busy hours are
// known when they are on every node it is on. "" is always there.
func figures(nodes ...string) map[string]nsWant {
	out := map[string]nsWant{"": {}}
	seen := map[string]bool{}
	for _, n := range nodes {
		for ns, w := range nodeFigures(n) {
			s := out[ns]
			known := w.busyKnown && (s.busyKnown || !seen[ns])
			out[ns] = nsWant{held: s.held + w.held, busy: s.busy + w.busy, unallocated: s.unallocated + w.unallocated,
				unknown: s.unknown + w.unknown, eur: s.eur + w.eur, busyKnown: known}
			seen[ns] = true
		}
	}
	return out
}

// kueueKeys returns the report's Kueue quotas as "team resource" keys.
func kueueKeys(t *testing.T, r *Report) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(applyspec.CheckKueue(t, r.Apply.Kueue)))
}

// checkKueue holds the report's Kueue quotas' keys to want.
func checkKueue(t *testing.T, r *Report, want ...string) {
	t.Helper()
	if k := kueueKeys(t, r); !slices.Equal(k, want) {
		t.Errorf("Kueue quotas %q, want %q", k, want)
	}
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

// checkNodes holds the report's nodes to want, by name.
func checkNodes(t *testing.T, r *Report, want ...string) {
	t.Helper()
	var nodes []string
	for _, n := range r.Nodes {
		nodes = append(nodes, n.Name)
	}
	if !slices.Equal(nodes, want) {
		t.Errorf("nodes %q, want %q", nodes, want)
	}
}

// checkError holds err to say each of parts.
func checkError(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, w := range parts {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one saying %q", err, w)
		}
	}
}

// checkMIGResource holds the MIG holding serving/embed-0/server to the
// resource its pod requests, in its row and its team's Kueue quota, and a
// warning naming the exporter's spelling beside the resource; gpu-node-b,
// whose MIG instance runs a pod, is not drained.
func checkMIGResource(t *testing.T, r *Report, resource, spelled string) {
	t.Helper()
	for _, h := range r.Holdings {
		if h.Pod == "embed-0" && h.Resource != resource {
			t.Errorf("holding %s: resource %s, want %s", h.Name(), h.Resource, resource)
		}
	}
	checkKueue(t, r, "batch nvidia.com/gpu", "serving "+resource)
	if !warned(r, spelled, resource) {
		t.Errorf("warnings %q, want one naming %s and %s", r.Warnings, spelled, resource)
	}
	checkRecommendations(t, r, 0)
}

func shapeRows() []shapeRow {
	b := 30 - shapeStep.Hours()
	return []shapeRow{{
		// NVIDIA's recipes: a GPU without a holder carries the exporter's
		// own pod — gpu-node-b's MIG GPU, its free instance and GPU 1 after
		// the Job, gpu-node-c's time-sliced GPU, gpu-node-d's. The exporter's
		// pods request no GPU in kube-state-metrics and are named so: no
		// holder. The nodes' hand figures: no namespace gpu-operator, no
		// advice or queue for it, the time-sliced GPU split as before, and
		// gpu-node-d drained.
		name: "ServiceMonitor honorLabels true", shapes: history.DCGMShapes{ScrapeTarget: history.HonorLabels},
		nodes: []string{"gpu-node-b", "gpu-node-c", "gpu-node-d"}, want: figures("gpu-node-b", "gpu-node-c", "gpu-node-d"),
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, monthly, "drain gpu-node-d")
			checkKueue(t, r, "batch nvidia.com/gpu", "dev-ann nvidia.com/gpu.shared", "dev-ben nvidia.com/gpu.shared", "serving nvidia.com/mig-3g.40gb")
			if !warned(r, "scrape target", "gpu-operator/nvidia-dcgm-exporter-", "no holder") {
				t.Errorf("warnings %q, want one saying the exporter's pods are the scrape target, read as no holder", r.Warnings)
			}
		},
	}, {
		// The same under dcgm-exporter 4.10's names: the shapes are the labels'.
		name: "ServiceMonitor honorLabels true, 4.10's names", shapes: history.DCGMShapes{ScrapeTarget: history.HonorLabels}, names: history.NamesCurrent,
		nodes: []string{"gpu-node-b", "gpu-node-c", "gpu-node-d"}, want: figures("gpu-node-b", "gpu-node-c", "gpu-node-d"),
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, monthly, "drain gpu-node-d")
			if !warned(r, "scrape target", "gpu-operator/nvidia-dcgm-exporter-", "no holder") {
				t.Errorf("warnings %q, want one saying the exporter's pods are the scrape target, read as no holder", r.Warnings)
			}
		},
	}, {
		// honorLabels false: every series the exporter's pod, the holders
		// in exported_*: read from those.
		name: "ServiceMonitor honorLabels false", shapes: history.DCGMShapes{ScrapeTarget: history.NoHonorLabels},
		nodes: []string{"gpu-node-b", "gpu-node-c"}, want: figures("gpu-node-b", "gpu-node-c"),
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, 0)
			checkKueue(t, r, "batch nvidia.com/gpu", "dev-ann nvidia.com/gpu.shared", "dev-ben nvidia.com/gpu.shared", "serving nvidia.com/mig-3g.40gb")
		},
	}, {
		// gpu-node-b's MIG GPU an A100 80GB in one 7g.80gb instance that
		// serving/embed-0 holds (nvidia.com/mig-7g.80gb), which dcgm-exporter
		// spells 7g.79gb (gpu-operator #687): all 7 compute slices, the
		// whole GPU, 48 h and 96 EUR; GPU 1 as before: batch b, 48 − b h
		// unallocated. The simulation's own ledger (simulate history
		// --summary) says the same: serving 48 h, batch 29.99 h, none 18.01 h.
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
		check: func(t *testing.T, r *Report, _ error) { checkMIGResource(t, r, "nvidia.com/mig-7g.80gb", "7g.79gb") },
	}, {
		// gpu-node-b with its 3g.40gb instances spelled 3g.39gb (illustrative:
		// the spelling rounds the H100 instance's 39.5 GiB down, as 7g.79gb
		// does an A100 80GB's). The free instance is the one the node's
		// capacity of 2 nvidia.com/mig-3g.40gb still offers: unallocated, not
		// unknown; each instance half the GPU, as a 3g.40gb.
		name: "GPU_I_PROFILE 3g.39gb for nvidia.com/mig-3g.40gb, one free", shapes: history.DCGMShapes{MIGProfiles: map[string]string{"3g.40gb": "3g.39gb"}},
		nodes: []string{"gpu-node-b"}, want: figures("gpu-node-b"),
		check: func(t *testing.T, r *Report, _ error) { checkMIGResource(t, r, "nvidia.com/mig-3g.40gb", "3g.39gb") },
	}, {
		// Builds before the node-name fix: Hostname the exporter's pod, the
		// node relabelled into node. The node from node, never the pod: the
		// hand figures and advice, the nodes by their names.
		name: "Hostname the exporter's pod, node relabelled", shapes: history.DCGMShapes{HostnameIsPod: true, NodeLabel: "node"}, legacy: true,
		nodes: []string{"gpu-node-a", "gpu-node-d"}, want: figures("gpu-node-a", "gpu-node-d"),
		check: func(t *testing.T, r *Report, _ error) {
			checkReleaseAndDrain(t, r)
			checkNodes(t, r, "gpu-node-a", "gpu-node-d")
		},
	}, {
		// Hostname the exporter's pod and no label naming the node: the
		// report refuses, naming the pod it will not take for a node and
		// how to name the node.
		name: "Hostname the exporter's pod, no node label", shapes: history.DCGMShapes{HostnameIsPod: true}, legacy: true, nodes: []string{"gpu-node-d"}, hours: 2,
		check: func(t *testing.T, _ *Report, err error) {
			checkError(t, err, `Hostname="nvidia-dcgm-exporter-`, "is the exporter's pod, not a node", "--dcgm-exporter.node-label")
		},
	}, {
		// The node relabelled into a label of the cluster's own naming,
		// named with --dcgm-exporter.node-label.
		name: "a node label named by the flag", shapes: history.DCGMShapes{HostnameIsPod: true, NodeLabel: "k8s_node"}, legacy: true, nodes: []string{"gpu-node-d"},
		config: func(cfg *Config) { cfg.DCGMNodeLabel = "k8s_node" },
		want:   figures("gpu-node-d"),
		check: func(t *testing.T, r *Report, _ error) {
			checkNodes(t, r, "gpu-node-d")
			checkRecommendations(t, r, monthly, "drain gpu-node-d")
		},
	}, {
		// kubernetes_node, one of the labels read without a flag.
		name: "Hostname the exporter's pod, kubernetes_node relabelled", shapes: history.DCGMShapes{HostnameIsPod: true, NodeLabel: "kubernetes_node"},
		nodes: []string{"gpu-node-d"}, want: figures("gpu-node-d"),
		check: func(t *testing.T, r *Report, _ error) { checkNodes(t, r, "gpu-node-d") },
	}, {
		// dcgm-exporter #662 on gpu-node-a and gpu-node-c: GR_ENGINE_ACTIVE 0
		// while GPU_UTIL moves. The GPUs whose signals disagree are named
		// and read by GPU_UTIL: the trainers busy all 96 h, the notebook
		// (0 on both) idle and released, the time-sliced GPU split as
		// always. No trainer is released.
		name: "GR_ENGINE_ACTIVE stuck at 0", shapes: history.DCGMShapes{ProfilingStuckAtZero: true},
		nodes: []string{"gpu-node-a", "gpu-node-c"}, want: figures("gpu-node-a", "gpu-node-c"),
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, monthly, "release dev/notebook-0/jupyter")
			if !warned(r, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "gpu-node-a GPU 0", "gpu-node-a GPU 1", "gpu-node-c GPU 0") ||
				warned(r, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu-node-a GPU 2") {
				t.Errorf("warnings %q, want one naming the 3 GPUs whose signals disagree (not the idle notebook's)", r.Warnings)
			}
		},
	}, {
		// The same under 4.10's names: GPU_UTIL_RATIO, a ratio, is the signal
		// that moves past GR_ENGINE_UTIL_RATIO stuck at 0.
		name: "GR_ENGINE_UTIL_RATIO stuck at 0, 4.10's names", shapes: history.DCGMShapes{ProfilingStuckAtZero: true}, names: history.NamesCurrent,
		nodes: []string{"gpu-node-a", "gpu-node-c"}, want: figures("gpu-node-a", "gpu-node-c"),
		check: func(t *testing.T, r *Report, _ error) {
			checkRecommendations(t, r, monthly, "release dev/notebook-0/jupyter")
			if !warned(r, "GPU utilization", "gpu-node-a GPU 0", "gpu-node-a GPU 1", "gpu-node-c GPU 0") {
				t.Errorf("warnings %q, want one naming the 3 GPUs whose signals disagree", r.Warnings)
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
		want: figures("gpu-node-c"),
		check: func(t *testing.T, r *Report, _ error) {
			for _, h := range r.Holdings {
				if h.Resource != "nvidia.com/gpu" || h.Sharing != "time-slicing" {
					t.Errorf("holding %s: %s, %s; want nvidia.com/gpu, time-slicing", h.Name(), h.Resource, h.Sharing)
				}
			}
			checkKueue(t, r, "dev-ann nvidia.com/gpu", "dev-ben nvidia.com/gpu")
		},
	}, {
		// H100 MIG instances without DCGM_FI_DEV_FB_* (#512): their state
		// comes from their GR_ENGINE_ACTIVE and pod labels, unchanged.
		name: "no framebuffer on MIG instances", shapes: history.DCGMShapes{NoMIGFramebuffer: true},
		nodes: []string{"gpu-node-b"}, want: figures("gpu-node-b"),
	}, {
		// pod="" on the GPUs without a holder, pod_uid="" beside a holder's,
		// DCGM_FI_PROCESS_NAME everywhere: no label of a state.
		name: "empty and extra labels", shapes: history.DCGMShapes{EmptyAndExtraLabels: true},
		nodes: []string{"gpu-node-b", "gpu-node-c"}, want: figures("gpu-node-b", "gpu-node-c"),
		check: func(t *testing.T, r *Report, _ error) { checkRecommendations(t, r, 0) },
	}, {
		name: "no pci_bus_id or driver label", shapes: history.DCGMShapes{NoPCIBusIDOrDriver: true},
		nodes: []string{"gpu-node-b"}, want: figures("gpu-node-b"),
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
		name: "1.x names", shapes: history.DCGMShapes{Names1x: true}, nodes: []string{"gpu-node-d"}, hours: 2,
		check: func(t *testing.T, _ *Report, err error) {
			checkError(t, err, "dcgm-exporter 1.x", "dcgm_gpu_utilization")
		},
	}}
}

// TestDayOneShapes: the day-one fleet's nodes in each real shape
// (shapeRows) read as the ledger would, or are refused by name.
func TestDayOneShapes(t *testing.T) {
	for _, row := range shapeRows() {
		t.Run(row.name, func(t *testing.T) {
			nodes := row.nodes
			var scenarios []*sim.Scenario
			if row.variant != nil {
				scenarios = row.variant(t)
			} else {
				scenarios = dayOneNodes(t, nodes...)
			}
			o := dayOneOptions()
			o.SampleInterval, o.ScrapeInterval, o.LegacyHostnameLabel = shapeStep, shapeStep, row.legacy
			o.Names.Mode = row.names
			if row.hours > 0 {
				o.Duration = time.Duration(row.hours) * time.Hour
			}
			if !row.shapes.Zero() {
				sh := row.shapes
				o.DCGMExporter.Shapes = &sh
			}
			cfg := dayOneConfig(t)
			if row.config != nil {
				row.config(&cfg)
			}
			r, err := dayOneReport(t, simulateDayOne(t, o, scenarios, nil), cfg)
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
