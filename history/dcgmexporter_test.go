package history

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
)

// lastScrapeSink keeps the families of the last scrape it is handed and
// the names of every family it saw.
type lastScrapeSink struct {
	last  []*dto.MetricFamily
	names map[string]bool
}

func (s *lastScrapeSink) AddScrape(mfs []*dto.MetricFamily, _ time.Time) error {
	s.last = mfs
	for _, mf := range mfs {
		s.names[mf.GetName()] = true
	}
	return nil
}

func runFlavor(t *testing.T, path string, d time.Duration) *lastScrapeSink {
	t.Helper()
	sc, err := sim.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sink := &lastScrapeSink{names: map[string]bool{}}
	_, err = Run(context.Background(), Options{Scenario: sc, Start: start, Duration: d, SampleInterval: 30 * time.Second,
		ScrapeInterval: time.Minute, Flavor: FlavorDCGMExporter}, sink)
	if err != nil {
		t.Fatal(err)
	}
	return sink
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, p := range m.GetLabel() {
		out = append(out, p.GetName())
	}
	slices.Sort(out)
	return out
}

// TestDCGMExporterFlavor: the dcgm-exporter flavour of the time-sliced node
// writes no gputally_* series; its DCGM_* series have dcgm-exporter 4.8's
// labels, with pod labels only on the GPUs one container holds whole (not on
// the time-sliced GPU 0); and kube-state-metrics' series say what the API
// server knows: the shared pods' requests, their phase, and the node's
// capacity with GPU 0's four replicas.
func TestDCGMExporterFlavor(t *testing.T) {
	s := runFlavor(t, "../testdata/scenarios/shared-node.yaml", 10*time.Minute)
	for name := range s.names {
		if strings.HasPrefix(name, "gputally_") {
			t.Errorf("%s written in the dcgm-exporter flavour", name)
		}
	}
	util := familyOf(s.last, "DCGM_FI_DEV_GPU_UTIL")
	if util == nil {
		t.Fatal("no DCGM_FI_DEV_GPU_UTIL")
	}
	gpu := []string{"DCGM_FI_DRIVER_VERSION", "UUID", "device", "gpu", "hostname", "modelName", "pci_bus_id"}
	pod := slices.Sorted(slices.Values(append(slices.Clone(gpu), "container", "namespace", "pod")))
	for _, m := range util.GetMetric() {
		want := pod
		if labelValue(m, "gpu") == "0" {
			want = gpu // time-sliced: dcgm-exporter maps no pod to it
		}
		if got := labelNames(m); !slices.Equal(got, want) {
			t.Errorf("GPU %s: labels %v, want %v", labelValue(m, "gpu"), got, want)
		}
	}
	capacity := map[string]float64{}
	for _, m := range familyOf(s.last, "kube_node_status_capacity").GetMetric() {
		capacity[labelValue(m, "resource")] = m.GetGauge().GetValue()
		if labelValue(m, "node") != "shared-node" {
			t.Errorf("capacity of node %q", labelValue(m, "node"))
		}
	}
	if capacity["nvidia_com_gpu"] != 3 || capacity["nvidia_com_gpu_shared"] != 4 || capacity["pods"] != 110 {
		t.Errorf("capacity %v, want 3 nvidia_com_gpu, 4 nvidia_com_gpu_shared, 110 pods", capacity)
	}
	shared := 0
	for _, m := range familyOf(s.last, "kube_pod_container_resource_requests").GetMetric() {
		if labelValue(m, "resource") == "nvidia_com_gpu_shared" && m.GetGauge().GetValue() == 1 {
			shared++
		}
	}
	if shared != 3 {
		t.Errorf("%d pods request one nvidia_com_gpu_shared replica, want 3 (nb-0, nb-1, nb-2)", shared)
	}
	running := 0
	for _, m := range familyOf(s.last, "kube_pod_status_phase").GetMetric() {
		if labelValue(m, "phase") == "Running" && m.GetGauge().GetValue() == 1 {
			running++
		}
	}
	if running != 6 {
		t.Errorf("%d pods Running, want 6", running)
	}
}

// TestDCGMExporterFlavorLostGPU: a GPU that fell off the bus (faults.yaml:
// GPU 0 at 26 h) has only DCGM_FI_DEV_XID_ERRORS, at 79.
func TestDCGMExporterFlavorLostGPU(t *testing.T) {
	s := runFlavor(t, "../testdata/scenarios/faults.yaml", 27*time.Hour)
	var lost []string
	for _, mf := range s.last {
		for _, m := range mf.GetMetric() {
			if labelValue(m, "gpu") == "0" && strings.HasPrefix(mf.GetName(), "DCGM_") && labelValue(m, "GPU_I_ID") == "" {
				lost = append(lost, mf.GetName())
				if mf.GetName() == "DCGM_FI_DEV_XID_ERRORS" && m.GetGauge().GetValue() != 79 {
					t.Errorf("XID %v, want 79", m.GetGauge().GetValue())
				}
				if labelValue(m, "DCGM_FI_DRIVER_VERSION") == "" || labelValue(m, "hostname") != "faults-node" {
					t.Errorf("lost GPU's labels %v", labelNames(m))
				}
			}
		}
	}
	if !slices.Equal(lost, []string{"DCGM_FI_DEV_XID_ERRORS"}) {
		t.Errorf("the lost GPU has %v, want only DCGM_FI_DEV_XID_ERRORS", lost)
	}
}
