package advice

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

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
	eur                      float64                  // all it cost over the range: every state, holding and instance
	holdings                 []int                    // indices into analysis.Result.Holdings of those that held it or one of its parts
	layout                   map[model.DeviceKey]bool // every MIG instance it had over the range (GPU_I_ID and profile); empty without MIG
	current                  []model.DeviceKey        // the instances it has at the end of the range, by GPU_I_ID (endLayout)
	// unknownEnd says why the instances at the end cannot be told; "" when
	// current holds them.
	unknownEnd string
	migMode    string // gputally_gpu_info's mig_mode at its last sample; "": not known
}

// repartitioned reports whether g's MIG layout changed during the range: it
// had an instance (a GPU_I_ID with its profile) that it no longer has at the
// end.
func (g *gpuInfo) repartitioned() bool { return len(gone(g)) > 0 }

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
	// endRead: the dataset has the last bucket apart (model.Dataset.EndSeconds),
	// so a holding's busy share at the end is known where it was held there.
	endRead bool
	// share are the UUIDs of GPUs whose figures are an allocation share
	// (model.AllocationShare: what was requested, not used): advice frees no
	// money from them.
	share map[string]bool
	// noDrain are the nodes whose unallocated time is no evidence of free
	// GPUs (model.Dataset.NoDrain): no drain for them.
	noDrain map[string]bool
	// fractional are the nodes where HAMi or KAI-Scheduler share GPUs at the
	// end of the range (fractionalNodes): no device-plugin time-slicing there.
	fractional map[string]bool
}

func newPlan(r *draft, d *model.Dataset) *plan {
	p := &plan{month: r.MonthFactor(), gpus: map[string]*gpuInfo{}, nodes: map[string][]*gpuInfo{},
		used: make([]bool, len(r.Holdings)), blind: make([]bool, len(r.Holdings)), freed: map[string]bool{}, lost: map[string]bool{},
		share: map[string]bool{}, noDrain: map[string]bool{}, endRead: d.EndSeconds != nil, fractional: fractionalNodes(r)}
	for n := range d.NoDrain {
		p.noDrain[n.Node] = true
	}
	for _, b := range r.BrokenGPUs {
		p.lost[b.UUID] = true
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		g := p.gpus[k.Dev.UUID]
		if g == nil {
			g = &gpuInfo{uuid: k.Dev.UUID, node: e.Host, model: e.Model, index: e.GPU, layout: map[model.DeviceKey]bool{}, migMode: d.MIGMode[k.Dev.GPU()]}
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
			g.layout[k.Dev] = true
		}
	}
	endLayout(p, d)
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

// endLayout sets every GPU's instances at the end of the range
// (model.Dataset.EndLayouts): those with ledger data in the GPU's last bucket
// with data, one per GPU_I_ID (several holders may have shared an instance).
// An instance id with two profiles in that bucket was repartitioned within
// it: the layout at the end is then not known.
func endLayout(p *plan, d *model.Dataset) {
	for gpu, l := range d.EndLayouts() {
		g := p.gpus[gpu.UUID]
		g.current = l.Instances
		if l.MixedGI != "" {
			g.unknownEnd = fmt.Sprintf("GPU %s (%s) was repartitioned in the range's last step: its MIG instance %s was %s there, so its layout at the end is not known",
				g.index, g.uuid, l.MixedGI, strings.Join(l.MixedProfiles, " and "))
		}
	}
}

// open reports whether holding i may get release, time-slicing or MIG
// advice: it is there at the end of the range (a holding that ended before
// it counts in the totals, never in the savings), no recommendation covers
// it yet and its hours are known enough.
func (p *plan) open(r *draft, i int) bool { return r.Holdings[i].AtEnd && !p.used[i] && !p.blind[i] }

// idleAtEnd reports whether holding h is still idle as the range ends: busy
// less than below of its held time in the range's last step bucket. Without
// that bucket apart (the source did not read it) only the range's share is
// known, and it decides.
func (p *plan) idleAtEnd(h *analysis.Holding, below float64) bool {
	if !p.endRead {
		return true
	}
	return h.EndBusyShare >= 0 && h.EndBusyShare < below
}

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
