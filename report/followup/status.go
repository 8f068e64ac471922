package followup

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// The rules that decide whether a target was changed as advised, from this
// period's data at its end (docs/report.md, "Did the advice pay off?"). A
// target whose GPU or node has no data in the period, or whose GPU fell off
// the bus, is gone: nothing in the data says what happened to it.

// release: the holding no longer holds the GPU it held in the baseline.
func (p *period) release(rec advice.Recommendation) []Part {
	var parts []Part
	for _, uuid := range rec.GPUs {
		g := model.GPUKey{Cluster: rec.Cluster, UUID: uuid}
		pt := Part{Name: rec.Target}
		if why := p.missing(g); why != "" {
			pt.State, pt.Evidence = partGone, why
		} else if h := p.holdingOn(rec.Cluster, rec.Target, g); h != nil {
			pt.State = partNotDone
			pt.Evidence = fmt.Sprintf("%s still holds %s at the end of this period, busy %s of its %s device-hours",
				rec.Target, p.gpuName(g), model.FormatPct(h.Totals.BusyShare), model.FormatHours(h.Totals.HeldHours))
		} else {
			pt.State = partDone
			pt.Evidence = fmt.Sprintf("%s no longer holds %s, %s", rec.Target, p.gpuName(g), p.since(p.leftAt(g, holderIn([]string{rec.Target}))))
		}
		parts = append(parts, pt)
	}
	return parts
}

// holdingOn returns the holding of holder name in cluster on GPU g (or a
// part of it) at the end of the period; nil when there is none.
func (p *period) holdingOn(cluster, name string, g model.GPUKey) *analysis.Holding {
	for _, h := range p.atEnd[named{cluster, name}] {
		if h.UUID == g.UUID {
			return h
		}
	}
	return nil
}

// timeSlicing: each pod shares a GPU — its device is time-sliced or MPS, or
// other holders hold the same whole GPU with it.
func (p *period) timeSlicing(rec advice.Recommendation) []Part {
	var parts []Part
	for _, name := range rec.Holdings {
		pt := Part{Name: name}
		hs := p.atEnd[named{rec.Cluster, name}]
		switch i := slices.IndexFunc(hs, p.shares); {
		case i >= 0:
			pt.State, pt.Evidence = partDone, p.sharingText(hs[i])
		case len(hs) > 0:
			pt.State = partNotDone
			pt.Evidence = fmt.Sprintf("%s still holds %s alone", name, p.gpuName(model.GPUKey{Cluster: hs[0].Cluster, UUID: hs[0].UUID}))
		default:
			pt.State, pt.Evidence = partGone, p.notThere(rec.Cluster, name)
		}
		parts = append(parts, pt)
	}
	return parts
}

// shares reports whether holding h shares a whole GPU at the end of the
// period: time-sliced or MPS, a fractional share of it (HAMi, KAI-Scheduler,
// DRA: the rest is others' or free for them, even while no one else holds
// it), or with other holders on it.
func (p *period) shares(h *analysis.Holding) bool {
	if h.MIGID != "" {
		return false
	}
	return h.Sharing == "time-slicing" || h.Sharing == "mps" || h.Fractional() || len(p.others(h)) > 0
}

// others returns the names of the other holders of h's whole GPU at the end
// of the period.
func (p *period) others(h *analysis.Holding) []string {
	var out []string
	for _, o := range p.onGPU[model.GPUKey{Cluster: h.Cluster, UUID: h.UUID}] {
		if o.MIGID == "" && o.Name() != h.Name() && !slices.Contains(out, o.Name()) {
			out = append(out, o.Name())
		}
	}
	return out
}

// sharingText says how holding h shares its GPU.
func (p *period) sharingText(h *analysis.Holding) string {
	s := fmt.Sprintf("%s shares %s", h.Name(), p.gpuName(model.GPUKey{Cluster: h.Cluster, UUID: h.UUID}))
	switch {
	case h.Sharing == "time-slicing" || h.Sharing == "mps":
		s += " by " + h.Sharing
		if h.Replicas > 0 {
			s += fmt.Sprintf(" (%d replicas)", h.Replicas)
		}
	case h.Fractional():
		s += " as " + h.ShareText()
	}
	if o := p.others(h); len(o) > 0 {
		s += " with " + strings.Join(o, ", ")
	}
	return s
}

// notThere says that holder name is not there at the end of the period, and
// when it was last.
func (p *period) notThere(cluster, name string) string {
	b, ok := p.last[named{cluster, name}]
	if !ok {
		return name + " has no data in this period"
	}
	return fmt.Sprintf("%s is not there at the end of this period (last held a device in the step ending %s)", name, p.bucketEnd(b).Format(time.RFC3339))
}

// mig: each GPU the advice repartitions has the advised layout at its end.
func (p *period) mig(rec advice.Recommendation) []Part {
	var parts []Part
	for _, l := range rec.MIGLayouts {
		g := model.GPUKey{Cluster: rec.Cluster, UUID: l.GPU}
		pt := Part{Name: p.gpuName(g)}
		advised := strings.Join(l.Profiles, " + ")
		lay := p.layouts[g]
		if lay == nil {
			lay = &model.EndLayout{Last: -1}
		}
		switch {
		case p.missing(g) != "":
			pt.State, pt.Evidence = partGone, p.missing(g)
		case lay.MixedGI != "":
			pt.State = partNotDone
			pt.Evidence = fmt.Sprintf("%s was repartitioned in this period's last step (its instance %s was %s there): its layout at the end is not known",
				pt.Name, lay.MixedGI, strings.Join(lay.MixedProfiles, " and "))
		case sameMultiset(model.Profiles(lay.Instances), l.Profiles):
			pt.State, pt.Evidence = partDone, fmt.Sprintf("%s has the advised layout %s at the end of this period", pt.Name, advised)
		case len(lay.Instances) == 0:
			pt.State, pt.Evidence = partNotDone, fmt.Sprintf("%s is a whole GPU without MIG instances at the end of this period, not %s", pt.Name, advised)
		default:
			pt.State = partNotDone
			pt.Evidence = fmt.Sprintf("%s has %s at the end of this period, not the advised %s", pt.Name, strings.Join(model.Profiles(lay.Instances), " + "), advised)
		}
		parts = append(parts, pt)
	}
	return parts
}

// drain: the node holds no pods.
func (p *period) drain(rec advice.Recommendation) []Part {
	node := named{rec.Cluster, rec.Target}
	pt := Part{Name: "node " + model.NodeName(rec.Cluster, rec.Target)}
	gpus := p.nodes[node]
	var held []string
	for _, h := range p.onNode[node] {
		if !slices.Contains(held, h.Name()) {
			held = append(held, h.Name())
		}
	}
	switch {
	case len(gpus) == 0:
		pt.State = partGone
		pt.Evidence = pt.Name + " has no data in this period: it was removed (as a drain may end) or is no longer scraped; what that saved shows in the fleet's cost before and after, not here"
	case len(held) > 0:
		pt.State, pt.Evidence = partNotDone, fmt.Sprintf("%s holds pods at the end of this period: %s", pt.Name, strings.Join(held, ", "))
	default:
		last := -1
		for _, g := range gpus {
			last = max(last, p.leftAt(g, func(string) bool { return true }))
		}
		pt.State, pt.Evidence = partDone, fmt.Sprintf("%s holds no pods at the end of this period, %s", pt.Name, p.since(last))
	}
	return []Part{pt}
}
