package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/gpuledger/gpuledger/mig"
)

// Packing says how the workloads recommended for MIG on one GPU model fit
// onto fewer GPUs.
type Packing struct {
	Model     string     `json:"model"`
	Workloads int        `json:"workloads"`  // each on a whole GPU today
	GPUsAfter int        `json:"gpus_after"` // GPUs their MIG instances need
	Layouts   [][]string `json:"layouts"`    // the profiles on each of those GPUs
}

func wholeExclusive(h *Holding) bool {
	return h.MIGID == "" && (h.Sharing == "" || h.Sharing == "exclusive")
}

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

// recommend fills r.Recommendations, r.Packing, r.Apply and r.SavingsPerMonth.
func (a *analysis) recommend(r *Report, d *dataset) {
	f := r.MonthFactor()
	used := adviceExcluded(r) // faults.go
	// Release: held, (almost) never busy.
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if used[i] || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.release {
			continue
		}
		used[i] = true
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "release", Target: h.Namespace + "/" + h.Pod + "/" + h.Container, Model: h.Model,
			Holdings:           []string{holdingName(h)},
			SavingsEURPerMonth: h.Totals.IdleEUR * f,
			Evidence: fmt.Sprintf("held %.1f device-hours on %s (%s), busy %s of them (below %s); %.2f EUR idle over the range",
				h.Totals.HeldHours, h.Node, h.UUID, pct(h.Totals.BusyShare), pct(a.release), h.Totals.IdleEUR),
		})
	}
	tsReplicas := a.timeSlicing(r, used, f)
	migLayouts := a.migSizing(r, used, f)
	a.drainNodes(r, f)
	slices.SortStableFunc(r.Recommendations, func(x, y Recommendation) int {
		return cmp.Or(cmp.Compare(y.SavingsEURPerMonth, x.SavingsEURPerMonth), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Target, y.Target))
	})
	for _, rec := range r.Recommendations {
		r.SavingsPerMonth += rec.SavingsEURPerMonth
	}
	r.Apply.MIGParted = migPartedYAML(migLayouts)
	r.Apply.TimeSlicing = timeSlicingYAML(tsReplicas)
	r.Apply.Kueue = kueueYAML(a.quotas(d), d.step)
}

func holdingName(h *Holding) string { return h.Namespace + "/" + h.Pod + "/" + h.Container }

// timeSlicing groups low-duty pods holding whole GPUs by namespace and model
// and packs them first-fit-decreasing by busy share (× headroom, at most 1 per
// GPU) and framebuffer. It returns the replicas per model.
func (a *analysis) timeSlicing(r *Report, used map[int]bool, f float64) map[string]int {
	type key struct{ ns, model string }
	groups := map[key][]int{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if used[i] || !wholeExclusive(h) || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.lowDuty {
			continue
		}
		k := key{h.Namespace, h.Model}
		groups[k] = append(groups[k], i)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int { return cmp.Or(cmp.Compare(x.ns, y.ns), cmp.Compare(x.model, y.model)) })
	replicas := map[string]int{}
	for _, k := range keys {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			return cmp.Compare(r.Holdings[y].Totals.BusyShare, r.Holdings[x].Totals.BusyShare)
		})
		memMiB := math.Inf(1)
		if m, ok := mig.ForModel(k.model); ok {
			memMiB = float64(m.MemoryTotalMiB)
		}
		type bin struct {
			duty, mem float64
			n         int
		}
		var bins []bin
		for _, i := range idx {
			h := &r.Holdings[i]
			duty, mem := h.Totals.BusyShare*a.headroom, h.Usage.P99FBMiB*a.headroom
			placed := false
			for b := range bins {
				if bins[b].duty+duty <= 1 && bins[b].mem+mem <= memMiB {
					bins[b].duty += duty
					bins[b].mem += mem
					bins[b].n++
					placed = true
					break
				}
			}
			if !placed {
				bins = append(bins, bin{duty: duty, mem: mem, n: 1})
			}
		}
		if len(bins) >= len(idx) {
			continue
		}
		n := 0
		var cost float64
		var names, shares []string
		for _, b := range bins {
			n = max(n, b.n)
		}
		for _, i := range idx {
			h := &r.Holdings[i]
			used[i] = true
			cost += h.Totals.CostEUR
			names = append(names, holdingName(h))
			shares = append(shares, fmt.Sprintf("%s %s", h.Pod, pct(h.Totals.BusyShare)))
		}
		slices.Sort(names)
		saved := float64(len(idx)-len(bins)) / float64(len(idx)) * cost * f
		replicas[k.model] = max(replicas[k.model], n)
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "time-slicing", Target: k.ns, Model: k.model, Replicas: n, Holdings: names,
			SavingsEURPerMonth: saved,
			Evidence: fmt.Sprintf("%d pods each hold a whole GPU but are busy below %s of the time (%s); with %d replicas per GPU they fit on %d GPU(s) instead of %d; they cost %.2f EUR over the range",
				len(idx), pct(a.lowDuty), strings.Join(shares, ", "), n, len(bins), len(idx), cost),
		})
	}
	return replicas
}

