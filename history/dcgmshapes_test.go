package history

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
)

// migNode is the day-one node with a MIG GPU: GPU 0 in 2 × 3g.40gb,
// serving/embed-0/server on instance 1, instance 2 free; GPU 1
// batch/train-0/main (training, until 30 h).
const migNode = "../testdata/scenarios/dayone/gpu-node-b.yaml"

// shapeScrape is the first scrape of migNode written with shapes, and the
// same scrape without them.
func shapeScrape(t *testing.T, sh *DCGMShapes, legacy bool) (with, without []*dto.MetricFamily) {
	t.Helper()
	o := Options{SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second, LegacyHostnameLabel: legacy}
	without = runOptions(t, migNode, time.Second, o).scrapes[0]
	o.DCGMExporter.Shapes = sh
	with = runOptions(t, migNode, time.Second, o).scrapes[0]
	return with, without
}

// dcgmSamples returns the DCGM_* samples of a scrape (also the 1.x dcgm_*
// ones) with their family's name.
func dcgmSamples(mfs []*dto.MetricFamily) (names []string, ms []*dto.Metric) {
	for _, mf := range mfs {
		if strings.HasPrefix(strings.ToLower(mf.GetName()), "dcgm_") {
			for _, m := range mf.GetMetric() {
				names, ms = append(names, mf.GetName()), append(ms, m)
			}
		}
	}
	return names, ms
}

// hasLabel reports whether m has the label name, empty or not.
func hasLabel(m *dto.Metric, name string) bool {
	return slices.ContainsFunc(m.GetLabel(), func(p *dto.LabelPair) bool { return p.GetName() == name })
}

// holderOf is the namespace/pod/container labelled on m, from the labels
// prefix+namespace …
func holderOf(m *dto.Metric, prefix string) string {
	return labelValue(m, prefix+"namespace") + "/" + labelValue(m, prefix+"pod") + "/" + labelValue(m, prefix+"container")
}

