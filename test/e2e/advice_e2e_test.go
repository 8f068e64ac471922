//go:build e2e

package e2e

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// adviceReport is the part of the JSON report the advice tests read.
type adviceReport struct {
	Recommendations []struct {
		Kind                   string   `json:"kind"`
		Target                 string   `json:"target"`
		Holdings               []string `json:"holdings"`
		FreedGPUs              []string `json:"freed_gpus"`
		FreedEURPerMonth       float64  `json:"freed_eur_per_month"`
		ReclaimableEURPerMonth float64  `json:"reclaimable_eur_per_month"`
	} `json:"recommendations"`
	Holdings []struct {
		Namespace string `json:"namespace"`
		Pod       string `json:"pod"`
		MIGID     string `json:"mig_instance"`
		Profile   string `json:"mig_profile"`
		AtEnd     bool   `json:"at_end"`
		Totals    struct {
			GPUHours float64 `json:"gpu_hours"`
		} `json:"totals"`
	} `json:"holdings"`
	Apply struct {
		MIGParted          string   `json:"mig_parted"`
		MIGPartedLabels    []string `json:"mig_parted_labels"`
		TimeSlicing        string   `json:"time_slicing"`
		TimeSlicingLabels  []string `json:"time_slicing_labels"`
		TimeSlicingSharing []string `json:"time_slicing_sharing"`
		Kueue              string   `json:"kueue"`
	} `json:"apply"`
}

// adviceOnPrometheus simulates a day of scenario at 30 s scrapes, backfills
// it into a real Prometheus and returns the report over it.
func adviceOnPrometheus(t *testing.T, scenario string) adviceReport {
	t.Helper()
	var r adviceReport
	readJSON(t, reportOnPrometheus(t, scenario), &r)
	return r
}

// reportOnPrometheus is adviceOnPrometheus's report, as the file of its JSON.
func reportOnPrometheus(t *testing.T, scenario string) string {
	t.Helper()
	needScenario(t, scenario)
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	history := filepath.Join(dir, "history.om")
	runTool(t, gputally, "simulate", "history", "--scenario", scenario, "--duration", "24h",
		"--scrape-interval", "30s", "--start", "2026-01-05T00:00:00Z", "--out", history)
	prom := promBackfilled(t, promtool, prometheus, history, dir)
	out := filepath.Join(dir, "report.json")
	runTool(t, gputally, "report", "--prometheus.url="+prom, "--range=24h", "--end=2026-01-06T00:00:00Z",
		"--allow-partial", "--format=json", "--out="+out)
	return out
}

// migPartedLayouts decodes a mig-parted config: per config name, each
// device index's layout (nil: MIG disabled).
func migPartedLayouts(t *testing.T, text string) map[string]map[int][]string {
	t.Helper()
	var c struct {
		MIGConfigs map[string][]struct {
			Devices    []int          `yaml:"devices"`
			MIGEnabled bool           `yaml:"mig-enabled"`
			MIGDevices map[string]int `yaml:"mig-devices"`
		} `yaml:"mig-configs"`
	}
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("mig-parted config: %v\n%s", err, text)
	}
	out := map[string]map[int][]string{}
	for name, devs := range c.MIGConfigs {
		out[name] = map[int][]string{}
		for _, d := range devs {
			var layout []string
			for _, p := range slices.Sorted(maps.Keys(d.MIGDevices)) {
				for range d.MIGDevices[p] {
					layout = append(layout, p)
				}
			}
			for _, k := range d.Devices {
				out[name][k] = layout
			}
		}
	}
	return out
}

// TestMIGAdviceAfterRepartitionOnPrometheus: on
// report/testdata/scenarios/mig-advice-reconfigured.yaml (GPU 0 repartitioned
// at 12h, GPU_I_ID 1 reused from a 3g.40gb to a 4g.40gb; GPU 1's light
// service fits a 1g.10gb) the node's mig-parted config, applied to its GPUs as
// they end the range, changes GPU 1 alone; llm-0 and llm-1 are holdings of
// GPU_I_ID 1 with their own profiles, llm-0 not there at the end.
func TestMIGAdviceAfterRepartitionOnPrometheus(t *testing.T) {
	r := adviceOnPrometheus(t, filepath.Join("..", "..", "report", "testdata", "scenarios", "mig-advice-reconfigured.yaml"))
	config := migPartedLayouts(t, r.Apply.MIGParted)["gputally-mig-advice-node"]
	atEnd := map[int][]string{0: {"1g.20gb", "1g.20gb", "4g.40gb"}, 1: nil, 2: nil}
	var changed []int
	for k, have := range atEnd {
		want, ok := config[k]
		if !ok {
			t.Errorf("the config leaves GPU %d out:\n%s", k, r.Apply.MIGParted)
		}
		if (want == nil) != (have == nil) || !slices.Equal(want, have) {
			changed = append(changed, k)
		}
	}
	if slices.Sort(changed); !slices.Equal(changed, []int{1}) || len(config) != 3 {
		t.Errorf("the config %v applied to the GPUs at the end %v changes %v, want GPU 1 alone:\n%s", config, atEnd, changed, r.Apply.MIGParted)
	}
	got := map[string]string{}
	for _, h := range r.Holdings {
		if h.Namespace == "inference" {
			got[h.Pod] = h.MIGID + " " + h.Profile + " " + map[bool]string{true: "at end", false: "ended"}[h.AtEnd]
		}
	}
	if want := map[string]string{"llm-0": "1 3g.40gb ended", "llm-1": "1 4g.40gb at end"}; !maps.Equal(got, want) {
		t.Errorf("inference holdings %v, want %v", got, want)
	}
}