// smallestProfile returns the smallest MIG profile of m with memory ≥ needMiB
// and compute ≥ activity, other than the whole GPU; false when none does.
func smallestProfile(m *mig.Model, needMiB, activity float64) (mig.Profile, bool) {
	ps := slices.Clone(m.Profiles)
	slices.SortStableFunc(ps, func(x, y mig.Profile) int {
		return cmp.Or(cmp.Compare(x.ComputeSlices, y.ComputeSlices), cmp.Compare(x.MemorySlices, y.MemorySlices))
	})
	for _, p := range ps {
		if p.Media || p.ComputeSlices >= mig.ComputeSlicesPerGPU {
			continue
		}
		if float64(p.MemoryMiB) >= needMiB && float64(p.ComputeSlices)/mig.ComputeSlicesPerGPU >= activity {
			return p, true
		}
	}
	return mig.Profile{}, false
}

// migSizing recommends a MIG profile for pods on whole GPUs whose p99
// framebuffer × headroom and p95 activity fit a smaller instance, and packs
// them per model. It returns the layouts per model.
func (a *analysis) migSizing(r *Report, used map[int]bool, f float64) map[string][][]string {
	byModel := map[string][]mig.Profile{}
	models := map[string]*mig.Model{}
	count := map[string]int{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if used[i] || !wholeExclusive(h) || !h.Usage.HasFB || !h.Usage.HasActivity || h.Totals.HeldHours <= 0 {
			continue
		}
		m, ok := mig.ForModel(h.Model)
		if !ok {
			continue
		}
		need := h.Usage.P99FBMiB * a.headroom
		p, ok := smallestProfile(m, need, h.Usage.P95Activity)
		if !ok {
			continue
		}
		used[i] = true
		models[m.Name] = m
		byModel[m.Name] = append(byModel[m.Name], p)
		count[m.Name]++
		weight := float64(p.ComputeSlices) / mig.ComputeSlicesPerGPU
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "mig", Target: holdingName(h), Model: h.Model, Profile: p.Name, Holdings: []string{holdingName(h)},
			SavingsEURPerMonth: h.Totals.CostEUR * (1 - weight) * f,
			Evidence: fmt.Sprintf("p99 framebuffer %.0f MiB × %.2f = %.0f MiB ≤ %d MiB of %s (peak %.0f MiB); p95 activity %s ≤ %d/7 = %s; the whole GPU cost %.2f EUR over the range, %s costs %d/7 of it",
				h.Usage.P99FBMiB, a.headroom, need, p.MemoryMiB, p.Name, h.Usage.PeakFBMiB, pct(h.Usage.P95Activity),
				p.ComputeSlices, pct(weight), h.Totals.CostEUR, p.Name, p.ComputeSlices),
		})
	}
	layouts := map[string][][]string{}
	names := make([]string, 0, len(byModel))
	for n := range byModel {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		ps := byModel[name]
		slices.SortStableFunc(ps, func(x, y mig.Profile) int {
			return cmp.Or(cmp.Compare(y.ComputeSlices, x.ComputeSlices), cmp.Compare(y.MemorySlices, x.MemorySlices))
		})
		var gpus [][]string
		for _, p := range ps {
			placed := false
			for g := range gpus {
				if models[name].CheckLayout(append(slices.Clone(gpus[g]), p.Name)) == nil {
					gpus[g] = append(gpus[g], p.Name)
					placed = true
					break
				}
			}
			if !placed {
				gpus = append(gpus, []string{p.Name})
			}
		}
		layouts[name] = gpus
		r.Packing = append(r.Packing, Packing{Model: name, Workloads: count[name], GPUsAfter: len(gpus), Layouts: gpus})
	}
	return layouts
}

