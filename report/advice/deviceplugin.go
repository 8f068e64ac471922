package advice

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/analysis"
)

// The NVIDIA device plugin's time-slicing (config v1,
// sharing.timeSlicing): a node's config time-slices every device of each
// resource it names (`devices` other than all is ignored), and renames a
// time-sliced resource only by renameByDefault, to <name>.shared (a
// resource's own `rename` is ignored), so a node's sharing is one replica
// count per resource name and one rename flag. failRequestsGreaterThanOne
// is left at its default: nothing the ledger sees tells it.

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
			RenameByDefault bool         `yaml:"renameByDefault,omitempty"`
			Resources       []tsResource `yaml:"resources"`
		} `yaml:"timeSlicing"`
	} `yaml:"sharing"`
}

// tsConfig is a node's time-slicing: the replicas per resource name, and
// whether the device plugin offers them as <name>.shared.
type tsConfig struct {
	renameByDefault bool
	replicas        map[string]int
}

// offered is the resource name the device plugin offers the time-sliced
// resource name as.
func (c *tsConfig) offered(name string) string {
	if c.renameByDefault {
		return name + ".shared"
	}
	return name
}

// text is the device plugin config file of c.
func (c *tsConfig) text() string {
	var dp devicePluginConfig
	dp.Version = "v1"
	dp.Sharing.TimeSlicing.RenameByDefault = c.renameByDefault
	for _, name := range slices.Sorted(maps.Keys(c.replicas)) {
		dp.Sharing.TimeSlicing.Resources = append(dp.Sharing.TimeSlicing.Resources, tsResource{Name: name, Replicas: c.replicas[name]})
	}
	return mustYAML(dp)
}

// tsConfigName is the ConfigMap key, and nvidia.com/device-plugin.config
// label value, of a node class: the GPU model with its replicas.
func tsConfigName(model string, replicas int) string {
	return dnsName(fmt.Sprintf("gputally-%s-x%d", model, replicas))
}

// timeSlicingConfig writes the NVIDIA device plugin's ConfigMap with one key
// per node class, the label command for each node that hosts the
// time-sliced pods, and per node a warning naming the pods whose sharing the
// node's config changes. A node's config keeps every time-slicing setting
// the node has at the end of the range (existingSharing: resource names,
// replicas, renaming) and adds the advice's: nvidia.com/gpu with the
// replicas the packing needs. A node that already time-slices nvidia.com/gpu
// keeps its replicas when they are at least as many; a node whose sharing
// the device plugin cannot keep with the advice's (MPS, replicas not known,
// fewer replicas than the packing needs, renamed and not renamed resources)
// gets no config, and a comment says why. Nodes without sharing of their own
// share a key per GPU model and replicas; the others get one each.
func timeSlicingConfig(r *draft, p *plan, groups []tsGroup) (cfg string, labels, sharing []string) {
	if len(groups) == 0 {
		return "", nil, nil
	}
	type need struct {
		model    string
		replicas int
	}
	needs := map[string]need{}
	for _, g := range groups {
		for _, node := range g.nodes {
			// A node hosting two groups of the same model takes the larger replicas.
			if needs[node].replicas < g.replicas {
				needs[node] = need{g.model, g.replicas}
			}
		}
	}
	data := map[string]string{}
	var comments []string
	for _, node := range slices.Sorted(maps.Keys(needs)) {
		n := needs[node]
		c, why := existingSharing(r, p, node)
		if why != "" {
			comments = append(comments, fmt.Sprintf("# %s: %s; no config is written for it", node, why))
			continue
		}
		key := tsConfigName(n.model, n.replicas)
		if len(c.replicas) > 0 {
			key = dnsName("gputally-" + node)
		}
		const res = "nvidia.com/gpu"
		switch have, ok := c.replicas[res]; {
		case ok && have < n.replicas:
			comments = append(comments, fmt.Sprintf("# %s: it already time-slices %s ×%d, fewer replicas than the %d the advice packs, and more would change the sharing of the pods there; no config is written for it",
				node, res, have, n.replicas))
			continue
		case ok:
			comments = append(comments, fmt.Sprintf("# %s (%s): keeps its time-slicing of %s ×%d (offered as %s), which hosts the time-sliced pods", node, key, res, have, c.offered(res)))
		case len(c.replicas) > 0:
			c.replicas[res] = n.replicas
			comments = append(comments, fmt.Sprintf("# %s (%s): adds %s ×%d (offered as %s) and keeps its time-slicing of %s", node, key, res, n.replicas, c.offered(res), otherSharing(&c, res)))
		default:
			c.replicas[res] = n.replicas
		}
		data[key] = c.text()
		labels = append(labels, fmt.Sprintf("kubectl label node %s nvidia.com/device-plugin.config=%s --overwrite", shellWord(node), key))
		if w := sharingChanges(r, p, node, c); w != "" {
			sharing = append(sharing, w)
		}
	}
	if len(data) == 0 {
		return commentLines(comments), nil, sharing
	}
	type meta struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	}
	if len(comments) > 0 {
		cfg = commentLines(comments)
	}
	cfg += mustYAML(struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}{"v1", "ConfigMap", meta{"gputally-time-slicing", "gpu-operator"}, data})
	return cfg, labels, sharing
}

