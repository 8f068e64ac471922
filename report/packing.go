package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gputally/gputally/mig"
)

// Packing says how the workloads recommended for MIG on one GPU model fit
// onto fewer GPUs.
type Packing struct {
	Model     string     `json:"model"`
	Workloads int        `json:"workloads"`  // each alone on a whole GPU today
	GPUsAfter int        `json:"gpus_after"` // GPUs their MIG instances need
	Layouts   [][]string `json:"layouts"`    // the profiles on each of those GPUs
}

// tsGroup is one time-slicing recommendation: its model, the replicas per GPU
// it needs and the nodes whose GPUs keep hosting the pods.
type tsGroup struct {
	model    string
	replicas int
	nodes    []string
}

// timeSlicing groups low-duty pods that alone hold a whole GPU by namespace
// and model and packs them first-fit-decreasing by busy share (× headroom, at
// most 1 per GPU) and framebuffer. A pod whose framebuffer was not measured
// is left out: packing it on duty alone could overfill a GPU's memory. When they fit on fewer GPUs, the cheapest
// of their GPUs are freed and the others host the replicas.
func (a *adviser) timeSlicing(r *Report, p *plan) []tsGroup {
	type key struct{ ns, model string }
	groups := map[key][]int{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(i) || !p.sole(r, i) || !h.Usage.HasFB || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.lowDuty {
			continue
		}
		k := key{h.Namespace, h.Model}
		groups[k] = append(groups[k], i)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(x, y key) int { return cmp.Or(cmp.Compare(x.ns, y.ns), cmp.Compare(x.model, y.model)) })
	var out []tsGroup
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
		for _, b := range bins {
			n = max(n, b.n)
		}
		gpus := make([]*gpuInfo, 0, len(idx))
		var names, shares []string
		for _, i := range idx {
			h := &r.Holdings[i]
			p.used[i] = true
			gpus = append(gpus, p.gpus[h.UUID])
			names = append(names, h.Name())
			shares = append(shares, fmt.Sprintf("%s %s", h.Pod, pct(h.Totals.BusyShare)))
		}
		slices.Sort(names)
		cheapestFirst(gpus)
		nFree := len(idx) - len(bins)
		hosts := slices.Clone(gpus[nFree:])
		byPlace(hosts)
		g := tsGroup{model: k.model, replicas: n}
		for _, h := range hosts {
			if !slices.Contains(g.nodes, h.node) {
				g.nodes = append(g.nodes, h.node)
			}
		}
		rec := Recommendation{Kind: "time-slicing", Target: k.ns, Model: k.model, Replicas: n, Holdings: names, Nodes: g.nodes}
		rec.FreedEURPerMonth, rec.FreedGPUs = p.free(gpus[:nFree])
		rec.Evidence = fmt.Sprintf("%d pods each hold a whole GPU but are busy below %s of the time (%s); with %d replicas per GPU they fit on %d GPU(s) instead of %d; the %d cheapest of their GPUs become free, %.2f EUR over the range",
			len(idx), pct(a.lowDuty), strings.Join(shares, ", "), n, len(bins), len(idx), nFree, rec.FreedEURPerMonth/p.month)
		r.Recommendations = append(r.Recommendations, rec)
		out = append(out, g)
	}
	return out
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

