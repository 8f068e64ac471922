package advice

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/mig"
	"github.com/gputally/gputally/report/model"
)

// Packing says how the workloads recommended for MIG on one GPU model fit
// onto fewer GPUs.
type Packing struct {
	Cluster   string     `json:"cluster,omitempty"`
	Model     string     `json:"model"`
	Workloads int        `json:"workloads"`  // each alone on a whole GPU today
	GPUsAfter int        `json:"gpus_after"` // GPUs their MIG instances need
	Layouts   [][]string `json:"layouts"`    // the profiles on each of those GPUs
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
func (a *adviser) migSizing(r *draft, p *plan) map[string][]string {
	byModel, models := a.migCandidates(r, p)
	layouts := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(byModel)) {
		m, cs := models[name], byModel[name]
		slices.SortStableFunc(cs, func(x, y migCandidate) int {
			return cmp.Or(cmp.Compare(y.p.MemorySlices, x.p.MemorySlices), cmp.Compare(y.p.ComputeSlices, x.p.ComputeSlices))
		})
		a.recommendMIG(r, p, m, cs, packMIG(m, cs), layouts)
	}
	return layouts
}

// migCandidate is a holding that fits MIG profile p, and why.
type migCandidate struct {
	i   int
	p   mig.Profile
	why string
}

// migCandidates returns the holdings that fit a smaller MIG profile by MIG
// model name, and those models; each is now covered (p.used).
func (a *adviser) migCandidates(r *draft, p *plan) (map[string][]migCandidate, map[string]*mig.Model) {
	byModel := map[string][]migCandidate{}
	models := map[string]*mig.Model{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(r, i) || !p.sole(r, i) || !h.Usage.HasFB || !h.Usage.HasActivity || h.Totals.HeldHours <= 0 {
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
		byModel[m.Name] = append(byModel[m.Name], migCandidate{i, pr, fmt.Sprintf("%s → %s (p99 framebuffer %.0f MiB × %.2f = %.0f MiB ≤ %d MiB, peak %.0f MiB; p95 activity %s ≤ %d/7)",
			h.Name(), pr.Name, h.Usage.P99FBMiB, a.headroom, need, pr.MemoryMiB, h.Usage.PeakFBMiB, model.FormatPct(h.Usage.P95Activity), pr.ComputeSlices)})
	}
	return byModel, models
}

// packMIG packs the candidates' profiles, in that order, first-fit onto GPUs
// of model m where they place together; it returns each GPU's profiles.
func packMIG(m *mig.Model, cs []migCandidate) [][]string {
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
	return bins
}

// recommendMIG records the MIG recommendation of the candidates cs on model
// m packed into bins, and the packing: the cheapest of their GPUs are freed,
// the others get the bins' layouts (into layouts, by UUID), and their unused
// part by the MIG weight is reclaimable.
func (a *adviser) recommendMIG(r *draft, p *plan, m *mig.Model, cs []migCandidate, bins [][]string, layouts map[string][]string) {
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
	rec := Recommendation{Kind: "mig", Target: m.Name, Model: m.Name, Holdings: names, GPUs: uuids(gpus)}
	var profiles []string
	for _, pn := range slices.Sorted(maps.Keys(count)) {
		profiles = append(profiles, fmt.Sprintf("%s ×%d", pn, count[pn]))
	}
	rec.Profile = strings.Join(profiles, ", ")
	rec.FreedEURPerMonth, rec.FreedGPUs = p.free(gpus[:nFree])
	var left []string
	for b, h := range hosts {
		layouts[h.uuid] = bins[b]
		rec.MIGLayouts = append(rec.MIGLayouts, GPULayout{GPU: h.uuid, Profiles: bins[b]})
		used := 0.0
		for _, pn := range bins[b] {
			pr, _ := m.Profile(pn)
			used += a.migWeight.Weight(pr.ComputeSlices, pr.MemorySlices)
		}
		unused := max(0, 1-used)
		rec.ReclaimableEURPerMonth += h.eur * p.month * unused
		left = append(left, fmt.Sprintf("%s gets %s, %s of it unused by %s weight (%.2f EUR over the range)",
			h, strings.Join(bins[b], " + "), model.FormatPct(unused), a.migWeight, h.eur*unused))
		if !slices.Contains(rec.Nodes, h.node) {
			rec.Nodes = append(rec.Nodes, h.node)
		}
	}
	rec.Evidence = fmt.Sprintf("%s; %d GPU(s) today, %d after packing: %d freed (%.2f EUR over the range); %s",
		strings.Join(why, "; "), len(cs), len(bins), nFree, rec.FreedEURPerMonth/p.month, strings.Join(left, "; "))
	r.Recommendations = append(r.Recommendations, rec)
	r.Packing = append(r.Packing, Packing{Model: m.Name, Workloads: len(cs), GPUsAfter: len(bins), Layouts: bins})
}
