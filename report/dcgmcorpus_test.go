package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// The real-output corpus (testdata/real, its README gives each file's
// source): dcgm-exporter output people published, in the label shapes real
// clusters have. TestRealDCGMExporterOutput parses every file and holds what
// it shows — the naming, the host label and whose name it holds, the pod
// labels' shape, labels beyond or missing from dcgm-exporter 4.8's set, the
// MIG profile spellings, the GPU models, which of the families the
// dcgm-exporter source reads are there — to a table written by reading the
// files.

const realDir = "../testdata/real"

// corpusSample is one sample of a corpus file: its labels, the metric name
// among them as __name__, and its value (NaN where the form has none).
type corpusSample struct {
	labels map[string]string
	value  float64
}

// readCorpusFile parses a corpus file by its form: .prom the text format,
// .json a /api/v1/query answer, .series PromQL metric lines.
func readCorpusFile(path string) ([]corpusSample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch filepath.Ext(path) {
	case ".prom":
		p := expfmt.NewTextParser(pmodel.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		var out []corpusSample
		for _, name := range slices.Sorted(maps.Keys(mfs)) {
			for _, m := range mfs[name].GetMetric() {
				s := corpusSample{labels: map[string]string{"__name__": name}, value: m.GetUntyped().GetValue() + m.GetGauge().GetValue() + m.GetCounter().GetValue()}
				for _, l := range m.GetLabel() {
					s.labels[l.GetName()] = l.GetValue()
				}
				out = append(out, s)
			}
		}
		return out, nil
	case ".json":
		var answer struct {
			Status string
			Data   struct {
				ResultType string
				Result     pmodel.Vector
			}
		}
		if err := json.Unmarshal(b, &answer); err != nil {
			return nil, err
		}
		if answer.Status != "success" || answer.Data.ResultType != "vector" {
			return nil, fmt.Errorf("status %q, result type %q: want a successful vector", answer.Status, answer.Data.ResultType)
		}
		var out []corpusSample
		for _, s := range answer.Data.Result {
			cs := corpusSample{labels: map[string]string{}, value: float64(s.Value)}
			for k, v := range s.Metric {
				cs.labels[string(k)] = string(v)
			}
			out = append(out, cs)
		}
		return out, nil
	case ".series":
		var out []corpusSample
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		p := parser.NewParser(parser.Options{})
		for sc.Scan() {
			ls, err := p.ParseMetric(sc.Text())
			if err != nil {
				return nil, err
			}
			out = append(out, corpusSample{labels: ls.Map(), value: math.NaN()})
		}
		return out, sc.Err()
	}
	return nil, fmt.Errorf("unknown form %s", filepath.Ext(path))
}

// corpusShape is what a corpus file shows.
type corpusShape struct {
	samples int
	// naming: "1.x" (dcgm_gpu_utilization …), "lower-case" (dcgm_fi_…),
	// "DCGM_FI" (dcgm-exporter 2.x to 4.8), "4.9" (the DCGM 4.7 names).
	naming string
	// host is the label dcgm-exporter writes the host in (hostname,
	// Hostname; "" none); exporterPodHost that its values are all the
	// exporter's own pod's name; nodeLabels the relabelled ones that name a
	// node (node, nodename, kubernetes_node).
	host            string
	exporterPodHost bool
	nodeLabels      []string
	// pods: the kinds of pod labels the series carry — "holder" (a workload's
	// namespace/pod/container), "exporter" (the scrape target's own pod:
	// honorLabels true on a GPU without a holder), "exported" (exported_pod:
	// honorLabels false), "empty" (pod="" written by the exporter), "old"
	// (pod_name/pod_namespace/container_name), "none".
	pods []string
	// holders and heldGPUs: distinct workload pods, and distinct devices
	// (UUID and GPU_I_ID) a workload pod is labelled on.
	holders, heldGPUs     int
	extra, missing, empty []string // labels beyond, missing from, empty in dcgm-exporter 4.8's set
	profiles, models      []string // GPU_I_PROFILE and modelName values
	// reads: which families the dcgm-exporter source reads are present, as
	// GR (DCGM_FI_PROF_GR_ENGINE_ACTIVE), UTIL (DCGM_FI_DEV_GPU_UTIL), FB
	// (DCGM_FI_DEV_FB_USED), POWER (DCGM_FI_DEV_POWER_USAGE), XID.
	reads []string
	// values: the first sample's value of some families, where the file's
	// point is a value.
	values map[string]float64
}

// The label set of dcgm-exporter 4.8 (../shared/reference/dcgm-exporter-compat.md).
var dcgm48Labels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "Hostname", "DCGM_FI_DRIVER_VERSION", "GPU_I_PROFILE", "GPU_I_ID", "container", "namespace", "pod"}

