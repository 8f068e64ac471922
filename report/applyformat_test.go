package report

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/mig"
)

// Strict decoders for the configuration the report emits. NVIDIA's own
// parsers (mig-parted api/spec/v1, k8s-device-plugin api/config/v1) are not
// available to this module, so their rules are written out here: unknown
// fields are errors, required fields must be there.

// strictDecode decodes every YAML document of text into a new T each,
// rejecting unknown fields.
func strictDecode[T any](text string) ([]T, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// mig-parted config, version v1.
type migPartedSpec struct {
	Version    string                        `yaml:"version"`
	MIGConfigs map[string][]migPartedSpecDev `yaml:"mig-configs"`
}

type migPartedSpecDev struct {
	Devices      yaml.Node      `yaml:"devices"`
	MIGEnabled   *bool          `yaml:"mig-enabled"`
	MIGDevices   map[string]int `yaml:"mig-devices"`
	DeviceFilter yaml.Node      `yaml:"device-filter"`
}

var migProfileName = regexp.MustCompile(`^[0-9]+g\.[0-9]+gb(\+me)?$`)

// parseMIGParted checks text against mig-parted's v1 rules and returns per
// config the layout of each device index (nil: MIG disabled); a device list
// of "all" is reported as index -1.
func parseMIGParted(text string) (map[string]map[int][]string, error) {
	docs, err := strictDecode[migPartedSpec](text)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%d documents, want 1", len(docs))
	}
	spec := docs[0]
	if spec.Version != "v1" {
		return nil, fmt.Errorf("version %q, want v1", spec.Version)
	}
	if len(spec.MIGConfigs) == 0 {
		return nil, errors.New("no mig-configs")
	}
	out := map[string]map[int][]string{}
	for name, devs := range spec.MIGConfigs {
		if len(devs) == 0 {
			return nil, fmt.Errorf("mig-configs.%s is empty", name)
		}
		out[name] = map[int][]string{}
		for i, d := range devs {
			where := fmt.Sprintf("mig-configs.%s[%d]", name, i)
			var indices []int
			switch {
			case d.Devices.Kind == yaml.ScalarNode && d.Devices.Value == "all":
				indices = []int{-1}
			case d.Devices.Kind == yaml.SequenceNode && len(d.Devices.Content) > 0:
				for _, n := range d.Devices.Content {
					k, err := strconv.Atoi(n.Value)
					if n.Kind != yaml.ScalarNode || err != nil || k < 0 {
						return nil, fmt.Errorf("%s.devices: %q is not a device index", where, n.Value)
					}
					indices = append(indices, k)
				}
			default:
				return nil, fmt.Errorf("%s.devices: want all or a list of indices", where)
			}
			if d.DeviceFilter.Kind != 0 && d.DeviceFilter.Kind != yaml.ScalarNode && d.DeviceFilter.Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("%s.device-filter: want a string or a list", where)
			}
			if d.MIGEnabled == nil {
				return nil, fmt.Errorf("%s: mig-enabled is required", where)
			}
			var layout []string
			switch {
			case *d.MIGEnabled && len(d.MIGDevices) == 0:
				return nil, fmt.Errorf("%s: mig-devices is required when MIG is enabled", where)
			case !*d.MIGEnabled && d.MIGDevices != nil:
				return nil, fmt.Errorf("%s: mig-devices is forbidden when MIG is disabled", where)
			}
			for _, p := range slices.Sorted(maps.Keys(d.MIGDevices)) {
				if !migProfileName.MatchString(p) || d.MIGDevices[p] < 1 {
					return nil, fmt.Errorf("%s.mig-devices: %s: %d is not a profile and a count ≥ 1", where, p, d.MIGDevices[p])
				}
				for range d.MIGDevices[p] {
					layout = append(layout, p)
				}
			}
			for _, k := range indices {
				if _, dup := out[name][k]; dup {
					return nil, fmt.Errorf("%s: device %d listed twice", where, k)
				}
				out[name][k] = layout
			}
		}
	}
	return out, nil
}

var labelCommand = regexp.MustCompile(`^kubectl label node ([a-z0-9.-]+) (nvidia\.com/mig\.config|nvidia\.com/device-plugin\.config)=([a-z0-9-]{1,63}) --overwrite$`)

