package dcgmexporter

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// TestExporterPod: the exporter pods' names of the real output
// (testdata/real) are dcgm-exporter pods; nodes' names, a name without the
// pod's five characters and a look-alike are not.
func TestExporterPod(t *testing.T) {
	for _, name := range []string{"nvidia-dcgm-exporter-57pvc", "dcgm-exporter-6ldbb", "dcgm-exporter-lcxpl", "dcgm-exporter-wwwjh",
		"nvidia-dcgm-exporter-2xrln", "dcgm-exporter-1615787551-qc8dm", "dcgm-gpu-exporter-dcgm-exporter-abcde"} {
		if !exporterPod(name) {
			t.Errorf("%q: not an exporter pod", name)
		}
	}
	for _, name := range []string{"gpu-node-1", "computeinstance-e00c1p6dpy98xytphp", "ip-10-0-180-136.ec2.internal", "nvidia-dcgm-exporter",
		"dcgm-exporter-57pv", "mydcgm-exporter-57pvc", "l40s.example.com", ""} {
		if exporterPod(name) {
			t.Errorf("%q: an exporter pod", name)
		}
	}
}

// TestHostOf: the named label's value, whatever it is; else the first label
// naming a node kube-state-metrics knows, before an earlier one that does
// not; else the first that names no exporter pod; else none.
func TestHostOf(t *testing.T) {
	pod := "nvidia-dcgm-exporter-57pvc"
	for _, tc := range []struct {
		name   string
		labels pmodel.Metric
		flag   string
		known  []string
		want   string
	}{
		{"hostname", pmodel.Metric{"hostname": "n1", "node": "n2"}, "", nil, "n1"},
		{"Hostname the pod, node relabelled (gpu-operator #472)", pmodel.Metric{"Hostname": pmodel.LabelValue(pod), "node": "aks-1"}, "", nil, "aks-1"},
		{"the pod in hostname, kubernetes_node", pmodel.Metric{"hostname": pmodel.LabelValue(pod), "kubernetes_node": "n1"}, "", nil, "n1"},
		{"the node kube-state-metrics knows first", pmodel.Metric{"Hostname": "vm-17", "nodename": "n1"}, "", []string{"n1"}, "n1"},
		{"no node known: the first", pmodel.Metric{"Hostname": "vm-17", "nodename": "n1"}, "", []string{"n9"}, "vm-17"},
		{"the named label first", pmodel.Metric{"hostname": "n1", "k8s_node": "n2"}, "k8s_node", []string{"n1"}, "n2"},
		{"the named label missing", pmodel.Metric{"hostname": "n1"}, "k8s_node", nil, "n1"},
		{"only the pod", pmodel.Metric{"Hostname": pmodel.LabelValue(pod)}, "", nil, ""},
		{"an empty value", pmodel.Metric{"hostname": "", "node": "n1"}, "", nil, "n1"},
		{"none", pmodel.Metric{"gpu": "0"}, "", nil, ""},
	} {
		known := map[string]bool{}
		for _, n := range tc.known {
			known[n] = true
		}
		if got := hostOf(hostLabelsOf(tc.labels, tc.flag), known); got != tc.want {
			t.Errorf("%s: node %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNoNode: without a node label the error says how to add one; with the
// exporter's pod in Hostname it names the pod and the labels there are.
func TestNoNode(t *testing.T) {
	s := &dcgmSeries{dev: model.DeviceKey{UUID: "GPU-1"}, model: "NVIDIA A100 80GB PCIe", gpu: "0"}
	if err := noNode(s); !strings.Contains(err.Error(), "no hostname label, nor Hostname, nodename or node, nor kubernetes_node") ||
		!strings.Contains(err.Error(), "--dcgm-exporter.node-label") {
		t.Errorf("no labels: %v", err)
	}
	s.hosts = hostLabelsOf(pmodel.Metric{"Hostname": "nvidia-dcgm-exporter-57pvc", "nodename": "dcgm-exporter-6ldbb"}, "")
	if err := noNode(s); !strings.Contains(err.Error(), `Hostname="nvidia-dcgm-exporter-57pvc" is the exporter's pod, not a node`) ||
		!strings.Contains(err.Error(), `(Hostname="nvidia-dcgm-exporter-57pvc", nodename="dcgm-exporter-6ldbb")`) {
		t.Errorf("the pod: %v", err)
	}
}

// TestDropScrapeTargets: of the pods labelled on a node's devices, the
// scrape target's are dropped — it requests no GPU, names itself the
// target (its pod a dcgm-exporter's or the service's DaemonSet's, its
// container dcgm-exporter) and holds no claim — and noted; a pod that requests a GPU stays whatever its name,
// and so does one named otherwise (a holder kube-state-metrics lacks a
// request of). Without kube-state-metrics for the node the name alone
// tells.
func TestDropScrapeTargets(t *testing.T) {
	exporter := model.HolderKey{Namespace: "gpu-operator", Pod: "nvidia-dcgm-exporter-57pvc", Container: "nvidia-dcgm-exporter"}
	custom := model.HolderKey{Namespace: "monitoring", Pod: "gpu-metrics-x", Container: "dcgm-exporter"}
	served := model.HolderKey{Namespace: "monitoring", Pod: "gpu-telemetry-x2b9k", Container: "exporter"}
	holder := model.HolderKey{Namespace: "ml", Pod: "train-0", Container: "main"}
	unrequested := model.HolderKey{Namespace: "ml", Pod: "eval-0", Container: "main"}
	named := model.HolderKey{Namespace: "ml", Pod: "dcgm-exporter-abcde", Container: "main"} // a holder named so, requesting
	for _, tc := range []struct {
		name    string
		ksm     bool
		dra     bool
		service string
		holders []model.HolderKey
		want    []model.HolderKey
	}{
		{"the exporter's pod", true, false, "", []model.HolderKey{exporter}, nil},
		{"a holder", true, false, "", []model.HolderKey{holder}, []model.HolderKey{holder}},
		{"a holder without its request", true, false, "", []model.HolderKey{unrequested}, []model.HolderKey{unrequested}},
		{"named so, but requesting", true, false, "", []model.HolderKey{named}, []model.HolderKey{named}},
		{"its container dcgm-exporter", true, false, "", []model.HolderKey{custom}, nil},
		{"a pod of the service's DaemonSet", true, false, "gpu-telemetry", []model.HolderKey{served}, nil},
		// NVIDIA/aicr's evidence: the service label on the held GPU's series too.
		{"a holder scraped through the service", false, false, "nvidia-dcgm-exporter", []model.HolderKey{unrequested}, []model.HolderKey{unrequested}},
		{"a DRA claim", true, true, "", []model.HolderKey{exporter}, []model.HolderKey{exporter}},
		{"no kube-state-metrics: by name", false, false, "", []model.HolderKey{exporter, unrequested}, []model.HolderKey{unrequested}},
		{"no kube-state-metrics: named so", false, false, "", []model.HolderKey{named}, nil},
	} {
		p := newGridPoint()
		s := &dcgmSeries{dev: model.DeviceKey{UUID: "GPU-1"}, host: "n1", dra: tc.dra, service: tc.service}
		r := p.device(s)
		r.holders = slices.Clone(tc.holders)
		if tc.ksm {
			p.capacity["n1"] = map[string]float64{"pods": 110}
			for _, h := range []model.HolderKey{holder, named} {
				p.requests = append(p.requests, ksmRequest{holder: h, node: "n1", resource: ksmGPU, value: 1})
			}
		}
		dropScrapeTargets(p)
		if !slices.Equal(r.holders, tc.want) {
			t.Errorf("%s: holders %v, want %v", tc.name, r.holders, tc.want)
		}
		for _, h := range tc.holders {
			if p.targets[h] == slices.Contains(tc.want, h) {
				t.Errorf("%s: %v noted as target %v", tc.name, h, p.targets[h])
			}
		}
	}
}

// TestOfferedProfiles: kube-state-metrics' MIG resources as profiles; none
// offered, or not MIG, are none.
func TestOfferedProfiles(t *testing.T) {
	got := offeredProfiles(map[string]float64{"nvidia_com_mig_3g_40gb": 2, "nvidia_com_mig_1g_10gb_me": 1, "nvidia_com_mig_7g_80gb": 0,
		"nvidia_com_gpu": 1, "pods": 110, "nvidia_com_mig_x": 1})
	slices.Sort(got)
	if want := []string{"1g.10gb+me", "3g.40gb"}; !slices.Equal(got, want) {
		t.Errorf("offered %q, want %q", got, want)
	}
}

// TestResolveProfiles: an instance is the profile its node offers it as;
// without the node's capacity, its model's table says; a spelling neither
// knows stays as written.
func TestResolveProfiles(t *testing.T) {
	for _, tc := range []struct {
		name, model, spelled string
		capacity             map[string]float64
		want                 string
	}{
		{"offered", "NVIDIA A100 80GB PCIe", "7g.79gb", map[string]float64{"nvidia_com_mig_7g_80gb": 1}, "7g.80gb"},
		{"no capacity: the table", "NVIDIA A100 80GB PCIe", "7g.79gb", nil, "7g.80gb"},
		{"no capacity, no table", "NVIDIA H100 NVL", "1g.11gb", nil, "1g.11gb"},
		{"offered, no table", "NVIDIA H100 NVL", "1g.11gb", map[string]float64{"nvidia_com_mig_1g_12gb": 7}, "1g.12gb"},
		{"not offered", "NVIDIA H100 80GB HBM3", "3g.39gb", map[string]float64{"nvidia_com_mig_1g_10gb": 7}, "3g.39gb"},
	} {
		gpu := newDeviceReading(&dcgmSeries{dev: model.DeviceKey{UUID: "GPU-1"}, model: tc.model})
		in := newDeviceReading(&dcgmSeries{dev: model.DeviceKey{UUID: "GPU-1", GI: "1", Profile: tc.spelled}, model: tc.model})
		resolveProfiles(tc.capacity, tc.capacity != nil, []string{"GPU-1"}, map[string]*deviceReading{"GPU-1": gpu}, map[string][]*deviceReading{"GPU-1": {in}})
		if in.profile != tc.want {
			t.Errorf("%s: %q read as %q, want %q", tc.name, tc.spelled, in.profile, tc.want)
		}
	}
}

// TestDecide: the graphics engine's activity is the activity; where it
// reads idle (below the threshold, 0.05 here) while GPU utilization (a
// ratio, as read) shows work (at or above it) by more than GPU_UTIL's
// rounding to a whole percent, GPU utilization is, and the disagreement is
// noted; never on a MIG instance.
func TestDecide(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name      string
		gi        string
		gr, util  float64
		want      float64
		disagrees bool
	}{
		{"stuck at 0 (#662)", "", 0, 0.99, 0.99, true},
		{"GPU_UTIL at the threshold", "", 0, 0.05, 0.05, true},
		{"GPU_UTIL below it", "", 0, 0.04, 0, false},
		{"GR at the threshold", "", 0.05, 0.90, 0.05, false},
		{"light work", "", 0.02, 0.40, 0.40, true},
		// 0.05 − 0.045 = 0.005: GPU_UTIL's rounding, no disagreement.
		{"within the rounding", "", 0.045, 0.05, 0.045, false},
		{"just past it", "", 0.0449, 0.05, 0.05, true},
		{"both busy", "", 0.156205, 0.91, 0.156205, false}, // testdata/real/ericsson-ccd-t4.prom
		{"no GR", "", nan, 0.40, 0.40, false},
		{"no GPU_UTIL", "", 0, nan, 0, false},
		{"a MIG instance", "1", 0, 0.90, 0, false},
	} {
		r := newDeviceReading(&dcgmSeries{dev: model.DeviceKey{UUID: "GPU-1", GI: tc.gi}})
		r.gr, r.util = tc.gr, tc.util
		r.decide(0.05)
		if math.Abs(r.activity()-tc.want) > 1e-12 || r.disagrees != tc.disagrees {
			t.Errorf("%s: activity %g, disagrees %v; want %g, %v", tc.name, r.activity(), r.disagrees, tc.want, tc.disagrees)
		}
	}
}

// TestGuestBook: a vGPU type is priced as its fraction of its board's entry
// — flat or capital + overhead, and the rental prices, × 10/40 for GRID
// A100-10C — before the
// book's own entries, which still price the physical GPUs; a type of an
// unknown board, or of a board the book does not price, is an error; other
// models get no entry.
func TestGuestBook(t *testing.T) {
	book, err := cost.Parse([]byte("currency: EUR\nmodels:\n  - {match: \"A100\", purchase_eur: 14016, amortization_years: 1, overhead_eur_per_hour: 0.4, cloud_eur_per_hour: 4.00, cloud_reserved_eur_per_hour: 2.60}\n  - {match: \"L4\", hourly_eur: 0.80}\n"), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := newGuestBook(book)
	for _, m := range []string{"GRID A100-10C", "NVIDIA A100-SXM4-40GB", "GRID A100-10C"} {
		if err := g.see(m); err != nil {
			t.Fatal(err)
		}
	}
	// 14016 EUR over 8760 h = 1.60 EUR/h capital, 0.40 overhead: 2.00 EUR/h;
	// a quarter 0.50.
	if r := g.Book().Price("GRID A100-10C").Rate(math.NaN()); math.Abs(r.Total()-0.50) > 1e-9 || math.Abs(r.Capital-0.40) > 1e-9 {
		t.Errorf("GRID A100-10C at %+v, want 0.40 capital + 0.10 overhead", r)
	}
	// Renting a quarter of an A100: 4.00 × 10/40 = 1.00 EUR/h on demand,
	// 2.60 × 10/40 = 0.65 reserved; own-or-rent compares the guest's 0.50
	// with them as it compares the whole board's 2.00 with 4.00 and 2.60.
	if p := g.Book().Price("GRID A100-10C"); !p.HasCloud || math.Abs(p.CloudEURPerHour-1.00) > 1e-9 || math.Abs(p.CloudReservedEURPerHour-0.65) > 1e-9 {
		t.Errorf("GRID A100-10C rents at %v on demand, %v reserved, want 1.00 and 0.65", p.CloudEURPerHour, p.CloudReservedEURPerHour)
	}
	if p := g.Book().Price("NVIDIA A100-SXM4-40GB"); math.Abs(p.CloudEURPerHour-4.00) > 1e-9 {
		t.Errorf("the A100 itself rents at %v, want 4.00", p.CloudEURPerHour)
	}
	if r := g.Book().Price("NVIDIA A100-SXM4-40GB").Rate(math.NaN()); math.Abs(r.Total()-2.00) > 1e-9 {
		t.Errorf("the A100 itself at %+v, want 2.00 EUR/h", r)
	}
	if len(g.Book().Models) != 3 || len(book.Models) != 2 {
		t.Errorf("%d entries (the book's %d), want one added once", len(g.Book().Models), len(book.Models))
	}
	if w := g.warnings("", map[string]*dcgmGPU{"GPU-1": {model: "GRID A100-10C"}}); len(w) != 1 || !strings.Contains(w[0], "1 GPU(s) are vGPU guests of type GRID A100-10C, a part of an NVIDIA A100 40GB: each is priced at 10/40 of its 40 GB (25.0 %)") {
		t.Errorf("warnings %q", w)
	}
	for m, want := range map[string]string{
		"NVIDIA A10-24Q":   `vGPU type "NVIDIA A10-24Q": its board A10 is none`,
		"NVIDIA A100D-20C": `vGPU type "NVIDIA A100D-20C" is part of an NVIDIA A100 80GB, which price book b.yaml prices not`,
	} {
		nb, _ := cost.Parse([]byte("currency: EUR\nmodels:\n  - {match: \"40GB\", hourly_eur: 1}\n"), "b.yaml")
		if err := newGuestBook(nb).see(m); err == nil || !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(err.Error()) {
			t.Errorf("%s: error %v, want %q", m, err, want)
		}
	}
}
