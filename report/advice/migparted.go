package advice

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gputally/gputally/mig"
	"github.com/gputally/gputally/report/model"
)

// migDevice is one entry of a mig-parted config (version v1).
type migDevice struct {
	Devices    []int          `yaml:"devices"`
	MIGEnabled bool           `yaml:"mig-enabled"`
	MIGDevices map[string]int `yaml:"mig-devices,omitempty"`
}

// migConfigName is the mig-parted config, and nvidia.com/mig.config label
// value, of a node.
func migConfigName(node string) string { return dnsName("gputally-" + node) }

// migPartedConfig writes one mig-parted config per node with a GPU to
// repartition. Each lists every GPU of the node by index: the repartitioned
// ones with their new layout, every other one as it is (its current MIG
// layout, or mig-enabled: false), so that applying it touches no GPU the
// advice does not repartition. It returns the file and the label commands.
// A GPU kept as it is keeps the MIG instances it has at the end of the range
// (gpuInfo.current), not every instance the range saw. A node whose GPU
// indices are not known, or with a kept GPU whose current layout cannot be
// told valid (keptLayoutProblem), gets a comment instead of a config: applying
// a guessed layout would repartition a GPU in use.
func migPartedConfig(p *plan, layouts map[string][]string) (string, []string) {
	if len(layouts) == 0 {
		return "", nil
	}
	nodes := map[string]bool{}
	for uuid := range layouts {
		nodes[p.gpus[uuid].node] = true
	}
	configs := map[string][]migDevice{}
	var comments, labels []string
	for _, node := range slices.Sorted(maps.Keys(nodes)) {
		name := migConfigName(node)
		list, changed, kept, why := nodeMIGConfig(p, node, layouts)
		if why != "" {
			comments = append(comments, fmt.Sprintf("# %s: %s; no config is written for it", node, why))
			continue
		}
		configs[name] = list
		comments = append(comments, fmt.Sprintf("# %s (%s): repartitions %s", node, name, strings.Join(changed, ", ")))
		if len(kept) > 0 {
			comments = append(comments, fmt.Sprintf("#   and keeps as they are %s", strings.Join(kept, ", ")))
		}
		labels = append(labels, fmt.Sprintf("kubectl label node %s nvidia.com/mig.config=%s --overwrite", shellWord(node), name))
	}
	if len(configs) == 0 {
		return commentLines(comments), nil
	}
	return commentLines(comments) + mustYAML(struct {
		Version    string                 `yaml:"version"`
		MIGConfigs map[string][]migDevice `yaml:"mig-configs"`
	}{"v1", configs}), labels
}

// nodeMIGConfig returns the mig-parted entries of node's config, one per
// layout, in device order, and the GPUs it repartitions and keeps as they
// are; or why the node gets no config.
func nodeMIGConfig(p *plan, node string, layouts map[string][]string) (list []migDevice, changed, kept []string, why string) {
	entries := map[string]*migDevice{} // by layout signature
	for _, g := range p.nodes[node] {
		idx, err := strconv.Atoi(g.index)
		if err != nil {
			return nil, nil, nil, "the GPUs' indices (the gpu label) are unknown"
		}
		var counts map[string]int
		layout, repartition := layouts[g.uuid]
		if !repartition {
			layout = model.Profiles(g.current)
			if why = keptLayoutProblem(g); why != "" {
				return nil, nil, nil, why
			}
		}
		if len(layout) > 0 {
			counts = map[string]int{}
			for _, pr := range layout {
				counts[pr]++
			}
		}
		sig := fmt.Sprint(repartition, counts)
		e := entries[sig]
		if e == nil {
			e = &migDevice{MIGEnabled: counts != nil, MIGDevices: counts}
			entries[sig] = e
		}
		e.Devices = append(e.Devices, idx)
		desc := fmt.Sprintf("GPU %d (%s)", idx, g.uuid)
		switch {
		case repartition:
			changed = append(changed, fmt.Sprintf("%s → %s", desc, strings.Join(layout, " + ")))
		case g.repartitioned():
			kept = append(kept, fmt.Sprintf("%s, repartitioned during the range (it also had %s), with its layout at the end: %s",
				desc, strings.Join(gone(g), " + "), layoutText(g.current)))
		default:
			kept = append(kept, desc)
		}
	}
	list = make([]migDevice, 0, len(entries))
	for _, e := range entries {
		list = append(list, *e)
	}
	slices.SortFunc(list, func(x, y migDevice) int { return cmp.Compare(x.Devices[0], y.Devices[0]) })
	return list, changed, kept, ""
}

// keptLayoutProblem says why the layout g has at the end of the range cannot
// be written as g's layout in a mig-parted config, or "" when it can: every
// profile must exist for g's model, and the instances must fit and place
// together on one GPU (mig.Model.Place).
//
// A GPU without instances at the end is written as mig-enabled: false only
// when gputally_gpu_info says its MIG mode is disabled: a MIG-enabled GPU
// without instances, or one whose mode is not known, would have its mode
// changed by such a config.
func keptLayoutProblem(g *gpuInfo) string {
	if g.unknownEnd != "" {
		return g.unknownEnd
	}
	if len(g.current) == 0 {
		switch g.migMode {
		case "disabled":
			return ""
		case "":
			return fmt.Sprintf("GPU %s (%s) has no MIG instances at the end of the range and its MIG mode is not known (no gputally_gpu_info mig_mode)", g.index, g.uuid)
		}
		return fmt.Sprintf("GPU %s (%s) has no MIG instances at the end of the range but its MIG mode is %s", g.index, g.uuid, g.migMode)
	}
	m, ok := mig.ForModel(g.model)
	if !ok {
		return fmt.Sprintf("GPU %s (%s) has MIG instances %s, but the MIG tables lack its model %q, so that layout cannot be checked",
			g.index, g.uuid, strings.Join(model.Profiles(g.current), " + "), g.model)
	}
	if _, err := m.Place(model.Profiles(g.current)); err != nil {
		return fmt.Sprintf("GPU %s (%s) ends the range with MIG instances %s, which is no valid %s layout (%v): its current layout is not known",
			g.index, g.uuid, strings.Join(model.Profiles(g.current), " + "), m.Name, err)
	}
	return ""
}

// gone returns the instances g had during the range but not at its end, as
// profile (GPU_I_ID), in instance order.
func gone(g *gpuInfo) []string {
	var ks []model.DeviceKey
	for k := range g.layout {
		if !slices.Contains(g.current, k) {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(x, y model.DeviceKey) int {
		return cmp.Or(model.CompareGPUIndex(x.GI, y.GI), cmp.Compare(x.Profile, y.Profile))
	})
	return instanceNames(ks)
}

// instanceNames names instances as profile (GPU_I_ID).
func instanceNames(ks []model.DeviceKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = fmt.Sprintf("%s (GPU_I_ID %s)", k.Profile, k.GI)
	}
	return out
}

// layoutText names a GPU's instances, or says it has none.
func layoutText(ks []model.DeviceKey) string {
	if len(ks) == 0 {
		return "no MIG instances"
	}
	return strings.Join(instanceNames(ks), " + ")
}