// checkMIGParted checks the mig-parted config and its label commands: valid
// v1, one config per labelled node, devices by index (never all), and every
// layout placing on the node's GPU model. modelOf gives a node's GPU model.
func checkMIGParted(t *testing.T, text string, labels []string, modelOf func(node string) string) map[string]map[int][]string {
	t.Helper()
	configs, err := parseMIGParted(text)
	if err != nil {
		t.Fatalf("mig-parted config: %v\n%s", err, text)
	}
	if len(labels) != len(configs) {
		t.Errorf("%d label commands for %d configs: %q", len(labels), len(configs), labels)
	}
	byNode := map[string]map[int][]string{}
	for _, l := range labels {
		m := labelCommand.FindStringSubmatch(l)
		if m == nil || m[2] != "nvidia.com/mig.config" || configs[m[3]] == nil {
			t.Errorf("label command %q does not select a config of the file", l)
			continue
		}
		byNode[m[1]] = configs[m[3]]
		model, ok := mig.ForModel(modelOf(m[1]))
		if !ok {
			t.Errorf("node %s has no MIG model", m[1])
			continue
		}
		for k, layout := range configs[m[3]] {
			if k < 0 {
				t.Errorf("config %s says devices: all", m[3])
			}
			if layout == nil {
				continue
			}
			if _, err := model.Place(layout); err != nil {
				t.Errorf("config %s device %d: %v on %s", m[3], k, err, model.Name)
			}
		}
	}
	return byNode
}

// device plugin config, version v1, as far as gputally writes it.
type devicePluginSpec struct {
	Version string `yaml:"version"`
	Sharing struct {
		TimeSlicing *struct {
			RenameByDefault            *bool `yaml:"renameByDefault"`
			FailRequestsGreaterThanOne *bool `yaml:"failRequestsGreaterThanOne"`
			Resources                  []struct {
				Name     string `yaml:"name"`
				Replicas int    `yaml:"replicas"`
			} `yaml:"resources"`
		} `yaml:"timeSlicing"`
	} `yaml:"sharing"`
}

type configMapSpec struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
}

// checkDevicePlugin checks the device plugin ConfigMap, each of its configs
// against the device plugin's v1 rules, and that every label command selects
// one of its keys.
func checkDevicePlugin(t *testing.T, text string, labels []string) {
	t.Helper()
	cms, err := strictDecode[configMapSpec](text)
	if err != nil || len(cms) != 1 || cms[0].APIVersion != "v1" || cms[0].Kind != "ConfigMap" || cms[0].Metadata.Name == "" || len(cms[0].Data) == 0 {
		t.Fatalf("device plugin ConfigMap (%v):\n%s", err, text)
	}
	for key, cfg := range cms[0].Data {
		specs, err := strictDecode[devicePluginSpec](cfg)
		if err != nil || len(specs) != 1 {
			t.Errorf("config %s: %v\n%s", key, err, cfg)
			continue
		}
		s := specs[0]
		if s.Version != "v1" || s.Sharing.TimeSlicing == nil || len(s.Sharing.TimeSlicing.Resources) == 0 {
			t.Errorf("config %s: want version v1 with sharing.timeSlicing.resources:\n%s", key, cfg)
			continue
		}
		for _, r := range s.Sharing.TimeSlicing.Resources {
			if r.Name != "nvidia.com/gpu" && !strings.HasPrefix(r.Name, "nvidia.com/mig-") || r.Replicas < 2 {
				t.Errorf("config %s: resource %s ×%d, want an nvidia.com GPU resource with replicas ≥ 2", key, r.Name, r.Replicas)
			}
		}
	}
	for _, l := range labels {
		m := labelCommand.FindStringSubmatch(l)
		if m == nil || m[2] != "nvidia.com/device-plugin.config" || cms[0].Data[m[3]] == "" {
			t.Errorf("label command %q does not select a key of the ConfigMap", l)
		}
	}
}

// Kueue v1beta2 objects, the fields gputally writes.
type kueueSpec struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		CohortName        string `yaml:"cohortName"`
		ClusterQueue      string `yaml:"clusterQueue"`
		NamespaceSelector *struct {
			MatchExpressions []struct {
				Key      string   `yaml:"key"`
				Operator string   `yaml:"operator"`
				Values   []string `yaml:"values"`
			} `yaml:"matchExpressions"`
		} `yaml:"namespaceSelector"`
		ResourceGroups []struct {
			CoveredResources []string `yaml:"coveredResources"`
			Flavors          []struct {
				Name      string `yaml:"name"`
				Resources []struct {
					Name         string `yaml:"name"`
					NominalQuota int    `yaml:"nominalQuota"`
				} `yaml:"resources"`
			} `yaml:"flavors"`
		} `yaml:"resourceGroups"`
	} `yaml:"spec"`
}