// drainNodes recommends draining nodes whose GPUs sat (almost) all unallocated.
func (a *analysis) drainNodes(r *Report, f float64) {
	for _, n := range r.Nodes {
		t := n.Totals
		if drainBlocked(r, n.Name) || t.GPUHours <= 0 || t.UnallocatedHours/t.GPUHours < a.drain {
			continue
		}
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "drain", Target: n.Name,
			SavingsEURPerMonth: t.UnallocatedEUR * f,
			Evidence: fmt.Sprintf("%.1f of %.1f device-hours unallocated (%s, at least %s); %.2f EUR unallocated over the range",
				t.UnallocatedHours, t.GPUHours, pct(t.UnallocatedHours/t.GPUHours), pct(a.drain), t.UnallocatedEUR),
		})
	}
}

// quota is a team's nominal quota of one resource.
type quota struct {
	team, resource string
	devices        int
	namespaces     []string // of the team, sorted
}

// quotas returns per team and resource the most devices that were busy in
// the same step bucket (at least 1).
func (a *analysis) quotas(d *dataset) []quota {
	type key struct{ team, resource string }
	peak := map[key][]int{}
	namespaces := map[string]map[string]bool{} // team → its namespaces
	for k, e := range d.ledger {
		if k.holder == (holderKey{}) || e.seconds[stateBusy]+e.seconds[stateIdle] <= 0 {
			continue
		}
		res := d.alloc[k].resource
		if res == "" {
			res = "nvidia.com/gpu"
			if e.profile != "" {
				res = "nvidia.com/mig-" + e.profile
			}
		}
		kk := key{a.team(d, k.holder), res}
		if namespaces[kk.team] == nil {
			namespaces[kk.team] = map[string]bool{}
		}
		namespaces[kk.team][k.holder.Namespace] = true
		if peak[kk] == nil {
			peak[kk] = make([]int, d.buckets)
		}
		for b, s := range e.busyPerBucket {
			if s > 0 {
				peak[kk][b]++
			}
		}
	}
	var out []quota
	for k, counts := range peak {
		ns := slices.Sorted(maps.Keys(namespaces[k.team]))
		out = append(out, quota{team: k.team, resource: k.resource, devices: max(1, slices.Max(append(counts, 0))), namespaces: ns})
	}
	slices.SortFunc(out, func(x, y quota) int { return cmp.Or(cmp.Compare(x.team, y.team), cmp.Compare(x.resource, y.resource)) })
	return out
}

// dnsName turns s into a DNS-1123 label.
func dnsName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > 63 {
		out = strings.Trim(out[:63], "-")
	}
	if out == "" {
		out = "x"
	}
	return out
}

func mustYAML(v any) string {
	var sb strings.Builder
	enc := yaml.NewEncoder(&sb)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		// The values are built here from plain types; encoding cannot fail.
		panic(fmt.Sprintf("encode yaml: %v", err))
	}
	return sb.String()
}

type migDevice struct {
	Devices    string         `yaml:"devices"`
	MIGEnabled bool           `yaml:"mig-enabled"`
	MIGDevices map[string]int `yaml:"mig-devices"`
}

