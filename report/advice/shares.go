package advice

import (
	"fmt"

	"github.com/gputally/gputally/report/analysis"
)

// Fractional shares (HAMi, KAI-Scheduler, DRA consumed capacity) are parts
// of a GPU, never a whole one: releasing one frees its part of the GPU
// (reclaimable), not the GPU; it is no candidate for time-slicing or MIG
// (plan.sole holds only whole GPUs); and NVIDIA's device plugin is not
// time-sliced on a node where HAMi or KAI share GPUs — HAMi is the node's
// device plugin there, and KAI's reservation pods need whole GPUs
// (shared/reference/fractional-gpus.md §2.3). A KAI reservation pod that
// alone held its GPU over the range held the whole GPU for no sharer:
// releasing it frees the GPU.

// fractionalNodes returns the nodes on which a HAMi or KAI-Scheduler holding
// is there at the end of the range.
func fractionalNodes(r *draft) map[string]bool {
	out := map[string]bool{}
	for i := range r.Holdings {
		if h := &r.Holdings[i]; h.AtEnd && (h.Sharing == "hami" || h.Sharing == "kai") {
			out[h.Node] = true
		}
	}
	return out
}

// soleReservation reports whether holding i is a KAI reservation pod that
// was the only holding of its GPU over the range: it held the whole GPU for
// no sharer, so releasing it frees the GPU.
func (p *plan) soleReservation(r *draft, i int) bool {
	h := &r.Holdings[i]
	g := p.gpus[h.UUID]
	return h.KAIReservation() && len(g.holdings) == 1 && len(g.layout) == 0
}

// releaseShare sets rec, the release of idle fractional holding h whose
// activity is told by what, to its share's cost as reclaimable capacity.
func (p *plan) releaseShare(rec *Recommendation, h *analysis.Holding, what string) {
	rec.ReclaimableEURPerMonth = h.Totals.CostEUR * p.month
	rec.Evidence = fmt.Sprintf("%s; it holds %s of the GPU, which releasing it frees, not the GPU: it cost %.2f EUR over the range, reclaimable capacity, not freed",
		what, h.ShareText(), h.Totals.CostEUR)
}

// releaseReservation sets rec, the release of KAI reservation pod h that
// alone held its GPU, to the GPU it frees.
func (p *plan) releaseReservation(rec *Recommendation, h *analysis.Holding, what string) {
	rec.FreedEURPerMonth, rec.FreedGPUs = p.free([]*gpuInfo{p.gpus[h.UUID]})
	rec.Evidence = fmt.Sprintf("%s; KAI-Scheduler's reservation pod held the whole GPU for no sharer (KAI keeps one while a BindRequest still names its GPU group): "+
		"with it deleted the GPU, which cost %.2f EUR over the range, becomes free", what, p.gpus[h.UUID].eur)
}