// checkKueue checks the Kueue objects: v1beta2 only, no v1beta1 `cohort`,
// every LocalQueue pointing at a ClusterQueue of the file, and every flavor
// a ResourceFlavor of the file. It returns the nominal quotas by queue and
// resource. The API server's dry-run (scripts/chart-test.sh) checks the rest.
func checkKueue(t *testing.T, text string) map[string]int {
	t.Helper()
	objs, err := strictDecode[kueueSpec](text)
	if err != nil {
		t.Fatalf("kueue objects: %v\n%s", err, text)
	}
	flavors, queues, quota := map[string]bool{}, map[string]bool{}, map[string]int{}
	seen := map[string]bool{} // kind/namespace/name: kubectl apply would keep only the last
	for _, o := range objs {
		if o.APIVersion != "kueue.x-k8s.io/v1beta2" {
			t.Errorf("%s %s: apiVersion %s, want kueue.x-k8s.io/v1beta2", o.Kind, o.Metadata.Name, o.APIVersion)
		}
		if id := o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name; seen[id] {
			t.Errorf("%s twice", id)
		} else {
			seen[id] = true
		}
		switch o.Kind {
		case "ResourceFlavor":
			flavors[o.Metadata.Name] = true
		case "ClusterQueue":
			queues[o.Metadata.Name] = true
			for _, g := range o.Spec.ResourceGroups {
				for _, f := range g.Flavors {
					for _, r := range f.Resources {
						quota[o.Metadata.Name+" "+r.Name] = r.NominalQuota
					}
				}
			}
		}
	}
	for _, o := range objs {
		switch o.Kind {
		case "ClusterQueue":
			for _, g := range o.Spec.ResourceGroups {
				for _, f := range g.Flavors {
					if !flavors[f.Name] {
						t.Errorf("ClusterQueue %s uses flavor %s, not in the file", o.Metadata.Name, f.Name)
					}
				}
			}
		case "LocalQueue":
			if !queues[o.Spec.ClusterQueue] || o.Metadata.Namespace == "" {
				t.Errorf("LocalQueue %s/%s points at ClusterQueue %q, not in the file", o.Metadata.Namespace, o.Metadata.Name, o.Spec.ClusterQueue)
			}
		}
	}
	return quota
}

// TestMIGPartedTouchesOnlyRepartitioned: a node with a busy training GPU, a
// MIG candidate and a GPU already in MIG mode gets one config that
// repartitions only the candidate's GPU and keeps the others as they are.
func TestMIGPartedTouchesOnlyRepartitioned(t *testing.T) {
	q := fleetQuerier([]fakeGPU{
		alone("GPU-H0", "0", "node-h", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		alone("GPU-H1", "1", "node-h", h100Name, "shop", "small", 1.5, 1, 0.1, 6144),
	}, time.Hour)
	// GPU 2 runs two 3g.40gb instances, one held by a busy service.
	for _, gi := range []struct{ id, pod string }{{"1", "svc"}, {"2", ""}} {
		g := fakeGPU{uuid: "GPU-H2", index: "2", model: h100Name, host: "node-h", ns: "shop", pod: gi.pod, container: "c", rateEURPerHour: 1.5,
			busyShare: 1, activity: 0.5, fbMiB: 30000, hasActivity: true, hasFB: true, resource: "nvidia.com/mig-3g.40gb", sharing: "mig"}
		if gi.pod == "" {
			g.ns, g.container = "", ""
		}
		for _, s := range fakeSeriesFor(g, time.Hour) {
			s.labels = with(s.labels, "GPU_I_ID", gi.id, "GPU_I_PROFILE", "3g.40gb")
			q.series = append(q.series, s)
		}
	}
	r := generate(t, testConfig(), q)
	byNode := checkMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })
	want := map[int][]string{0: nil, 1: {"1g.10gb"}, 2: {"3g.40gb", "3g.40gb"}}
	got := byNode["node-h"]
	if len(got) != len(want) {
		t.Fatalf("node-h config %v, want %v", got, want)
	}
	for k, l := range want {
		if gl, ok := got[k]; !ok || !slices.Equal(gl, l) || (l == nil) != (gl == nil) {
			t.Errorf("node-h GPU %d: layout %v, want %v", k, gl, l)
		}
	}
	checkKueue(t, r.Apply.Kueue)
}

