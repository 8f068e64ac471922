// Package followup follows up the advice of an earlier report. For each
// recommendation of a baseline — an earlier report's JSON — it decides from
// this period's data, never from a configuration, whether the change was
// applied, partly applied, not applied, or its target is gone; measures what
// it freed (the cost of the whole GPUs the change left free in this period,
// per month, as the advice counts freed money) and where those GPUs went; and
// compares the fleet's and each team's busy share, idle and unallocated EUR
// with the baseline's, with the weeks a directory of kept reports holds
// (docs/report.md, "Did the advice pay off?").
//
// It reads the baseline's file, and analysis, advice and model; it makes no
// query, and the render package reads its Result.
package followup

import (
	"slices"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// The status of a followed-up recommendation (Item.Status).
const (
	Applied       = "applied"        // every target that is still there is changed as advised
	PartlyApplied = "partly_applied" // some of its targets are
	NotApplied    = "not_applied"    // none of its targets is
	Gone          = "gone"           // none of its targets is there to tell: not in this period's data, or broken
)

// The state of one target of a recommendation (Part.State).
const (
	partDone    = "done"
	partNotDone = "not done"
	partGone    = "gone"
)

// Result is the follow-up of a baseline: a plain value the renderers read,
// safe for concurrent reads.
type Result struct {
	// Items follow up the baseline's recommendations, in its order.
	Items []Item
	// Comparison is this period against the baseline's; nil when there was
	// no baseline to follow up (a directory without an earlier report that
	// fits).
	Comparison *Comparison
	// Notes say, when Comparison is nil, why: the earlier reports of the
	// directory that did not fit.
	Notes []string
}

// Item is the follow-up of one recommendation of the baseline. EUR/month
// figures are per month of model.HoursPerMonth hours.
type Item struct {
	Kind    string `json:"kind"`
	Cluster string `json:"cluster,omitempty"`
	Target  string `json:"target"`
	// Status is Applied, PartlyApplied, NotApplied or Gone.
	Status string `json:"status"`
	// FreedEURPerMonthPromised is the baseline's freed figure.
	FreedEURPerMonthPromised float64 `json:"freed_eur_per_month_promised"`
	// FreedEURPerMonthRealized is the measured cost in this period of the
	// whole GPUs the change left free (FreedGPUs), per month: never more GPUs
	// than the baseline counted as freed, and 0 unless the change is applied
	// or partly applied.
	FreedEURPerMonthRealized float64 `json:"freed_eur_per_month_realized"`
	// Evidence says what in this period's data decided the status and where
	// the freed GPUs went, in a sentence.
	Evidence string `json:"evidence"`
	// Parts are the targets of the change, each with its state.
	Parts []Part `json:"parts"`
	// FreedGPUs are the GPUs counted in FreedEURPerMonthRealized.
	FreedGPUs []FreedGPU `json:"freed_gpus"`
}

// Part is one target of a recommendation — the holding to release, a pod to
// time-slice, a GPU to repartition, the node to drain — and what this
// period's data shows of it at its end.
type Part struct {
	Name     string `json:"name"`
	State    string `json:"state"` // "done", "not done" or "gone"
	Evidence string `json:"evidence"`
}

// FreedGPU is a GPU a change left free — none of its targets holds it at the
// end of the period (for a drain: no pod does) — and where it went. Hours are
// the period's device-hours on the GPU other than its targets'.
type FreedGPU struct {
	UUID string `json:"uuid"`
	Node string `json:"node"`
	GPU  string `json:"gpu"` // index on its node
	// Promised is true when the baseline counted this GPU as freed; the
	// others stand in for promised GPUs that are still held.
	Promised bool `json:"promised"`
	// FreeSince is the end of the last step in which a target held it; the
	// period's start when none did in the period (FreeBeforePeriod).
	FreeSince        time.Time `json:"free_since"`
	FreeBeforePeriod bool      `json:"free_before_period"`
	// EURPerMonth is all the GPU cost in this period, per month.
	EURPerMonth      float64  `json:"eur_per_month"`
	UnallocatedHours float64  `json:"unallocated_hours"`
	OtherHeldHours   float64  `json:"other_held_hours"` // held by other work
	OtherHolders     []string `json:"other_holders"`    // namespace/pod/container
	// Went says where it went: "unallocated" (money still burning until the
	// node is used or returned), "other work", or "unallocated and other
	// work".
	Went string `json:"went"`
}

// Comparison is this period against the baseline's.
type Comparison struct {
	File  string    `json:"file"` // the baseline's path
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Fleet Change    `json:"fleet"`
	Teams []Change  `json:"teams"`
	// Weeks are the periods of the kept reports that fit this one, oldest
	// first, ending with this period (File empty): the baseline's directory
	// of reports, or the baseline file alone.
	Weeks []Week `json:"weeks"`
	// Notes say what the follow-up found worth knowing: reports of the
	// directory it skipped and why, clusters or kinds of figures that differ.
	Notes []string `json:"notes"`
}

// Figures are a period's figures of the fleet or a team. EUR are over the
// period (of one length in both).
type Figures struct {
	HeldHours      float64 `json:"held_hours"`
	BusyShare      float64 `json:"busy_share"` // busy hours / held hours, 0–1
	IdleEUR        float64 `json:"idle_eur"`   // allocated but idle
	UnallocatedEUR float64 `json:"unallocated_eur"`
	CostEUR        float64 `json:"cost_eur"`
	// KgCO2e is the period's emissions (analysis.Totals.KgCO2e); nil
	// without energy readings or a carbon intensity, and for a baseline
	// written before reports had emissions.
	KgCO2e *float64 `json:"kgco2e,omitempty"`
}

// Change is the fleet or a team before (the baseline) and after (this
// period); nil where it was not there.
type Change struct {
	Name   string   `json:"name"`
	Before *Figures `json:"before"`
	After  *Figures `json:"after"`
}

// Week is the fleet's figures in one kept report's period, and the EUR per
// month its advice promised to free.
type Week struct {
	File             string    `json:"file"` // empty for this report
	Start            time.Time `json:"start"`
	End              time.Time `json:"end"`
	Fleet            Figures   `json:"fleet"`
	FreedEURPerMonth float64   `json:"freed_eur_per_month"`
}

// Follow follows the baseline up with r, this period's analysis of d, and
// adv, its advice. For a file of other clusters than r's it fails with an
// error wrapping ErrBadBaseline; a directory's reports of other clusters are
// skipped. It only reads r, adv and d.
func (b *Baseline) Follow(r *analysis.Result, adv *advice.Advice, d *model.Dataset) (*Result, error) {
	base, older, err := b.choose(r.Clusters)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return &Result{Notes: b.skipped}, nil
	}
	p := newPeriod(r, d)
	out := &Result{Items: make([]Item, 0, len(base.Recommendations))}
	for _, rec := range base.Recommendations {
		out.Items = append(out.Items, p.follow(rec))
	}
	c := &Comparison{File: base.path, Start: base.Start, End: base.End, Notes: b.skipped}
	c.Fleet, c.Teams = beforeAfter(base, r)
	c.Weeks = weeks(append([]*report{base}, older...), r, adv)
	if !sameMultiset(base.Clusters, r.Clusters) {
		c.Notes = append(c.Notes, "the baseline covers clusters "+clusterList(base.Clusters)+" and this report "+clusterList(r.Clusters)+
			": the fleet's before and after compare different clusters")
	}
	if n := base.shortNote(); n != "" {
		c.Notes = append(c.Notes, n)
	}
	if base.Kind != r.Fleet.Kind {
		c.Notes = append(c.Notes, "the baseline's figures are "+base.Kind+", this report's "+r.Fleet.Kind)
	}
	out.Comparison = c
	return out, nil
}

