package applyspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

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
