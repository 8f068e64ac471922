package followup

import (
	"fmt"
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// period is this period's data as the follow-up reads it: the analysis and
// dataset, indexed by what a recommendation names.
type period struct {
	r     *analysis.Result
	d     *model.Dataset
	month float64 // model.MonthFactor of the period
	// atEnd are the holdings there as the period ends, by cluster and name
	// (namespace/pod/container); onGPU and onNode the same per GPU and per
	// node (cluster and name).
	atEnd  map[named][]*analysis.Holding
	onGPU  map[model.GPUKey][]*analysis.Holding
	onNode map[named][]*analysis.Holding
	// last is each holder's last step bucket with data, by cluster and name.
	last map[named]int
	// entries are the ledger's holdings per GPU, sorted; eur all each GPU
	// cost over the period.
	entries map[model.GPUKey][]model.HoldingKey
	eur     map[model.GPUKey]float64
	nodes   map[named][]model.GPUKey // GPUs per node (cluster and name)
	layouts map[model.GPUKey]*model.EndLayout
	broken  map[model.GPUKey]*analysis.BrokenGPU
}

// named is a holder or node by its cluster and name.
type named struct{ cluster, name string }

func newPeriod(r *analysis.Result, d *model.Dataset) *period {
	p := &period{r: r, d: d, month: r.MonthFactor(),
		atEnd: map[named][]*analysis.Holding{}, onGPU: map[model.GPUKey][]*analysis.Holding{}, onNode: map[named][]*analysis.Holding{},
		last: map[named]int{}, entries: map[model.GPUKey][]model.HoldingKey{}, eur: map[model.GPUKey]float64{},
		nodes: map[named][]model.GPUKey{}, layouts: d.EndLayouts(), broken: map[model.GPUKey]*analysis.BrokenGPU{}}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !h.AtEnd {
			continue
		}
		p.atEnd[named{h.Cluster, h.Name()}] = append(p.atEnd[named{h.Cluster, h.Name()}], h)
		g := model.GPUKey{Cluster: h.Cluster, UUID: h.UUID}
		p.onGPU[g] = append(p.onGPU[g], h)
		p.onNode[named{h.Cluster, h.Node}] = append(p.onNode[named{h.Cluster, h.Node}], h)
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		e, g := d.Ledger[k], k.Dev.GPU()
		if _, ok := p.entries[g]; !ok {
			p.nodes[named{g.Cluster, e.Host}] = append(p.nodes[named{g.Cluster, e.Host}], g)
		}
		p.entries[g] = append(p.entries[g], k)
		for _, v := range e.EUR {
			p.eur[g] += v
		}
		if k.Holder != (model.HolderKey{}) {
			n := named{g.Cluster, k.Holder.Name()}
			if b, ok := p.last[n]; !ok || e.Last > b {
				p.last[n] = e.Last
			}
		}
	}
	for i := range r.BrokenGPUs {
		b := &r.BrokenGPUs[i]
		p.broken[model.GPUKey{Cluster: b.Cluster, UUID: b.UUID}] = b
	}
	return p
}

// gpuName names GPU g for people: node/index (UUID), or the UUID alone when
// this period has no data of it.
func (p *period) gpuName(g model.GPUKey) string {
	s := p.d.GPUs[g]
	if s == nil {
		return "GPU " + g.UUID
	}
	return fmt.Sprintf("GPU %s/%s (%s)", model.NodeName(g.Cluster, s.Host), s.GPU, g.UUID)
}

// missing says why GPU g is no target to tell anything by: it has no data
// in this period, or it fell off the bus; "" when it is there.
func (p *period) missing(g model.GPUKey) string {
	if p.d.GPUs[g] == nil {
		return fmt.Sprintf("%s has no data in this period: its node was removed or is no longer scraped", p.gpuName(g))
	}
	if b := p.broken[g]; b != nil {
		return fmt.Sprintf("%s fell off the bus at %s: it needs repair, whatever the advice", p.gpuName(g), b.Since.Format(time.RFC3339))
	}
	return ""
}

// bucketEnd is the end of step bucket b of the period.
func (p *period) bucketEnd(b int) time.Time {
	return p.d.Start.Add(time.Duration(b+1) * p.d.Step).UTC()
}

// leftAt returns the last step bucket in which a holder that target accepts
// (by name) held GPU g in this period; -1 when none did.
func (p *period) leftAt(g model.GPUKey, target func(string) bool) int {
	last := -1
	for _, k := range p.entries[g] {
		if k.Holder != (model.HolderKey{}) && target(k.Holder.Name()) {
			last = max(last, p.d.Ledger[k].Last)
		}
	}
	return last
}

// since says since when, by the last bucket b a target held it, something
// was left: the end of b, or before the period began (b < 0).
func (p *period) since(b int) string { return sinceText(p.bucketEnd(b), b < 0) }

// sinceText says "since t", or since before the period began.
func sinceText(t time.Time, before bool) string {
	if before {
		return "since before this period began"
	}
	return "since " + t.Format(time.RFC3339)
}

// heldAtEnd reports whether a holder that target accepts holds GPU g (or a
// part of it) at the end of the period.
func (p *period) heldAtEnd(g model.GPUKey, target func(string) bool) bool {
	for _, h := range p.onGPU[g] {
		if target(h.Name()) {
			return true
		}
	}
	return false
}