// follow follows up one recommendation.
func (p *period) follow(rec advice.Recommendation) Item {
	it := Item{Kind: rec.Kind, Cluster: rec.Cluster, Target: rec.Target, FreedEURPerMonthPromised: rec.FreedEURPerMonth}
	target := holderIn(rec.Holdings)
	switch rec.Kind {
	case "release":
		it.Parts = p.release(rec)
	case "time-slicing":
		it.Parts = p.timeSlicing(rec)
	case "mig":
		it.Parts = p.mig(rec)
	case "drain":
		it.Parts = p.drain(rec)
		target = func(string) bool { return true } // a drain frees a GPU only when no pod holds it
	}
	it.Status = statusOf(it.Parts)
	if it.Status == Applied || it.Status == PartlyApplied {
		it.FreedGPUs = p.freed(rec, target)
	}
	var words []string
	for _, pt := range it.Parts {
		words = append(words, pt.Evidence)
	}
	for _, f := range it.FreedGPUs {
		it.FreedEURPerMonthRealized += f.EURPerMonth
		words = append(words, f.evidence(p.gpuName(model.GPUKey{Cluster: rec.Cluster, UUID: f.UUID})))
	}
	if len(it.Parts) == 0 {
		words = append(words, "the baseline names no target of kind "+rec.Kind+" to follow up")
	}
	it.Evidence = strings.Join(words, "; ")
	return it
}

// statusOf decides a recommendation's status from its parts: Gone when none
// is there to tell, else Applied when every part there is done, NotApplied
// when none is, PartlyApplied between.
func statusOf(parts []Part) string {
	done, notDone := 0, 0
	for _, pt := range parts {
		switch pt.State {
		case partDone:
			done++
		case partNotDone:
			notDone++
		}
	}
	switch {
	case done+notDone == 0:
		return Gone
	case notDone == 0:
		return Applied
	case done == 0:
		return NotApplied
	}
	return PartlyApplied
}

// holderIn returns whether a holder's name (namespace/pod/container) is one
// of names.
func holderIn(names []string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// sameMultiset reports whether a and b hold the same strings, as often
// each, in any order.
func sameMultiset(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