// TestEndedPodsOnPrometheus: on testdata/scenarios/ended-pods.yaml the
// release advice names the idle holders there at the end alone —
// eval-sweep-3 and notebook-1 freeing their GPUs, notebook-3 reclaimable
// (a 1g.10gb) — and nothing names notebook-0, notebook-2 or reindex-0, which
// ended.
func TestEndedPodsOnPrometheus(t *testing.T) {
	r := adviceOnPrometheus(t, filepath.Join("..", "..", "testdata", "scenarios", "ended-pods.yaml"))
	released := map[string]string{}
	for _, rec := range r.Recommendations {
		for _, h := range rec.Holdings {
			for _, gone := range []string{"notebook-0", "notebook-2", "reindex-0"} {
				if strings.Contains(h, "/"+gone+"/") {
					t.Errorf("%s %s names %s, which ended before the range end", rec.Kind, rec.Target, h)
				}
			}
		}
		if rec.Kind == "release" {
			released[rec.Target] = map[bool]string{true: "freed", false: "reclaimable"}[len(rec.FreedGPUs) == 1 && rec.ReclaimableEURPerMonth == 0]
		}
	}
	want := map[string]string{"research/eval-sweep-3/main": "freed", "dev-ben/notebook-1/jupyter": "freed", "dev-dan/notebook-3/jupyter": "reclaimable"}
	if !maps.Equal(released, want) {
		t.Errorf("releases %v, want %v", released, want)
	}
}

// TestSharedNodeOnPrometheus: on testdata/scenarios/shared-node.yaml GPU 0
// is time-sliced ×4 as nvidia.com/gpu.shared and the advice time-slices
// solo-0 and solo-1: the node's device plugin config keeps renameByDefault
// and nvidia.com/gpu ×4 (enough for the advice's 2), and no pod there at the
// end starts or stops sharing but the advised ones (light-0 is released), so
// there is no warning. Kueue: namespace dev holds nvidia.com/gpu and
// nvidia.com/gpu.shared, its count bounded by each resource's holdings busy
// in one bucket: at most 2 and 3, quotas 3 and 4.
func TestSharedNodeOnPrometheus(t *testing.T) {
	r := adviceOnPrometheus(t, filepath.Join("..", "..", "testdata", "scenarios", "shared-node.yaml"))
	var ts []string
	for _, rec := range r.Recommendations {
		if rec.Kind == "time-slicing" {
			ts = append(ts, rec.Holdings...)
		}
	}
	if !slices.Equal(ts, []string{"dev/solo-0/jupyter", "dev/solo-1/jupyter"}) {
		t.Fatalf("time-slicing of %v, want solo-0 and solo-1", ts)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal([]byte(r.Apply.TimeSlicing), &cm); err != nil {
		t.Fatal(err)
	}
	var dp struct {
		Sharing struct {
			TimeSlicing struct {
				RenameByDefault bool `yaml:"renameByDefault"`
				Resources       []struct {
					Name     string `yaml:"name"`
					Replicas int    `yaml:"replicas"`
				} `yaml:"resources"`
			} `yaml:"timeSlicing"`
		} `yaml:"sharing"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["gputally-shared-node"]), &dp); err != nil {
		t.Fatal(err)
	}
	res := dp.Sharing.TimeSlicing.Resources
	if !dp.Sharing.TimeSlicing.RenameByDefault || len(res) != 1 || res[0].Name != "nvidia.com/gpu" || res[0].Replicas != 4 ||
		!slices.Equal(r.Apply.TimeSlicingLabels, []string{"kubectl label node shared-node nvidia.com/device-plugin.config=gputally-shared-node --overwrite"}) {
		t.Errorf("shared-node config %+v, labels %q; want renameByDefault and nvidia.com/gpu ×4 under gputally-shared-node\n%s",
			dp.Sharing.TimeSlicing, r.Apply.TimeSlicingLabels, r.Apply.TimeSlicing)
	}
	if len(r.Apply.TimeSlicingSharing) != 0 {
		t.Errorf("sharing warnings %q, want none: GPU 0's pods keep their sharing", r.Apply.TimeSlicingSharing)
	}
	for _, s := range []string{"#   nvidia.com/gpu: at most 2 busy at once × headroom 1.20 → 3", "#   nvidia.com/gpu.shared: at most 3 busy at once × headroom 1.20 → 4"} {
		if !strings.Contains(r.Apply.Kueue, s) {
			t.Errorf("Kueue objects lack %q:\n%s", s, r.Apply.Kueue)
		}
	}
}

// TestKueueJobsOnPrometheus: on testdata/scenarios/kueue-jobs.yaml (its
// hand computation: ci at most 2 devices busy at once, ml 3, serving 1) the
// quotas are ⌈2 × 1.2⌉ = 3, ⌈3 × 1.2⌉ = 4 and ⌈1.2⌉ = 2, read at the 30 s
// scrape interval.
func TestKueueJobsOnPrometheus(t *testing.T) {
	r := adviceOnPrometheus(t, filepath.Join("..", "..", "testdata", "scenarios", "kueue-jobs.yaml"))
	for _, s := range []string{
		"# team ci: the most devices it kept busy and its pods waited for at the same time (in one 30s scrape interval)",
		"#   nvidia.com/gpu: at most 2 busy at once × headroom 1.20 → 3\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: ci\n",
		"#   nvidia.com/gpu: at most 3 busy at once × headroom 1.20 → 4\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: ml\n",
		"#   nvidia.com/gpu: at most 1 busy at once × headroom 1.20 → 2\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: serving\n",
	} {
		if !strings.Contains(r.Apply.Kueue, s) {
			t.Errorf("Kueue objects lack %q:\n%s", s, r.Apply.Kueue)
		}
	}
}