// The identity labels every series of 4.8 carries, "host" for hostname or
// Hostname.
var dcgm48Identity = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "host", "DCGM_FI_DRIVER_VERSION"}

var readFamilies = map[string]string{
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE": "GR", "DCGM_FI_DEV_GPU_UTIL": "UTIL", "DCGM_FI_DEV_FB_USED": "FB",
	"DCGM_FI_DEV_POWER_USAGE": "POWER", "DCGM_FI_DEV_XID_ERRORS": "XID",
}

// A dcgm-exporter DaemonSet's pod: its name and a 5-character suffix.
var exporterPod = regexp.MustCompile(`^(nvidia-)?dcgm-exporter-[a-z0-9]{5}$`)

// shapeOf says what samples show.
func shapeOf(samples []corpusSample) corpusShape {
	s := corpusShape{samples: len(samples), exporterPodHost: true}
	set := func(dst *[]string, v string) {
		if !slices.Contains(*dst, v) {
			*dst = append(*dst, v)
		}
	}
	holders, held := map[string]bool{}, map[string]bool{}
	for _, sm := range samples {
		l := sm.labels
		name := l["__name__"]
		switch {
		case strings.HasPrefix(name, "dcgm_fi_"):
			s.naming = "lower-case"
		case strings.HasPrefix(name, "dcgm_"):
			s.naming = "1.x"
		case slices.Contains([]string{"DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "DCGM_FI_DEV_FB_USED_BYTES", "DCGM_FI_DEV_BOARD_POWER_WATTS"}, name):
			s.naming = "4.9"
		case strings.HasPrefix(name, "DCGM_FI_") && s.naming == "":
			s.naming = "DCGM_FI"
		}
		if r, ok := readFamilies[name]; ok {
			set(&s.reads, r)
		}
		host, hostLabel := "", ""
		for _, h := range []string{"hostname", "Hostname"} {
			if v, ok := l[h]; ok {
				host, hostLabel = v, h
			}
		}
		if hostLabel != "" {
			s.host = hostLabel
		}
		s.exporterPodHost = s.exporterPodHost && exporterPod.MatchString(host)
		for _, n := range []string{"node", "nodename", "kubernetes_node"} {
			if _, ok := l[n]; ok {
				set(&s.nodeLabels, n)
			}
		}
		set(&s.pods, podKind(l))
		if podKind(l) == "holder" {
			holders[l["namespace"]+"/"+l["pod"]] = true
			held[l["UUID"]+"/"+l["GPU_I_ID"]] = true
		}
		for k, v := range l {
			if k != "__name__" && !slices.Contains(dcgm48Labels, k) {
				set(&s.extra, k)
			}
			if v == "" {
				set(&s.empty, k)
			}
		}
		for _, k := range dcgm48Identity {
			if _, ok := l[k]; !ok && (k != "host" || hostLabel == "") {
				set(&s.missing, k)
			}
		}
		if p, ok := l["GPU_I_PROFILE"]; ok {
			set(&s.profiles, p)
		}
		if m, ok := l["modelName"]; ok {
			set(&s.models, m)
		}
	}
	s.holders, s.heldGPUs = len(holders), len(held)
	s.exporterPodHost = s.exporterPodHost && s.host != ""
	for _, l := range []*[]string{&s.nodeLabels, &s.pods, &s.extra, &s.missing, &s.empty, &s.profiles, &s.models, &s.reads} {
		slices.Sort(*l)
	}
	return s
}

// podKind is the kind of pod labels of one series (corpusShape.pods).
func podKind(l map[string]string) string {
	switch {
	case l["exported_pod"] != "":
		return "exported"
	case l["pod"] != "" && (exporterPod.MatchString(l["pod"]) || l["container"] == "nvidia-dcgm-exporter"):
		return "exporter"
	case l["pod"] != "":
		return "holder"
	}
	if _, ok := l["pod"]; ok {
		return "empty"
	}
	if _, ok := l["pod_name"]; ok {
		return "old"
	}
	return "none"
}

// TestRealDCGMExporterOutput: every file of testdata/real parses, and shows
// what its row says (read off the file by hand; the README says where each
// comes from). A file without a row fails, so that the corpus stays in the
// test.
func TestRealDCGMExporterOutput(t *testing.T) {
	h100, a30 := []string{"NVIDIA H100 80GB HBM3"}, []string{"NVIDIA A30"}
	none := []string(nil)
	want := map[string]corpusShape{
		// NVIDIA's evidence, honorLabels true: 8 H100s on each of 2 nodes; the
		// exporter's pod on the 15 GPUs without a holder, vllm on GPU 0 of
		// gpu-node-1. /metrics: 8 GPU_TEMP + 8 POWER + 8 GPU_UTIL + 6
		// MEM_COPY_UTIL of gpu-node-1, pod_uid="" on the held GPU's.
		"nvidia-aicr-h100.prom": {samples: 30, naming: "DCGM_FI", host: "Hostname", pods: []string{"holder", "none"}, holders: 1, heldGPUs: 1,
			extra: []string{"pod_uid"}, empty: []string{"pod_uid"}, models: h100, reads: []string{"POWER", "UTIL"}},
		"nvidia-aicr-h100-gpu-util.json": {samples: 16, naming: "DCGM_FI", host: "Hostname", pods: []string{"exporter", "holder"}, holders: 1, heldGPUs: 1,
			extra: []string{"endpoint", "instance", "job", "service"}, models: h100, reads: []string{"UTIL"}},
		// vGPU guests: 11 families, one GPU, no power, GPU temperature or
		// profiling fields.
		"vks-grid-a100-10c.prom": {samples: 11, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, models: []string{"GRID A100-10C"}, reads: []string{"FB", "UTIL"}},
		"vks-grid-a100-40c.prom": {samples: 11, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, models: []string{"GRID A100-40C"}, reads: []string{"FB", "UTIL"}},
		// GPU_UTIL 91 % while GR_ENGINE_ACTIVE says 0.156.
		"ericsson-ccd-t4.prom": {samples: 20, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, models: []string{"Tesla T4"}, reads: []string{"FB", "GR", "POWER", "UTIL"},
			values: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 91, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.156205, "DCGM_FI_DEV_FB_USED": 5120}},
		"dcgm-exporter-490.prom": {samples: 3, naming: "DCGM_FI", host: "Hostname", pods: []string{"holder", "none"}, holders: 1, heldGPUs: 1, models: h100, reads: []string{"UTIL"}},
		// 4.8.3's lower-case hostname holding the exporter pod's name.
		"dcgm-exporter-pr736.prom": {samples: 4, naming: "DCGM_FI", host: "hostname", exporterPodHost: true, pods: []string{"holder", "none"}, holders: 1, heldGPUs: 1,
			missing: []string{"DCGM_FI_DRIVER_VERSION"}, profiles: []string{"1g.6gb"}, models: []string{"NVIDIA A30", "NVIDIA RTX 2000 Ada Generation"}, reads: none},
		// Hostname the exporter pod's, the node relabelled into node.
		"gpu-operator-472.series": {samples: 1, naming: "DCGM_FI", host: "Hostname", exporterPodHost: true, nodeLabels: []string{"node"}, pods: []string{"none"},
			extra: []string{"instance", "job", "node"}, missing: []string{"pci_bus_id"}, models: []string{"NVIDIA A100 80GB PCIe"}, reads: []string{"UTIL"}},
		"dcgm-exporter-277.series": {samples: 1, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, extra: []string{"instance", "job"},
			missing: []string{"pci_bus_id"}, models: []string{"Quadro RTX 6000"}, reads: []string{"UTIL"}},
		"dcgm-exporter-58.prom": {samples: 5, naming: "DCGM_FI", host: "Hostname", exporterPodHost: true, pods: []string{"empty"},
			missing: []string{"DCGM_FI_DRIVER_VERSION", "pci_bus_id"}, empty: []string{"container", "namespace", "pod"}, models: []string{"NVIDIA TITAN V"}, reads: none},
		// 1.x: none of the families the source reads.
		"dcgm-exporter-188.prom": {samples: 7, naming: "1.x", host: "Hostname", exporterPodHost: true, pods: []string{"empty"},
			missing: []string{"DCGM_FI_DRIVER_VERSION", "modelName", "pci_bus_id"}, empty: []string{"container", "namespace", "pod"}, reads: none,
			values: map[string]float64{"dcgm_gpu_utilization": 0, "dcgm_power_usage": 30.982}},
		"gpu-monitoring-tools-1x.prom": {samples: 6, naming: "1.x", pods: []string{"none"}, extra: []string{"uuid"},
			missing: []string{"DCGM_FI_DRIVER_VERSION", "UUID", "device", "host", "modelName", "pci_bus_id"}, reads: none,
			values: map[string]float64{"dcgm_power_usage": 31.737, "dcgm_total_energy_consumption": 7.824041e+06}},
		"gpu-monitoring-tools-138.prom": {samples: 8, naming: "DCGM_FI", pods: []string{"empty"},
			missing: []string{"DCGM_FI_DRIVER_VERSION", "host", "modelName", "pci_bus_id"}, empty: []string{"container", "namespace", "pod"}, reads: []string{"POWER", "UTIL"},
			values: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 44}},
		"dcgm-exporter-272.prom": {samples: 3, naming: "lower-case", pods: []string{"old"}, extra: []string{"container_name", "pod_name", "pod_namespace", "uuid"},
			missing: []string{"DCGM_FI_DRIVER_VERSION", "UUID", "host", "pci_bus_id"}, empty: []string{"container_name", "pod_name", "pod_namespace"},
			profiles: []string{"3g.40gb", "4g.40gb"}, models: []string{"NVIDIA A100 80GB PCIe"}, reads: none},
		// MIG profiles spelled otherwise than the device plugin's resources.
		"gpu-operator-687.prom": {samples: 1, naming: "DCGM_FI", host: "Hostname", pods: []string{"empty"}, missing: []string{"pci_bus_id"},
			empty: []string{"container", "namespace", "pod"}, profiles: []string{"7g.79gb"}, models: []string{"NVIDIA A100 80GB PCIe"}, reads: none},
		"dcgm-exporter-544.prom": {samples: 2, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, profiles: []string{"**1g.11gb**"},
			models: []string{"NVIDIA H100 NVL"}, reads: []string{"FB"}, values: map[string]float64{"DCGM_FI_DEV_FB_USED": 12}},
		"dcgm-exporter-512.prom": {samples: 3, naming: "DCGM_FI", host: "Hostname", pods: []string{"holder", "none"}, holders: 2, heldGPUs: 2,
			profiles: []string{"1g.10gb"}, models: h100, reads: []string{"GR"}},
		"dcgm-exporter-317.prom": {samples: 5, naming: "DCGM_FI", host: "Hostname", pods: []string{"none"}, missing: []string{"DCGM_FI_DRIVER_VERSION", "pci_bus_id"},
			profiles: []string{"1g.6gb"}, models: a30, reads: []string{"GR"}},
		// One pod labelled on two GPUs.
		"dcgm-226.prom": {samples: 3, naming: "DCGM_FI", host: "Hostname", pods: []string{"holder", "none"}, holders: 1, heldGPUs: 2,
			missing: []string{"DCGM_FI_DRIVER_VERSION"}, models: []string{"NVIDIA L40S"}, reads: []string{"GR"}},
	}
	files := corpusFiles(t)
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("%s has no row in this test", name)
			}
			samples, err := readCorpusFile(filepath.Join(realDir, name))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got := shapeOf(samples)
			for family, v := range w.values {
				i := slices.IndexFunc(samples, func(s corpusSample) bool { return s.labels["__name__"] == family })
				if i < 0 || samples[i].value != v {
					t.Errorf("%s: no sample of it, or its first not %v", family, v)
				}
			}
			got.values = w.values
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", w) {
				t.Errorf("shows\n%+v\nwant\n%+v", got, w)
			}
		})
	}
	if len(files) != len(want) {
		t.Errorf("%d files in %s, %d rows", len(files), realDir, len(want))
	}
}

// corpusFiles are the corpus' files, its README aside.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(realDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != "README.md" {
			out = append(out, e.Name())
		}
	}
	return out
}
