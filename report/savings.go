package report

import (
	"cmp"
	"fmt"
	"github.com/gputally/gputally/cost"
	"maps"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/model"

	"github.com/gputally/gputally/report/analysis"
)

// The savings model (docs/report.md): a recommendation frees the measured
// cost of the whole GPUs it makes free, scaled to a month; partial capacity
// is reclaimable, shown apart. A plan records which GPU each recommendation
// frees, so that no GPU is freed twice: drain claims first, then release,
// time-slicing and MIG, each only among GPUs nobody claimed.

// gpuInfo is one physical GPU over the range.
type gpuInfo struct {
	uuid, node, model, index string
	eur                      float64           // all it cost over the range: every state, holding and instance
	holdings                 []int             // indices into Report.Holdings of those that held it or one of its parts
	layout                   map[string]string // every MIG instance it had over the range, GPU_I_ID → profile; empty without MIG
	current                  []string          // the profiles of the instances it has at the end of the range (migparted.go)
	last                     int               // the last step bucket with ledger data for it
	migMode                  string            // gputally_gpu_info's mig_mode at its last sample; "": not known
}

func (g *gpuInfo) String() string { return g.node + "/" + g.index + " (" + g.uuid + ")" }

// plan is the state of the recommendations being made.
type plan struct {
	month float64 // MonthFactor
	gpus  map[string]*gpuInfo
	nodes map[string][]*gpuInfo // by node, sorted by index
	used  []bool                // per holding: a recommendation covers it, or it is on a broken GPU and gets no advice
	blind []bool                // per holding: too much unknown time for release, time-slicing or MIG (unknownBlocked)
	freed map[string]bool       // UUIDs of the GPUs a recommendation frees
	lost  map[string]bool       // UUIDs of broken GPUs: nothing frees them (faults.go)
}

func newPlan(r *Report, d *model.Dataset) *plan {
	p := &plan{month: r.MonthFactor(), gpus: map[string]*gpuInfo{}, nodes: map[string][]*gpuInfo{},
		used: make([]bool, len(r.Holdings)), blind: make([]bool, len(r.Holdings)), freed: map[string]bool{}, lost: map[string]bool{}}
	for _, b := range r.BrokenGPUs {
		p.lost[b.UUID] = true
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		g := p.gpus[k.Dev.UUID]
		if g == nil {
			g = &gpuInfo{uuid: k.Dev.UUID, node: e.Host, model: e.Model, index: e.GPU, layout: map[string]string{}, last: -1, migMode: d.MIGMode[k.Dev.UUID]}
			p.gpus[k.Dev.UUID] = g
			p.nodes[e.Host] = append(p.nodes[e.Host], g)
		}
		for _, v := range e.EUR {
			g.eur += v
		}
		if k.Dev.GI != "" {
			g.layout[k.Dev.GI] = e.Profile
		}
		g.last = max(g.last, e.Last)
	}
	// The instances at the end: those with data in their GPU's last bucket,
	// one per GPU_I_ID (several holders may have shared an instance).
	current := map[string]map[string]string{}
	for _, k := range model.SortedKeys(d.Ledger) {
		e, g := d.Ledger[k], p.gpus[k.Dev.UUID]
		if k.Dev.GI != "" && e.Last >= 0 && e.Last == g.last {
			if current[g.uuid] == nil {
				current[g.uuid] = map[string]string{}
			}
			current[g.uuid][k.Dev.GI] = e.Profile
		}
	}
	for uuid, gis := range current {
		g := p.gpus[uuid]
		for _, gi := range slices.Sorted(maps.Keys(gis)) {
			g.current = append(g.current, gis[gi])
		}
	}
	for i := range r.Holdings {
		g := p.gpus[r.Holdings[i].UUID]
		g.holdings = append(g.holdings, i)
		p.used[i] = p.lost[g.uuid] // the advice for a broken GPU is to repair or replace it
		p.blind[i] = unknownBlocked(r, &r.Holdings[i])
	}
	for _, gs := range p.nodes {
		slices.SortFunc(gs, func(x, y *gpuInfo) int {
			return cmp.Or(model.CompareGPUIndex(x.index, y.index), cmp.Compare(x.uuid, y.uuid))
		})
	}
	return p
}

// open reports whether holding i may get release, time-slicing or MIG
// advice: no recommendation covers it yet and its hours are known enough.
func (p *plan) open(i int) bool { return !p.used[i] && !p.blind[i] }

// sole reports whether holding i is the only one its GPU had over the range,
// and held it whole: moving it leaves the GPU free. For an open holding the
// GPU is not freed yet: whatever frees a GPU covers every holding on it.
func (p *plan) sole(r *Report, i int) bool {
	h := &r.Holdings[i]
	g := p.gpus[h.UUID]
	return wholeExclusive(h) && len(g.holdings) == 1 && len(g.layout) == 0
}