// migSizing recommends, per GPU model, a MIG profile for every pod alone on a
// whole GPU whose p99 framebuffer × headroom and p95 activity fit a smaller
// instance, and packs the instances onto as few GPUs as their placements
// allow. The cheapest of those GPUs are freed; the others are repartitioned,
// and what their layouts leave unused is reclaimable. It returns the new
// layout per repartitioned GPU's UUID.
func (a *adviser) migSizing(r *Report, p *plan) map[string][]string {
	type cand struct {
		i   int
		p   mig.Profile
		why string
	}
	byModel := map[string][]cand{}
	models := map[string]*mig.Model{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(i) || !p.sole(r, i) || !h.Usage.HasFB || !h.Usage.HasActivity || h.Totals.HeldHours <= 0 {
			continue
		}
		m, ok := mig.ForModel(h.Model)
		if !ok {
			continue
		}
		need := h.Usage.P99FBMiB * a.headroom
		pr, ok := smallestProfile(m, need, h.Usage.P95Activity)
		if !ok {
			continue
		}
		p.used[i] = true
		models[m.Name] = m
		byModel[m.Name] = append(byModel[m.Name], cand{i, pr, fmt.Sprintf("%s → %s (p99 framebuffer %.0f MiB × %.2f = %.0f MiB ≤ %d MiB, peak %.0f MiB; p95 activity %s ≤ %d/7)",
			h.Name(), pr.Name, h.Usage.P99FBMiB, a.headroom, need, pr.MemoryMiB, h.Usage.PeakFBMiB, pct(h.Usage.P95Activity), pr.ComputeSlices)})
	}
	layouts := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(byModel)) {
		m, cs := models[name], byModel[name]
		slices.SortStableFunc(cs, func(x, y cand) int {
			return cmp.Or(cmp.Compare(y.p.MemorySlices, x.p.MemorySlices), cmp.Compare(y.p.ComputeSlices, x.p.ComputeSlices))
		})
		var bins [][]string
		for _, c := range cs {
			placed := false
			for b := range bins {
				if _, err := m.Place(append(slices.Clone(bins[b]), c.p.Name)); err == nil {
					bins[b] = append(bins[b], c.p.Name)
					placed = true
					break
				}
			}
			if !placed {
				bins = append(bins, []string{c.p.Name})
			}
		}
		gpus := make([]*gpuInfo, len(cs))
		var names, why []string
		count := map[string]int{}
		for k, c := range cs {
			gpus[k] = p.gpus[r.Holdings[c.i].UUID]
			names = append(names, r.Holdings[c.i].Name())
			why = append(why, c.why)
			count[c.p.Name]++
		}
		slices.Sort(names)
		cheapestFirst(gpus)
		nFree := len(cs) - len(bins)
		hosts := slices.Clone(gpus[nFree:])
		byPlace(hosts)
		rec := Recommendation{Kind: "mig", Target: name, Model: m.Name, Holdings: names}
		var profiles []string
		for _, pn := range slices.Sorted(maps.Keys(count)) {
			profiles = append(profiles, fmt.Sprintf("%s ×%d", pn, count[pn]))
		}
		rec.Profile = strings.Join(profiles, ", ")
		rec.FreedEURPerMonth, rec.FreedGPUs = p.free(gpus[:nFree])
		var left []string
		for b, h := range hosts {
			layouts[h.uuid] = bins[b]
			used := 0.0
			for _, pn := range bins[b] {
				pr, _ := m.Profile(pn)
				used += a.migWeight.Weight(pr.ComputeSlices, pr.MemorySlices)
			}
			unused := max(0, 1-used)
			rec.ReclaimableEURPerMonth += h.eur * p.month * unused
			left = append(left, fmt.Sprintf("%s gets %s, %s of it unused by %s weight (%.2f EUR over the range)",
				h, strings.Join(bins[b], " + "), pct(unused), a.migWeight, h.eur*unused))
			if !slices.Contains(rec.Nodes, h.node) {
				rec.Nodes = append(rec.Nodes, h.node)
			}
		}
		rec.Evidence = fmt.Sprintf("%s; %d GPU(s) today, %d after packing: %d freed (%.2f EUR over the range); %s",
			strings.Join(why, "; "), len(cs), len(bins), nFree, rec.FreedEURPerMonth/p.month, strings.Join(left, "; "))
		r.Recommendations = append(r.Recommendations, rec)
		r.Packing = append(r.Packing, Packing{Model: name, Workloads: len(cs), GPUsAfter: len(bins), Layouts: bins})
	}
	return layouts
}
