package advice

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// tsResource is one resource of the device plugin's sharing.timeSlicing.
type tsResource struct {
	Name     string `yaml:"name"`
	Replicas int    `yaml:"replicas"`
}

// deviceplugin config v1, the parts gputally writes.
type devicePluginConfig struct {
	Version string `yaml:"version"`
	Sharing struct {
		TimeSlicing struct {
			Resources []tsResource `yaml:"resources"`
		} `yaml:"timeSlicing"`
	} `yaml:"sharing"`
}

// tsConfigName is the ConfigMap key, and nvidia.com/device-plugin.config
// label value, of a node class: the GPU model with its replicas.
func tsConfigName(model string, replicas int) string {
	return dnsName(fmt.Sprintf("gputally-%s-x%d", model, replicas))
}

// timeSlicingConfig writes the NVIDIA device plugin's ConfigMap with one key
// per node class (GPU model and replicas), the label command for each node
// that hosts the time-sliced pods, and for each such node the other pods
// there that held a whole GPU and that no recommendation moves: time-slicing
// is node-wide, so their GPUs would be shared too.
func timeSlicingConfig(r *draft, p *plan, groups []tsGroup) (cfg string, labels, sharing []string) {
	if len(groups) == 0 {
		return "", nil, nil
	}
	data := map[string]string{}
	nodeKey := map[string]string{}
	nodeReplicas := map[string]int{}
	for _, g := range groups {
		for _, node := range g.nodes {
			// A node hosting two groups of the same model takes the larger replicas.
			if nodeReplicas[node] >= g.replicas {
				continue
			}
			name := tsConfigName(g.model, g.replicas)
			nodeKey[node], nodeReplicas[node] = name, g.replicas
			var c devicePluginConfig
			c.Version = "v1"
			c.Sharing.TimeSlicing.Resources = []tsResource{{Name: "nvidia.com/gpu", Replicas: g.replicas}}
			data[name] = mustYAML(c)
		}
	}
	for _, node := range slices.Sorted(maps.Keys(nodeKey)) {
		labels = append(labels, fmt.Sprintf("kubectl label node %s nvidia.com/device-plugin.config=%s --overwrite", node, nodeKey[node]))
		var others []string
		for _, g := range p.nodes[node] {
			for _, i := range g.holdings {
				h := &r.Holdings[i]
				if h.AtEnd && !p.used[i] && wholeExclusive(h) && !slices.Contains(others, h.Name()) {
					others = append(others, h.Name())
				}
			}
		}
		if len(others) > 0 {
			slices.Sort(others)
			sharing = append(sharing, fmt.Sprintf("on %s these pods held whole GPUs and would share them with time-sliced pods: %s", node, strings.Join(others, ", ")))
		}
	}
	type meta struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	}
	cfg = mustYAML(struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}{"v1", "ConfigMap", meta{"gputally-time-slicing", "gpu-operator"}, data})
	return cfg, labels, sharing
}