// free records that a recommendation frees the GPUs and returns their cost
// per month and their names. A GPU already freed by another recommendation is
// skipped, and so is a broken one: it needs repair, and freeing it saves nothing.
func (p *plan) free(gpus []*gpuInfo) (eur float64, names []string) {
	for _, g := range gpus {
		if p.freed[g.uuid] || p.lost[g.uuid] {
			continue
		}
		p.freed[g.uuid] = true
		eur += g.eur * p.month
		names = append(names, g.uuid)
	}
	return eur, names
}

// adviser holds the settings of the advice.
type adviser struct {
	teams    analysis.TeamMap
	headroom float64
	release  float64 // busy share below which a held device should be released
	lowDuty  float64 // busy share below which a pod suits time-slicing
	drain    float64 // unallocated share above which a node can be drained
	// migWeight splits a MIG GPU's cost over its instances, as the price book does.
	migWeight cost.MIGWeight
}

// Shims until the advice reads the analysis itself.
func unknownBlocked(r *Report, h *analysis.Holding) bool {
	return (&analysis.Result{Coverage: r.Coverage}).UnknownBlocked(h)
}

func drainBlocked(r *Report, node string) bool {
	return (&analysis.Result{Coverage: r.Coverage}).DrainBlocked(node)
}

func wholeExclusive(h *analysis.Holding) bool {
	return h.MIGID == "" && (h.Sharing == "" || h.Sharing == "exclusive")
}

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

// drainNodes recommends draining nodes whose GPUs sat (almost) all
// unallocated; a drain frees every healthy GPU of the node, and covers what
// little was held on it but for the holdings that get no advice. A node with
// too much unknown time gets no drain (drainBlocked).
func (a *adviser) drainNodes(r *Report, p *plan) {
	for _, n := range r.Nodes {
		t := n.Totals
		if drainBlocked(r, n.Name) || t.GPUHours <= 0 || t.UnallocatedHours/t.GPUHours < a.drain {
			continue
		}
		target := n.Name
		eur, freed := p.free(p.nodes[n.Name])
		var held []string
		for _, g := range p.nodes[n.Name] {
			for _, i := range g.holdings {
				if p.used[i] {
					continue
				}
				p.used[i] = true
				held = append(held, r.Holdings[i].Name())
			}
		}
		evidence := fmt.Sprintf("%.1f of %.1f device-hours unallocated (%s, at least %s); its %d GPU(s) cost %.2f EUR over the range",
			t.UnallocatedHours, t.GPUHours, pct(t.UnallocatedHours/t.GPUHours), pct(a.drain), len(freed), eur/p.month)
		if len(held) > 0 {
			evidence += "; move first: " + strings.Join(held, ", ")
		}
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "drain", Target: target, Nodes: []string{target}, Holdings: held,
			FreedGPUs: freed, FreedEURPerMonth: eur, Evidence: evidence,
		})
	}
}

// releaseIdle recommends giving back holdings (almost) never busy. A holding that
// alone held a whole GPU frees that GPU's cost; a MIG instance or
// time-sliced replica frees nothing whole (its cost moves to the GPU's other
// parts), so its own cost is reclaimable.
func (a *adviser) releaseIdle(r *Report, p *plan) {
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(i) || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.release {
			continue
		}
		p.used[i] = true
		rec := Recommendation{Kind: "release", Target: h.Name(), Model: h.Model, Holdings: []string{h.Name()}, Nodes: []string{h.Node}}
		what := fmt.Sprintf("held %.1f device-hours on %s (%s), busy %s of them (below %s)",
			h.Totals.HeldHours, h.Node, h.UUID, pct(h.Totals.BusyShare), pct(a.release))
		if p.sole(r, i) {
			rec.FreedEURPerMonth, rec.FreedGPUs = p.free([]*gpuInfo{p.gpus[h.UUID]})
			rec.Evidence = fmt.Sprintf("%s; it alone held the GPU, which cost %.2f EUR over the range and becomes free", what, p.gpus[h.UUID].eur)
		} else {
			rec.ReclaimableEURPerMonth = h.Totals.CostEUR * p.month
			rec.Evidence = fmt.Sprintf("%s; it cost %.2f EUR over the range, on a GPU that stays in use: reclaimable capacity, not freed", what, h.Totals.CostEUR)
		}
		r.Recommendations = append(r.Recommendations, rec)
	}
}

// cheapestFirst sorts GPUs by their cost over the range, then UUID.
func cheapestFirst(gs []*gpuInfo) {
	slices.SortStableFunc(gs, func(x, y *gpuInfo) int { return cmp.Or(cmp.Compare(x.eur, y.eur), cmp.Compare(x.uuid, y.uuid)) })
}

// byPlace sorts GPUs by node, then index.
func byPlace(gs []*gpuInfo) {
	slices.SortStableFunc(gs, func(x, y *gpuInfo) int {
		return cmp.Or(cmp.Compare(x.node, y.node), model.CompareGPUIndex(x.index, y.index))
	})
}
