package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gputally/gputally/report/model"
)

// unknownBlocksAdvice is the share of a node's device-hours that may be
// unknown before no drain advice is made for it, and of a holding's hours
// before no release, time-slicing or MIG advice is made for it: 1 %. Unknown time says
// nothing about who held the GPUs, so it must not read as free capacity.
const unknownBlocksAdvice = 0.01

// BrokenGPU is a GPU that fell off the bus (XID 79, GPU lost) during the range:
// from then on its capital accrued as `lost`.
type BrokenGPU struct {
	Cluster   string    `json:"cluster,omitempty"`
	Node      string    `json:"node"`
	UUID      string    `json:"uuid"`
	GPU       string    `json:"gpu"` // index on its node
	Model     string    `json:"model"`
	Since     time.Time `json:"since"`      // start of the first step bucket with lost time
	LostHours float64   `json:"lost_hours"` // device-hours lost in the range
	LostEUR   float64   `json:"lost_eur"`   // EUR they cost
	Holdings  []string  `json:"holdings"`   // namespace/pod/container that held it in the range
}

// Advice is the one thing to do about a broken GPU.
func (b BrokenGPU) Advice() string {
	return fmt.Sprintf("repair or replace GPU %s (gpu %s) on node %s: %s EUR this period", b.UUID, b.GPU, model.NodeName(b.Cluster, b.Node), model.FormatEUR(b.LostEUR))
}

// brokenGPUs lists the GPUs with lost time, most EUR first.
func brokenGPUs(d *model.Dataset) []BrokenGPU {
	byGPU := map[model.GPUKey]*BrokenGPU{}
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		if e.Seconds[model.StateLost] <= 0 {
			continue
		}
		b := byGPU[k.Dev.GPU()]
		if b == nil {
			b = &BrokenGPU{Cluster: k.Dev.Cluster, Node: e.Host, UUID: k.Dev.UUID, GPU: e.GPU, Model: e.Model}
			if g := d.GPUs[k.Dev.GPU()]; g != nil && g.FirstLost >= 0 {
				b.Since = d.Start.Add(time.Duration(g.FirstLost) * d.Step).UTC()
			}
			byGPU[k.Dev.GPU()] = b
		}
		b.LostHours += e.Seconds[model.StateLost] / 3600
		b.LostEUR += e.EUR[model.StateLost]
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		if b := byGPU[k.Dev.GPU()]; b != nil && k.Holder != (model.HolderKey{}) {
			b.Holdings = append(b.Holdings, k.Holder.Name())
		}
	}
	out := make([]BrokenGPU, 0, len(byGPU))
	for _, b := range byGPU {
		b.Holdings = slices.Compact(b.Holdings)
		out = append(out, *b)
	}
	slices.SortFunc(out, func(x, y BrokenGPU) int {
		return cmp.Or(cmp.Compare(y.LostEUR, x.LostEUR), cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Node, y.Node), cmp.Compare(x.UUID, y.UUID))
	})
	return out
}

// UnknownBlocked reports whether holding h gets no release, time-slicing or
// MIG advice for unknown time: more than unknownBlocksAdvice (1 %) of its
// hours (busy + idle + unknown) unknown, or on a node that DrainBlocked. Its busy
// share reads only measured hours, so unknown time would pass for idle.
func (r *Result) UnknownBlocked(h *Holding) bool {
	share, _ := holdingUnknown(h)
	return tooUnknown(share) || r.DrainBlocked(h.Cluster, h.Node)
}

// holdingUnknown returns the share of holding h's hours that is unknown, 0
// when it has none, and those hours (busy + idle + unknown).
func holdingUnknown(h *Holding) (share, all float64) {
	all = h.Totals.HeldHours + h.Totals.UnknownHours
	if all <= 0 {
		return 0, all
	}
	return h.Totals.UnknownHours / all, all
}

// tooUnknown reports whether an unknown share (of a holding's or a node's
// hours) blocks advice.
func tooUnknown(share float64) bool { return share > unknownBlocksAdvice }

// unknownHoldingWarnings names the holdings whose own unknown time blocks
// advice (those on a node with too much unknown time are named by
// unknownNodeWarnings).
func unknownHoldingWarnings(r *Result) []string {
	var out []string
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if share, all := holdingUnknown(h); tooUnknown(share) {
			out = append(out, fmt.Sprintf("holding %s on %s (%s): %s of %s hours unknown (%s, above %s); no release, time-slicing or MIG advice for it",
				h.Name(), h.Place(), h.UUID, model.FormatHours(h.Totals.UnknownHours), model.FormatHours(all), model.FormatPct(share), model.FormatPct(unknownBlocksAdvice)))
		}
	}
	return out
}

// DrainBlocked reports whether node of cluster has too much unknown time
// (more than 1 % of its device-hours) for drain advice.
func (r *Result) DrainBlocked(cluster, node string) bool {
	for _, n := range r.Coverage.Nodes {
		if n.Cluster == cluster && n.Node == node {
			return tooUnknown(n.UnknownShare())
		}
	}
	return false
}

// unknownNodeWarnings names the nodes whose unknown time blocks advice.
func unknownNodeWarnings(r *Result) []string {
	var out []string
	for _, n := range r.Coverage.Nodes {
		if tooUnknown(n.UnknownShare()) {
			out = append(out, fmt.Sprintf("node %s: %s of %s device-hours unknown (%s, above %s): who held its GPUs or how busy they were was not measured; no drain advice for it",
				model.NodeName(n.Cluster, n.Node), model.FormatHours(n.UnknownHours), model.FormatHours(n.SeenHours), model.FormatPct(n.UnknownShare()), model.FormatPct(unknownBlocksAdvice)))
		}
	}
	return out
}