// TestStrictDecodersReject makes sure the decoders above can fail: each
// broken config must be rejected.
func TestStrictDecodersReject(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown field", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: false\n      extra: 1\n", "not found"},
		{"no mig-enabled", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n", "mig-enabled is required"},
		{"devices missing", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n", "devices"},
		{"mig-devices when disabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {1g.10gb: 1}\n", "forbidden"},
		{"no mig-devices when enabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n", "required when"},
		{"bad profile", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: true\n      mig-devices: {big: 1}\n", "not a profile"},
		{"empty config", "version: v1\nmig-configs:\n  a: []\n", "empty"},
		{"version", "version: v2\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: false\n", "version"},
	} {
		if _, err := parseMIGParted(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := strictDecode[devicePluginSpec]("version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 2\n        color: red\n"); err == nil {
		t.Error("device plugin config with an unknown field accepted")
	}
	if _, err := strictDecode[kueueSpec]("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec: {cohort: x}\n"); err == nil {
		t.Error("Kueue v1beta1 `cohort` accepted")
	}
}

// TestWriteApply writes the configuration of the test fleet's report to a
// directory: one file per config, the label script with the warnings.
func TestWriteApply(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier(testFleet(), time.Hour))
	dir := t.TempDir()
	if err := WriteApply(dir, &r.Apply); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		ApplyMIGPartedFile: r.Apply.MIGParted, ApplyTimeSlicingFile: r.Apply.TimeSlicing, ApplyKueueFile: r.Apply.Kueue,
	} {
		if got := readFile(t, dir, name); got != want {
			t.Errorf("%s differs from the report's configuration", name)
		}
	}
	script := readFile(t, dir, ApplyLabelsFile)
	for _, l := range append(append(slices.Clone(r.Apply.MIGPartedLabels), r.Apply.TimeSlicingLabels...), "# warning: "+r.Apply.TimeSlicingSharing[0]) {
		if !strings.Contains(script, l+"\n") {
			t.Errorf("%s lacks %q:\n%s", ApplyLabelsFile, l, script)
		}
	}
	checkMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })
	checkDevicePlugin(t, r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels)
	checkKueue(t, r.Apply.Kueue)
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// migInstance returns the ledger series of one MIG instance of an H100 on
// node-k, GPU 1, held by a busy pod (or unallocated when pod is ""), present
// from from (zero: the start) until until (zero: the end).
func migInstance(gi, profile, pod string, from, until time.Time) []fakeSeries {
	g := fakeGPU{uuid: "GPU-K1", index: "1", model: h100Name, host: "node-k", ns: "shop", pod: pod, container: "c", rateEURPerHour: 1.5,
		busyShare: 1, activity: 0.5, fbMiB: 30000, hasActivity: true, hasFB: true, resource: "nvidia.com/mig-" + profile, sharing: "mig", from: from}
	if pod == "" {
		g.ns, g.container = "", ""
	}
	ss := fakeSeriesFor(g, time.Hour)
	for i := range ss {
		ss[i].labels = with(ss[i].labels, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
		if at := ss[i].at; !until.IsZero() {
			ss[i].at = func(t time.Time) float64 {
				if t.After(until) {
					return math.NaN()
				}
				return at(t)
			}
		}
	}
	return ss
}

// TestMIGPartedKeepsTheEndLayout: a kept GPU repartitioned mid-range (a
// 4g.40gb until then, two 3g.40gb after) is kept with the layout it has at
// the end, not the union of all instances the range saw (4g + 3g + 3g, no
// valid H100 layout); a kept GPU whose end layout is itself invalid leaves
// its node without a config, and the file says why.
func TestMIGPartedKeepsTheEndLayout(t *testing.T) {
	mid := testEnd.Add(-84 * time.Hour)
	candidate := alone("GPU-K0", "0", "node-k", h100Name, "shop", "small", 1.5, 1, 0.1, 6144)
	t.Run("repartitioned mid-range", func(t *testing.T) {
		q := fleetQuerier([]fakeGPU{candidate}, time.Hour)
		q.series = append(q.series, migInstance("3", "4g.40gb", "old", time.Time{}, mid)...)
		q.series = append(q.series, migInstance("1", "3g.40gb", "svc", mid.Add(time.Hour), time.Time{})...)
		q.series = append(q.series, migInstance("2", "3g.40gb", "", mid.Add(time.Hour), time.Time{})...)
		r := generate(t, testConfig(), q)
		got := checkMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })["node-k"]
		want := map[int][]string{0: {"1g.10gb"}, 1: {"3g.40gb", "3g.40gb"}}
		if len(got) != len(want) {
			t.Fatalf("node-k config %v, want %v\n%s", got, want, r.Apply.MIGParted)
		}
		for k, l := range want {
			if !slices.Equal(got[k], l) {
				t.Errorf("node-k GPU %d: layout %v, want %v", k, got[k], l)
			}
		}
	})
	t.Run("invalid at the end", func(t *testing.T) {
		q := fleetQuerier([]fakeGPU{candidate}, time.Hour)
		q.series = append(q.series, migInstance("3", "4g.40gb", "old", time.Time{}, time.Time{})...)
		q.series = append(q.series, migInstance("1", "3g.40gb", "svc", mid, time.Time{})...)
		q.series = append(q.series, migInstance("5", "1g.10gb", "", mid, time.Time{})...)
		r := generate(t, testConfig(), q)
		if len(recsOf(r, "mig")) != 1 {
			t.Fatalf("mig recommendations %+v, want the candidate's", recsOf(r, "mig"))
		}
		if len(r.Apply.MIGPartedLabels) != 0 || strings.Contains(r.Apply.MIGParted, "mig-configs") {
			t.Errorf("a config for node-k although GPU 1's end layout is invalid: %q\n%s", r.Apply.MIGPartedLabels, r.Apply.MIGParted)
		}
		if !strings.Contains(r.Apply.MIGParted, "# node-k: GPU 1 (GPU-K1) ends the range with MIG instances 3g.40gb + 4g.40gb + 1g.10gb, which is no valid") {
			t.Errorf("the file does not say why node-k has no config:\n%s", r.Apply.MIGParted)
		}
	})
}

