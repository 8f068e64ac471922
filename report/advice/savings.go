package advice

import (
	"fmt"
	"strings"

	"github.com/gputally/gputally/report/model"
)

// drainNodes recommends draining nodes whose GPUs sat (almost) all
// unallocated; a drain frees every healthy GPU of the node, and covers what
// little was held on it but for the holdings that get no advice. A node with
// too much unknown time (analysis.Result.DrainBlocked), or whose unallocated
// time is no evidence of free GPUs (model.Dataset.NoDrain), gets no drain.
func (a *adviser) drainNodes(r *draft, p *plan) {
	for _, n := range r.Nodes {
		t := n.Totals
		if r.DrainBlocked(n.Cluster, n.Name) || p.noDrain[n.Name] || t.GPUHours <= 0 || t.UnallocatedHours/t.GPUHours < a.drain {
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
				if r.Holdings[i].AtEnd { // one that ended has nothing to move
					held = append(held, r.Holdings[i].Name())
				}
			}
		}
		evidence := fmt.Sprintf("%.1f of %.1f device-hours unallocated (%s, at least %s); its %d GPU(s) cost %.2f EUR over the range",
			t.UnallocatedHours, t.GPUHours, model.FormatPct(t.UnallocatedHours/t.GPUHours), model.FormatPct(a.drain), len(freed), eur/p.month)
		if len(held) > 0 {
			evidence += "; move first: " + strings.Join(held, ", ")
		}
		r.Recommendations = append(r.Recommendations, Recommendation{
			Kind: "drain", Target: target, Nodes: []string{target}, Holdings: held, GPUs: uuids(p.nodes[n.Name]),
			FreedGPUs: freed, FreedEURPerMonth: eur, Evidence: evidence,
		})
	}
}

// releaseIdle recommends giving back holdings (almost) never busy, over the
// range and in its last step, that are there at its end. A holding that
// alone held a whole GPU frees that GPU's cost, and so does a KAI
// reservation pod that alone held its GPU (shares.go); a MIG instance,
// time-sliced replica or fractional share frees nothing whole (its cost
// moves to the GPU's other parts), so its own cost is reclaimable.
func (a *adviser) releaseIdle(r *draft, p *plan) {
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(r, i) || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.release || !p.idleAtEnd(h, a.release) {
			continue
		}
		p.used[i] = true
		rec := Recommendation{Kind: "release", Target: h.Name(), Model: h.Model, Holdings: []string{h.Name()}, Nodes: []string{h.Node}, GPUs: []string{h.UUID}}
		what := fmt.Sprintf("held %.1f device-hours on %s (%s), busy %s of them (below %s)",
			h.Totals.HeldHours, h.Node, h.UUID, model.FormatPct(h.Totals.BusyShare), model.FormatPct(a.release))
		if h.EndBusyShare >= 0 {
			what += fmt.Sprintf(", %s in the range's last step", model.FormatPct(h.EndBusyShare))
		}
		switch {
		case p.sole(r, i):
			rec.FreedEURPerMonth, rec.FreedGPUs = p.free([]*gpuInfo{p.gpus[h.UUID]})
			rec.Evidence = fmt.Sprintf("%s; it alone held the GPU, which cost %.2f EUR over the range and becomes free", what, p.gpus[h.UUID].eur)
		case p.soleReservation(r, i):
			p.releaseReservation(&rec, h, what)
		case h.Fractional():
			p.releaseShare(&rec, h, what)
		default:
			rec.ReclaimableEURPerMonth = h.Totals.CostEUR * p.month
			rec.Evidence = fmt.Sprintf("%s; it cost %.2f EUR over the range, on a GPU that stays in use: reclaimable capacity, not freed", what, h.Totals.CostEUR)
		}
		r.Recommendations = append(r.Recommendations, rec)
	}
}
