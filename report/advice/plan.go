package advice

import (
	"cmp"
	"maps"
	"slices"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
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
	holdings                 []int             // indices into analysis.Result.Holdings of those that held it or one of its parts
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
	blind []bool                // per holding: too much unknown time for release, time-slicing or MIG (analysis.Result.UnknownBlocked)
	freed map[string]bool       // UUIDs of the GPUs a recommendation frees
	lost  map[string]bool       // UUIDs of broken GPUs: nothing frees them (analysis.BrokenGPU)
	// share are the UUIDs of GPUs whose figures are an allocation share
	// (model.AllocationShare: what was requested, not used): advice frees no
	// money from them.
	share map[string]bool
}

func newPlan(r *draft, d *model.Dataset) *plan {
	p := &plan{month: r.MonthFactor(), gpus: map[string]*gpuInfo{}, nodes: map[string][]*gpuInfo{},
		used: make([]bool, len(r.Holdings)), blind: make([]bool, len(r.Holdings)), freed: map[string]bool{}, lost: map[string]bool{}, share: map[string]bool{}}
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
		if e.Kind == model.AllocationShare {
			p.share[k.Dev.UUID] = true
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
		p.blind[i] = r.UnknownBlocked(&r.Holdings[i])
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
func (p *plan) sole(r *draft, i int) bool {
	h := &r.Holdings[i]
	g := p.gpus[h.UUID]
	return wholeExclusive(h) && len(g.holdings) == 1 && len(g.layout) == 0
}

// free records that a recommendation frees the GPUs and returns their cost
// per month and their names. A GPU already freed by another recommendation is
// skipped, and so is a broken one: it needs repair, and freeing it saves
// nothing; and so is one whose figures are an allocation share, which says
// what was requested, not what was used.
func (p *plan) free(gpus []*gpuInfo) (eur float64, names []string) {
	for _, g := range gpus {
		if p.freed[g.uuid] || p.lost[g.uuid] || p.share[g.uuid] {
			continue
		}
		p.freed[g.uuid] = true
		eur += g.eur * p.month
		names = append(names, g.uuid)
	}
	return eur, names
}

func wholeExclusive(h *analysis.Holding) bool {
	return h.MIGID == "" && (h.Sharing == "" || h.Sharing == "exclusive")
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