// otherSharing names c's resources but res with their replicas.
func otherSharing(c *tsConfig, res string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.replicas)) {
		if name != res {
			out = append(out, fmt.Sprintf("%s ×%d (offered as %s)", name, c.replicas[name], c.offered(name)))
		}
	}
	return strings.Join(out, ", ")
}

// existingSharing returns the time-slicing node has at the end of the range,
// as the device plugin config that gives it: from the time-sliced holdings
// there at the end, each resource they were allocated through (a name
// ending in .shared is renamed) with the replicas its devices offer. It says
// why the device plugin cannot keep it, when that is so.
func existingSharing(r *draft, p *plan, node string) (tsConfig, string) {
	c := tsConfig{replicas: map[string]int{}}
	renamed := map[bool]string{} // renamed or not → a resource that is
	for _, g := range p.nodes[node] {
		for _, i := range g.holdings {
			h := &r.Holdings[i]
			if !h.AtEnd {
				continue
			}
			switch h.Sharing {
			case "mps":
				return c, fmt.Sprintf("%s shares %s with MPS, and the device plugin applies MPS or time-slicing, not both", h.Name(), h.Resource)
			case "time-slicing":
			default:
				continue
			}
			if h.Resource == "" {
				return c, fmt.Sprintf("the resource %s holds its time-sliced share through is not known", h.Name())
			}
			if h.Replicas < 2 {
				return c, fmt.Sprintf("the replicas %s's GPU %s (gpu %s) offers as %s are not known", h.Name(), g.uuid, g.index, h.Resource)
			}
			name := strings.TrimSuffix(h.Resource, ".shared")
			if have, ok := c.replicas[name]; ok && have != h.Replicas {
				return c, fmt.Sprintf("it time-slices %s ×%d and ×%d, and the device plugin gives every device of a resource the same replicas", name, have, h.Replicas)
			}
			c.replicas[name] = h.Replicas
			renamed[name != h.Resource] = h.Resource
		}
	}
	if len(renamed) > 1 {
		return c, fmt.Sprintf("it offers %s renamed and %s not, and the device plugin renames all time-sliced resources (renameByDefault) or none", renamed[true], renamed[false])
	}
	c.renameByDefault = renamed[true] != ""
	return c, ""
}

// sharingOf is how a holding holds its device through the device plugin:
// the resource it is offered as and the replicas of its device (1: whole).
type sharingOf struct {
	resource string
	replicas int
}

func (s sharingOf) String() string {
	if s.replicas > 1 {
		return fmt.Sprintf("%s ×%d", s.resource, s.replicas)
	}
	return s.resource + " whole"
}

// sharingBefore is how h holds its device at the end of the range; false
// for a holding the device plugin does not allocate (DRA).
func sharingBefore(h *analysis.Holding) (sharingOf, bool) {
	res := heldResource(h.Resource, h.Profile)
	switch h.Sharing {
	case "time-slicing":
		return sharingOf{res, h.Replicas}, true
	case "", "exclusive", "mig":
		return sharingOf{res, 1}, true
	}
	return sharingOf{}, false
}

// sharingChanges names the pods on node, there at the end of the range and
// not moved by a recommendation, whose sharing config c changes: those that
// would start sharing their GPU (its resource becomes time-sliced), stop
// sharing it, or share it with other replicas or under another name. ""
// when none would.
func sharingChanges(r *draft, p *plan, node string, c tsConfig) string {
	changes := map[string][]string{}
	for _, g := range p.nodes[node] {
		for _, i := range g.holdings {
			h := &r.Holdings[i]
			if !h.AtEnd || p.used[i] {
				continue
			}
			before, ok := sharingBefore(h)
			if !ok {
				continue
			}
			name := strings.TrimSuffix(before.resource, ".shared")
			after := sharingOf{name, 1}
			if n, ok := c.replicas[name]; ok {
				after = sharingOf{c.offered(name), n}
			}
			var how string
			switch {
			case before == after:
				continue
			case before.replicas == 1 && after.replicas > 1:
				how = "would start sharing their GPU"
			case before.replicas > 1 && after.replicas == 1:
				how = "would stop sharing their GPU"
			default:
				how = "would share their GPU otherwise"
			}
			how = fmt.Sprintf("%s (%s → %s)", how, before, after)
			if !slices.Contains(changes[how], h.Name()) {
				changes[how] = append(changes[how], h.Name())
			}
		}
	}
	if len(changes) == 0 {
		return ""
	}
	var parts []string
	for _, how := range slices.Sorted(maps.Keys(changes)) {
		slices.Sort(changes[how])
		parts = append(parts, fmt.Sprintf("%s: %s", how, strings.Join(changes[how], ", ")))
	}
	return fmt.Sprintf("on %s these pods %s", node, strings.Join(parts, "; these "))
}
