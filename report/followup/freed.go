package followup

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/model"
)

// freed returns the GPUs an applied or partly applied change counts as
// freed in this period: those of its GPUs that are there, not broken, and
// that no target (target accepts its holders by name) holds at the end —
// the ones the baseline counted as freed first, then the cheapest in this
// period — and never more than the baseline counted, as the advice frees
// whole GPUs after packing and no more.
func (p *period) freed(rec advice.Recommendation, target func(string) bool) []FreedGPU {
	var free []model.GPUKey
	for _, uuid := range rec.GPUs {
		g := model.GPUKey{Cluster: rec.Cluster, UUID: uuid}
		if p.missing(g) == "" && !p.heldAtEnd(g, target) {
			free = append(free, g)
		}
	}
	promised := func(g model.GPUKey) bool { return slices.Contains(rec.FreedGPUs, g.UUID) }
	slices.SortStableFunc(free, func(a, b model.GPUKey) int {
		return cmp.Or(cmp.Compare(b2i(promised(b)), b2i(promised(a))), cmp.Compare(p.eur[a], p.eur[b]), cmp.Compare(a.UUID, b.UUID))
	})
	free = free[:min(len(free), len(rec.FreedGPUs))]
	out := make([]FreedGPU, 0, len(free))
	for _, g := range free {
		out = append(out, p.freedGPU(g, target, promised(g)))
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// freedGPU says where GPU g went once the targets left it: since when, and
// what its device-hours of the period other than the targets' were.
func (p *period) freedGPU(g model.GPUKey, target func(string) bool, promised bool) FreedGPU {
	s := p.d.GPUs[g]
	f := FreedGPU{UUID: g.UUID, Node: s.Host, GPU: s.GPU, Promised: promised, EURPerMonth: p.eur[g] * p.month}
	last := p.leftAt(g, target)
	f.FreeSince, f.FreeBeforePeriod = p.bucketEnd(last), last < 0
	for _, k := range p.entries[g] {
		e := p.d.Ledger[k]
		switch {
		case k.Holder == (model.HolderKey{}):
			f.UnallocatedHours += e.Seconds[model.StateUnallocated] / 3600
		case !target(k.Holder.Name()):
			f.OtherHeldHours += (e.Seconds[model.StateBusy] + e.Seconds[model.StateIdle]) / 3600
			if !slices.Contains(f.OtherHolders, k.Holder.Name()) {
				f.OtherHolders = append(f.OtherHolders, k.Holder.Name())
			}
		}
	}
	switch {
	case f.OtherHeldHours <= 0:
		f.Went = "unallocated"
	case f.UnallocatedHours <= 0:
		f.Went = "other work"
	default:
		f.Went = "unallocated and other work"
	}
	return f
}

// evidence says where the freed GPU, named name, went, in words.
func (f *FreedGPU) evidence(name string) string {
	s := fmt.Sprintf("%s free %s, %s EUR/month this period", name, sinceText(f.FreeSince, f.FreeBeforePeriod), model.FormatEUR(f.EURPerMonth))
	if f.OtherHeldHours > 0 {
		s += fmt.Sprintf(": taken by other work, %s device-hours (%s)", model.FormatHours(f.OtherHeldHours), strings.Join(f.OtherHolders, ", "))
	}
	if f.UnallocatedHours > 0 {
		sep := ": "
		if f.OtherHeldHours > 0 {
			sep = "; "
		}
		s += fmt.Sprintf("%ssat unallocated %s device-hours, money still burning until the node is used or returned", sep, model.FormatHours(f.UnallocatedHours))
	}
	if !f.Promised {
		s += " (in place of a GPU the baseline counted, which is still held)"
	}
	return s
}