// migPartedYAML writes one mig-parted config per distinct packed layout.
func migPartedYAML(layouts map[string][][]string) string {
	if len(layouts) == 0 {
		return ""
	}
	configs := map[string][]migDevice{}
	var comments []string
	models := make([]string, 0, len(layouts))
	for m := range layouts {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		seen := map[string]int{}
		for _, l := range layouts[m] {
			counts := map[string]int{}
			for _, p := range l {
				counts[p]++
			}
			sig := fmt.Sprint(counts)
			if _, ok := seen[sig]; !ok {
				seen[sig] = len(seen) + 1
				configs[fmt.Sprintf("gpuledger-%s-%d", dnsName(m), seen[sig])] = []migDevice{{Devices: "all", MIGEnabled: true, MIGDevices: counts}}
			}
			comments = append(comments, fmt.Sprintf("# %s GPU → gpuledger-%s-%d: %s", m, dnsName(m), seen[sig], strings.Join(l, " + ")))
		}
	}
	return strings.Join(comments, "\n") + "\n" + mustYAML(struct {
		Version    string                 `yaml:"version"`
		MIGConfigs map[string][]migDevice `yaml:"mig-configs"`
	}{"v1", configs})
}

type tsResource struct {
	Name     string `yaml:"name"`
	Replicas int    `yaml:"replicas"`
}

// timeSlicingYAML writes the device plugin's ConfigMap, one key per model.
func timeSlicingYAML(replicas map[string]int) string {
	if len(replicas) == 0 {
		return ""
	}
	data := map[string]string{}
	for m, n := range replicas {
		var cfg struct {
			Version string `yaml:"version"`
			Sharing struct {
				TimeSlicing struct {
					Resources []tsResource `yaml:"resources"`
				} `yaml:"timeSlicing"`
			} `yaml:"sharing"`
		}
		cfg.Version = "v1"
		cfg.Sharing.TimeSlicing.Resources = []tsResource{{Name: "nvidia.com/gpu", Replicas: n}}
		data[dnsName(m)] = mustYAML(cfg)
	}
	type meta struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	}
	return mustYAML(struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}{"v1", "ConfigMap", meta{"gpuledger-time-slicing", "gpu-operator"}, data})
}

// kueueYAML writes one ClusterQueue per team.
func kueueYAML(qs []quota, step time.Duration) string {
	if len(qs) == 0 {
		return ""
	}
	type res struct {
		Name         string `yaml:"name"`
		NominalQuota int    `yaml:"nominalQuota"`
	}
	type flavor struct {
		Name      string `yaml:"name"`
		Resources []res  `yaml:"resources"`
	}
	type group struct {
		CoveredResources []string `yaml:"coveredResources"`
		Flavors          []flavor `yaml:"flavors"`
	}
	type requirement struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	}
	type selector struct {
		MatchExpressions []requirement `yaml:"matchExpressions"`
	}
	type cq struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			NamespaceSelector selector `yaml:"namespaceSelector"`
			ResourceGroups    []group  `yaml:"resourceGroups"`
		} `yaml:"spec"`
	}
	var docs []string
	for i := 0; i < len(qs); {
		j := i
		var q cq
		q.APIVersion, q.Kind = "kueue.x-k8s.io/v1beta1", "ClusterQueue"
		q.Metadata.Name = dnsName(qs[i].team)
		// Only the team's own namespaces may use its quota.
		q.Spec.NamespaceSelector.MatchExpressions = []requirement{
			{Key: "kubernetes.io/metadata.name", Operator: "In", Values: qs[i].namespaces},
		}
		g := group{Flavors: []flavor{{Name: "default-flavor"}}}
		for ; j < len(qs) && qs[j].team == qs[i].team; j++ {
			g.CoveredResources = append(g.CoveredResources, qs[j].resource)
			g.Flavors[0].Resources = append(g.Flavors[0].Resources, res{Name: qs[j].resource, NominalQuota: qs[j].devices})
		}
		q.Spec.ResourceGroups = []group{g}
		docs = append(docs, fmt.Sprintf("# team %s: the most devices it kept busy at once (in one %s bucket)\n", qs[i].team, model.Duration(step))+mustYAML(q))
		i = j
	}
	return strings.Join(docs, "---\n")
}
