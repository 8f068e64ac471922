package applyspec

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/mig"
)

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