var exporterPodName = regexp.MustCompile(`^nvidia-dcgm-exporter-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// TestDCGMShapes: each shape changes what it says on migNode's first scrape
// and nothing else — the same samples (but where it leaves some out), with
// sorted labels.
func TestDCGMShapes(t *testing.T) {
	// The held devices: train-0 on GPU 1, embed-0 on GPU 0's instance 1.
	heldBy := func(m *dto.Metric) string {
		switch {
		case labelValue(m, "gpu") == "1":
			return "batch/train-0/main"
		case labelValue(m, "GPU_I_ID") == "1":
			return "serving/embed-0/server"
		}
		return ""
	}
	profMoved := 0 // profiling samples above 0 without ProfilingStuckAtZero
	for _, tc := range []struct {
		name   string
		sh     DCGMShapes
		legacy bool
		// same: the scrape keeps every DCGM_* sample; check holds each
		// shaped sample (family, sample, the same sample unshaped).
		same  bool
		check func(t *testing.T, family string, m, was *dto.Metric)
		after func(t *testing.T, with []*dto.MetricFamily)
	}{
		{name: "honorLabels true", sh: DCGMShapes{ScrapeTarget: HonorLabels}, same: true, check: func(t *testing.T, _ string, m, _ *dto.Metric) {
			want := heldBy(m)
			if want == "" {
				want = "gpu-operator/" + labelValue(m, "pod") + "/nvidia-dcgm-exporter"
				if !exporterPodName.MatchString(labelValue(m, "pod")) {
					t.Errorf("pod %q, want the exporter's", labelValue(m, "pod"))
				}
			}
			if got := holderOf(m, ""); got != want || hasLabel(m, "exported_pod") {
				t.Errorf("labelled %s (exported_pod %v), want %s", got, hasLabel(m, "exported_pod"), want)
			}
			checkTarget(t, m)
		}, after: checkExporterPodInKubeState},
		{name: "honorLabels false", sh: DCGMShapes{ScrapeTarget: NoHonorLabels}, same: true, check: func(t *testing.T, _ string, m, _ *dto.Metric) {
			if got := holderOf(m, ""); !strings.HasPrefix(got, "gpu-operator/nvidia-dcgm-exporter-") || !strings.HasSuffix(got, "/nvidia-dcgm-exporter") {
				t.Errorf("labelled %s, want the exporter's pod", got)
			}
			if want := heldBy(m); want != "" && holderOf(m, "exported_") != want || want == "" && hasLabel(m, "exported_pod") {
				t.Errorf("exported %s, want %q", holderOf(m, "exported_"), want)
			}
			checkTarget(t, m)
		}, after: checkExporterPodInKubeState},
		{name: "Hostname the exporter's pod, node relabelled", sh: DCGMShapes{HostnameIsPod: true, NodeLabel: "node"}, legacy: true, same: true,
			check: func(t *testing.T, _ string, m, was *dto.Metric) {
				if !exporterPodName.MatchString(labelValue(m, "Hostname")) || labelValue(m, "node") != "gpu-node-b" || labelValue(was, "Hostname") != "gpu-node-b" {
					t.Errorf("Hostname %q, node %q (was %q), want the exporter's pod and gpu-node-b", labelValue(m, "Hostname"), labelValue(m, "node"), labelValue(was, "Hostname"))
				}
			}},
		{name: "MIG profile spelled otherwise", sh: DCGMShapes{MIGProfiles: map[string]string{"3g.40gb": "3g.39gb"}}, same: true,
			check: func(t *testing.T, _ string, m, was *dto.Metric) {
				if want := map[string]string{"": "", "3g.40gb": "3g.39gb"}[labelValue(was, "GPU_I_PROFILE")]; labelValue(m, "GPU_I_PROFILE") != want {
					t.Errorf("GPU_I_PROFILE %q, want %q", labelValue(m, "GPU_I_PROFILE"), want)
				}
			},
			after: func(t *testing.T, with []*dto.MetricFamily) {
				// kube-state-metrics still names the resource the device plugin offers.
				if c := familyOf(with, "kube_node_status_capacity"); !slices.ContainsFunc(c.GetMetric(), func(m *dto.Metric) bool {
					return labelValue(m, "resource") == "nvidia_com_mig_3g_40gb"
				}) {
					t.Error("capacity lacks nvidia_com_mig_3g_40gb")
				}
			}},
		{name: "profiling stuck at 0", sh: DCGMShapes{ProfilingStuckAtZero: true}, same: true, check: func(t *testing.T, family string, m, was *dto.Metric) {
			prof := strings.HasPrefix(family, "DCGM_FI_PROF_")
			if prof && was.GetGauge().GetValue() != 0 {
				profMoved++
			}
			if got, w := m.GetGauge().GetValue()+m.GetCounter().GetValue(), was.GetGauge().GetValue()+was.GetCounter().GetValue(); prof && got != 0 || !prof && got != w {
				t.Errorf("%s = %g, was %g", family, got, w)
			}
		}, after: func(t *testing.T, _ []*dto.MetricFamily) {
			if profMoved == 0 {
				t.Error("no profiling sample was above 0 without the shape")
			}
		}},
		{name: "no framebuffer on MIG instances", sh: DCGMShapes{NoMIGFramebuffer: true}, after: func(t *testing.T, with []*dto.MetricFamily) {
			for _, f := range []string{"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"} {
				var gpus, instances int
				for _, m := range familyOf(with, f).GetMetric() {
					if labelValue(m, "GPU_I_ID") != "" {
						instances++
					} else {
						gpus++
					}
				}
				if gpus != 2 || instances != 0 {
					t.Errorf("%s: %d GPUs, %d instances; want 2 and none", f, gpus, instances)
				}
			}
			if n := len(familyOf(with, "DCGM_FI_PROF_GR_ENGINE_ACTIVE").GetMetric()); n != 4 {
				t.Errorf("%d GR_ENGINE_ACTIVE samples, want the GPUs' and instances' 4", n)
			}
		}},
		{name: "empty and extra labels", sh: DCGMShapes{EmptyAndExtraLabels: true}, same: true, check: func(t *testing.T, _ string, m, _ *dto.Metric) {
			if labelValue(m, "DCGM_FI_PROCESS_NAME") != "/usr/bin/dcgm-exporter" {
				t.Error("no DCGM_FI_PROCESS_NAME")
			}
			held := heldBy(m) != ""
			if held != hasLabel(m, "pod_uid") || held != (labelValue(m, "pod") != "") || !hasLabel(m, "pod") || !hasLabel(m, "namespace") || !hasLabel(m, "container") {
				t.Errorf("labels %v on a device held %v: want pod_uid beside a holder, empty pod labels otherwise", labelNames(m), held)
			}
		}},
		{name: "no pci_bus_id or driver", sh: DCGMShapes{NoPCIBusIDOrDriver: true}, same: true, check: func(t *testing.T, _ string, m, was *dto.Metric) {
			if hasLabel(m, "pci_bus_id") || hasLabel(m, "DCGM_FI_DRIVER_VERSION") || len(m.GetLabel()) != len(was.GetLabel())-2 {
				t.Errorf("labels %v, want %v less pci_bus_id and DCGM_FI_DRIVER_VERSION", labelNames(m), labelNames(was))
			}
		}},
		{name: "vGPU guest", sh: DCGMShapes{VGPUModel: "GRID A100-10C"}, check: func(t *testing.T, family string, m, _ *dto.Metric) {
			if labelValue(m, "modelName") != "GRID A100-10C" {
				t.Errorf("modelName %q", labelValue(m, "modelName"))
			}
			if !slices.Contains([]string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
				"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"}, family) {
				t.Errorf("family %s written", family)
			}
		}, after: func(t *testing.T, with []*dto.MetricFamily) {
			if familyOf(with, "DCGM_FI_DEV_GPU_UTIL") == nil || familyOf(with, "DCGM_FI_DEV_FB_USED") == nil {
				t.Error("no GPU_UTIL or FB_USED")
			}
		}},
		{name: "1.x names", sh: DCGMShapes{Names1x: true}, check: func(t *testing.T, family string, m, _ *dto.Metric) {
			if !slices.Contains(names1xValues(), family) {
				t.Errorf("family %s", family)
			}
			for _, l := range labelNames(m) {
				if !slices.Contains([]string{"gpu", "uuid", "pod_name", "pod_namespace", "container_name"}, l) {
					t.Errorf("%s has label %s", family, l)
				}
			}
		}, after: func(t *testing.T, with []*dto.MetricFamily) {
			held := 0
			for _, m := range familyOf(with, "dcgm_gpu_utilization").GetMetric() {
				if labelValue(m, "pod_name") == "train-0" && labelValue(m, "pod_namespace") == "batch" && labelValue(m, "container_name") == "main" {
					held++
				}
			}
			if held != 1 || familyOf(with, "dcgm_fb_used") == nil {
				t.Errorf("%d dcgm_gpu_utilization of train-0, want 1; dcgm_fb_used %v", held, familyOf(with, "dcgm_fb_used") != nil)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := tc.sh
			with, without := shapeScrape(t, &sh, tc.legacy)
			names, ms := dcgmSamples(with)
			_, was := dcgmSamples(without)
			if tc.same && len(ms) != len(was) || len(ms) == 0 {
				t.Fatalf("%d DCGM samples, %d without the shape", len(ms), len(was))
			}
			for i, m := range ms {
				checkLabelSet(t, m)
				if tc.check != nil {
					w := m
					if tc.same {
						w = was[i]
					}
					tc.check(t, names[i], m, w)
				}
			}
			if tc.after != nil {
				tc.after(t, with)
			}
		})
	}
}

// checkLabelSet holds m's labels sorted, each name once.
func checkLabelSet(t *testing.T, m *dto.Metric) {
	t.Helper()
	for i := 1; i < len(m.Label); i++ {
		if m.Label[i-1].GetName() >= m.Label[i].GetName() {
			t.Errorf("labels not sorted, or one twice: %v", labelNames(m))
			return
		}
	}
}

// names1xValues are the 1.x names.
func names1xValues() []string {
	var out []string
	for _, v := range names1x {
		out = append(out, v)
	}
	return out
}

// checkTarget holds the scrape target's labels of a ServiceMonitor's scrape.
func checkTarget(t *testing.T, m *dto.Metric) {
	t.Helper()
	if labelValue(m, "job") != "nvidia-dcgm-exporter" || labelValue(m, "service") != "nvidia-dcgm-exporter" || labelValue(m, "endpoint") != "gpu-metrics" ||
		!regexp.MustCompile(`^10\.244\.\d+\.\d+:9400$`).MatchString(labelValue(m, "instance")) {
		t.Errorf("target labels %v", m.GetLabel())
	}
}

// checkExporterPodInKubeState: kube-state-metrics lists the exporter's pod,
// Running, and no request of it.
func checkExporterPodInKubeState(t *testing.T, with []*dto.MetricFamily) {
	t.Helper()
	running := false
	for _, m := range familyOf(with, "kube_pod_status_phase").GetMetric() {
		if labelValue(m, "namespace") == "gpu-operator" && exporterPodName.MatchString(labelValue(m, "pod")) && labelValue(m, "phase") == "Running" {
			running = m.GetGauge().GetValue() == 1
		}
	}
	for _, m := range familyOf(with, "kube_pod_container_resource_requests").GetMetric() {
		if labelValue(m, "namespace") == "gpu-operator" {
			t.Errorf("the exporter's pod requests %s", labelValue(m, "resource"))
		}
	}
	if !running {
		t.Error("kube-state-metrics has no Running exporter pod")
	}
}

// TestDCGMShapesCompose: the ServiceMonitor's labels, the pod in Hostname,
// a node label and the empty labels together on two nodes of a fleet —
// under honorLabels the empty pod labels the exporter wrote win, as
// Prometheus keeps a scraped label (and stores no empty one); each node's
// exporter pod is its own, the same in every scrape; the scrape target's
// instance stays, not the fleet's.
func TestDCGMShapesCompose(t *testing.T) {
	var nodes []*sim.Scenario
	for _, p := range []string{migNode, "../testdata/scenarios/dayone/gpu-node-d.yaml"} {
		sc, err := sim.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	sh := DCGMShapes{ScrapeTarget: HonorLabels, HostnameIsPod: true, NodeLabel: "kubernetes_node", EmptyAndExtraLabels: true}
	sink := &everyScrapeSink{}
	if _, err := RunFleet(context.Background(), Options{Start: start, Duration: time.Minute, SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second,
		Flavor: FlavorDCGMExporter, DCGMExporter: DCGMExporterOptions{Shapes: &sh}}, nodes, sink); err != nil {
		t.Fatal(err)
	}
	pods := map[string]map[string]bool{} // node → exporter pods named
	for _, mfs := range sink.scrapes {
		_, ms := dcgmSamples(mfs)
		for _, m := range ms {
			checkLabelSet(t, m)
			node := labelValue(m, "kubernetes_node")
			if pods[node] == nil {
				pods[node] = map[string]bool{}
			}
			pods[node][labelValue(m, "hostname")] = true
			if n := len(slices.DeleteFunc(labelNames(m), func(l string) bool { return l != "instance" })); n != 1 || !strings.HasPrefix(labelValue(m, "instance"), "10.244.") {
				t.Errorf("%d instance labels, %q", n, labelValue(m, "instance"))
			}
			if labelValue(m, "pod") != "" && labelValue(m, "namespace") == "gpu-operator" {
				t.Errorf("exporter pod labelled over the exporter's empty pod labels: %v", m.GetLabel())
			}
		}
	}
	if len(pods) != 2 || len(pods["gpu-node-b"]) != 1 || len(pods["gpu-node-d"]) != 1 {
		t.Fatalf("exporter pods %v, want one per node", pods)
	}
	for node, ps := range pods {
		for p := range ps {
			if !exporterPodName.MatchString(p) || pods["gpu-node-b"][p] && pods["gpu-node-d"][p] {
				t.Errorf("node %s: hostname %q", node, p)
			}
		}
	}
}

// TestDCGMShapesChecked: shapes that cannot be written are refused (1.x
// names under 4.10's among them), and need the flavour.
func TestDCGMShapesChecked(t *testing.T) {
	for _, tc := range []struct {
		sh   DCGMShapes
		want string
	}{
		{DCGMShapes{ScrapeTarget: "servicemonitor"}, `scrape target "servicemonitor"`},
		{DCGMShapes{NodeLabel: "pod"}, `node label "pod"`},
		{DCGMShapes{NodeLabel: "no-de"}, `node label "no-de"`},
		{DCGMShapes{MIGProfiles: map[string]string{"3g.40gb": "3g.40gb"}}, "want two different names"},
		{DCGMShapes{Names1x: true, ScrapeTarget: NoHonorLabels}, "1.x names with no-honor-labels"},
	} {
		o := Options{Duration: time.Hour, Flavor: FlavorDCGMExporter, DCGMExporter: DCGMExporterOptions{Shapes: &tc.sh}}
		if err := o.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.sh, err, tc.want)
		}
	}
	o := Options{Duration: time.Hour, Flavor: FlavorDCGMExporter, DCGMExporter: DCGMExporterOptions{Shapes: &DCGMShapes{Names1x: true}}, Names: Names{Mode: NamesCurrent}}
	if err := o.defaults(); err == nil || !strings.Contains(err.Error(), `1.x names are 4.8's renamed, not names "4.10"'s`) {
		t.Errorf("1.x names under 4.10's: %v", err)
	}
	o = Options{Duration: time.Hour, DCGMExporter: DCGMExporterOptions{Shapes: &DCGMShapes{HostnameIsPod: true}}}
	if err := o.defaults(); err == nil || !strings.Contains(err.Error(), "applies to it alone") {
		t.Errorf("shapes without the flavour: %v", err)
	}
	if !(&DCGMShapes{MIGProfiles: map[string]string{}}).Zero() || (&DCGMShapes{NoMIGFramebuffer: true}).Zero() {
		t.Error("Zero")
	}
}

// TestDCGMShapesUnder410Names: the shapes write the same under dcgm-exporter
// 4.10's names — no driver label (DCGM_FI_SYSTEM_DRIVER_VERSION there), no
// framebuffer of MIG instances (…_FB_USED_BYTES), the exporter's pod on the
// GPUs without a holder — for they touch no family by its name.
func TestDCGMShapesUnder410Names(t *testing.T) {
	sh := DCGMShapes{ScrapeTarget: HonorLabels, NoPCIBusIDOrDriver: true, NoMIGFramebuffer: true}
	o := Options{SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second, Names: Names{Mode: NamesCurrent}, DCGMExporter: DCGMExporterOptions{Shapes: &sh}}
	names, ms := dcgmSamples(runOptions(t, migNode, time.Second, o).scrapes[0])
	fb, exporterLabelled := 0, 0
	for i, m := range ms {
		checkLabelSet(t, m)
		if hasLabel(m, "DCGM_FI_SYSTEM_DRIVER_VERSION") || hasLabel(m, "DCGM_FI_DRIVER_VERSION") || hasLabel(m, "pci_bus_id") {
			t.Errorf("%s has a driver or PCI label: %v", names[i], labelNames(m))
		}
		if strings.HasPrefix(names[i], "DCGM_FI_DEV_FB_") {
			fb++
			if labelValue(m, "GPU_I_ID") != "" {
				t.Errorf("%s of MIG instance %s", names[i], labelValue(m, "GPU_I_ID"))
			}
		}
		if exporterPodName.MatchString(labelValue(m, "pod")) {
			exporterLabelled++
		}
	}
	if !slices.Contains(names, "DCGM_FI_DEV_FB_USED_BYTES") || fb == 0 || exporterLabelled == 0 {
		t.Errorf("families %v: want 4.10's, the GPUs' framebuffer (%d samples) and the exporter's pod on some (%d)", slices.Compact(slices.Sorted(slices.Values(names))), fb, exporterLabelled)
	}
}
