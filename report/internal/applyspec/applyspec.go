// Package applyspec holds strict decoders for the configuration the report
// emits, for the report's tests. NVIDIA's own parsers (mig-parted
// api/spec/v1, k8s-device-plugin api/config/v1) are not available to this
// module, so their rules are written out here: unknown fields are errors,
// required fields must be there.
//
// It imports no report package; the tests of report and report/advice use it.
package applyspec

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/mig"
)

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

// CheckMIGParted checks the mig-parted config and its label commands: valid
// v1, one config per labelled node, devices by index (never all), and every
// layout placing on the node's GPU model. modelOf gives a node's GPU model.
func CheckMIGParted(t *testing.T, text string, labels []string, modelOf func(node string) string) map[string]map[int][]string {
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

// device plugin config, version v1, as far as its time-slicing goes. The
// device plugin (cmd/nvidia-device-plugin, disableResourceRenamingInConfig)
// ignores a resource's `rename` and `devices` other than all, so a config
// that sets them does not do what it says: they are rejected here, and so is
// a resource named twice (the device plugin would offer its devices twice).
type devicePluginSpec struct {
	Version string `yaml:"version"`
	Sharing struct {
		TimeSlicing *struct {
			RenameByDefault            *bool `yaml:"renameByDefault"`
			FailRequestsGreaterThanOne *bool `yaml:"failRequestsGreaterThanOne"`
			Resources                  []struct {
				Name     string    `yaml:"name"`
				Rename   *string   `yaml:"rename"`
				Devices  yaml.Node `yaml:"devices"`
				Replicas int       `yaml:"replicas"`
			} `yaml:"resources"`
		} `yaml:"timeSlicing"`
	} `yaml:"sharing"`
}

// DevicePluginConfig is one device plugin config's time-slicing: the
// replicas per resource name, and whether the time-sliced resources are
// offered as <name>.shared.
type DevicePluginConfig struct {
	RenameByDefault bool
	Replicas        map[string]int
}

// Offered returns what a device of resource name (nvidia.com/gpu for a
// whole GPU, nvidia.com/mig-<profile> for a MIG instance) is offered as on a
// node with config c: the resource name and the replicas (1: whole).
func (c DevicePluginConfig) Offered(name string) (string, int) {
	n, ok := c.Replicas[name]
	switch {
	case !ok:
		return name, 1
	case c.RenameByDefault:
		return name + ".shared", n
	}
	return name, n
}

// parseDevicePlugin checks one device plugin config against the rules above.
func parseDevicePlugin(text string) (DevicePluginConfig, error) {
	specs, err := strictDecode[devicePluginSpec](text)
	if err != nil {
		return DevicePluginConfig{}, err
	}
	if len(specs) != 1 {
		return DevicePluginConfig{}, fmt.Errorf("%d documents, want 1", len(specs))
	}
	s := specs[0]
	if s.Version != "v1" || s.Sharing.TimeSlicing == nil || len(s.Sharing.TimeSlicing.Resources) == 0 {
		return DevicePluginConfig{}, errors.New("want version v1 with sharing.timeSlicing.resources")
	}
	c := DevicePluginConfig{Replicas: map[string]int{}}
	if rb := s.Sharing.TimeSlicing.RenameByDefault; rb != nil {
		c.RenameByDefault = *rb
	}
	for _, r := range s.Sharing.TimeSlicing.Resources {
		switch {
		case r.Name != "nvidia.com/gpu" && !strings.HasPrefix(r.Name, "nvidia.com/mig-") || r.Replicas < 2:
			return c, fmt.Errorf("resource %s ×%d, want an nvidia.com GPU resource with replicas ≥ 2", r.Name, r.Replicas)
		case r.Rename != nil:
			return c, fmt.Errorf("resource %s sets rename, which the device plugin ignores (renameByDefault is the renaming it honours)", r.Name)
		case r.Devices.Kind != 0 && !(r.Devices.Kind == yaml.ScalarNode && r.Devices.Value == "all"):
			return c, fmt.Errorf("resource %s sets devices, which the device plugin ignores (it time-slices all devices of a resource)", r.Name)
		}
		if _, dup := c.Replicas[r.Name]; dup {
			return c, fmt.Errorf("resource %s named twice", r.Name)
		}
		c.Replicas[r.Name] = r.Replicas
	}
	return c, nil
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

// CheckDevicePlugin checks the device plugin ConfigMap, each of its configs
// against the device plugin's v1 rules, and that every label command selects
// one of its keys. It returns the config each labelled node gets.
func CheckDevicePlugin(t *testing.T, text string, labels []string) map[string]DevicePluginConfig {
	t.Helper()
	cms, err := strictDecode[configMapSpec](text)
	if err != nil || len(cms) != 1 || cms[0].APIVersion != "v1" || cms[0].Kind != "ConfigMap" || cms[0].Metadata.Name == "" || len(cms[0].Data) == 0 {
		t.Fatalf("device plugin ConfigMap (%v):\n%s", err, text)
	}
	configs := map[string]DevicePluginConfig{}
	for key, cfg := range cms[0].Data {
		c, err := parseDevicePlugin(cfg)
		if err != nil {
			t.Errorf("config %s: %v\n%s", key, err, cfg)
			continue
		}
		configs[key] = c
	}
	byNode := map[string]DevicePluginConfig{}
	for _, l := range labels {
		m := labelCommand.FindStringSubmatch(l)
		if m == nil || m[2] != "nvidia.com/device-plugin.config" || cms[0].Data[m[3]] == "" {
			t.Errorf("label command %q does not select a key of the ConfigMap", l)
			continue
		}
		byNode[m[1]] = configs[m[3]]
	}
	return byNode
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

// CheckKueue checks the Kueue objects: v1beta2 only, no v1beta1 `cohort`,
// every LocalQueue pointing at a ClusterQueue of the file, and every flavor
// a ResourceFlavor of the file. It returns the nominal quotas by queue and
// resource. The API server's dry-run (scripts/chart-test.sh) checks the rest.
func CheckKueue(t *testing.T, text string) map[string]int {
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

// ApplyMIGParted applies the config of one node (device index → layout, nil:
// MIG disabled, as CheckMIGParted returns it) to the node's GPUs as they are
// (index → layout, nil: MIG disabled) the way mig-parted does: every GPU the
// config lists gets the config's layout. It returns the indices of the GPUs
// whose layout changes, sorted, and an error when the config leaves a GPU of
// the node out or lists one the node lacks.
func ApplyMIGParted(config, node map[int][]string) ([]int, error) {
	for k := range config {
		if _, ok := node[k]; !ok {
			return nil, fmt.Errorf("the config lists GPU %d, which the node lacks", k)
		}
	}
	var changed []int
	for _, k := range slices.Sorted(maps.Keys(node)) {
		want, ok := config[k]
		if !ok {
			return nil, fmt.Errorf("the config leaves GPU %d out", k)
		}
		have := node[k]
		if (want == nil) != (have == nil) || !slices.Equal(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(have))) {
			changed = append(changed, k)
		}
	}
	return changed, nil
}