// TestMIGPartedKeepsTheMIGMode: a kept GPU without MIG instances is written
// as mig-enabled: false only when gputally_gpu_info says MIG is disabled
// (TestMIGPartedTouchesOnlyRepartitioned); MIG enabled without instances, or
// no mig_mode at all, leaves the node without a config and the file says why.
func TestMIGPartedKeepsTheMIGMode(t *testing.T) {
	for _, tc := range []struct{ mode, why string }{
		{"enabled", "but its MIG mode is enabled"},
		{"", "its MIG mode is not known"},
	} {
		q := &fakeQuerier{}
		for _, g := range []fakeGPU{
			alone("GPU-K0", "0", "node-k", h100Name, "shop", "small", 1.5, 1, 0.1, 6144),
			alone("GPU-K1", "1", "node-k", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		} {
			for _, s := range fakeSeriesFor(g, time.Hour) {
				if s.metric == "gputally_gpu_info" && g.uuid == "GPU-K1" {
					if tc.mode == "" {
						continue
					}
					s.labels = with(s.labels, "mig_mode", tc.mode)
				}
				q.series = append(q.series, s)
			}
		}
		r := generate(t, testConfig(), q)
		if len(recsOf(r, "mig")) != 1 {
			t.Fatalf("mig recommendations %+v, want the candidate's", recsOf(r, "mig"))
		}
		if len(r.Apply.MIGPartedLabels) != 0 || strings.Contains(r.Apply.MIGParted, "mig-configs") {
			t.Errorf("mode %q: a config for node-k: %q\n%s", tc.mode, r.Apply.MIGPartedLabels, r.Apply.MIGParted)
		}
		if want := "# node-k: GPU 1 (GPU-K1) has no MIG instances at the end of the range"; !strings.Contains(r.Apply.MIGParted, want) || !strings.Contains(r.Apply.MIGParted, tc.why) {
			t.Errorf("mode %q: the file does not say %q / %q:\n%s", tc.mode, want, tc.why, r.Apply.MIGParted)
		}
	}
}
