package followup

import (
	"cmp"
	"slices"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
)

// figuresOf returns the figures of a group's totals.
func figuresOf(t analysis.Totals) Figures {
	return Figures{HeldHours: t.HeldHours, BusyShare: t.BusyShare, IdleEUR: t.IdleEUR, UnallocatedEUR: t.UnallocatedEUR, CostEUR: t.CostEUR, KgCO2e: t.KgCO2e}
}

// beforeAfter compares the fleet and each team of the baseline with this
// period's; teams in the order of this period (most EUR first), then those
// only the baseline had, by name.
func beforeAfter(base *report, r *analysis.Result) (fleet Change, teams []Change) {
	bf, af := figuresOf(base.Fleet.Totals), figuresOf(r.Fleet.Totals)
	fleet = Change{Name: "fleet", Before: &bf, After: &af}
	before := map[string]Figures{}
	for _, g := range base.Teams {
		before[g.Name] = figuresOf(g.Totals)
	}
	for _, g := range r.Teams {
		after := figuresOf(g.Totals)
		c := Change{Name: g.Name, After: &after}
		if b, ok := before[g.Name]; ok {
			c.Before = &b
			delete(before, g.Name)
		}
		teams = append(teams, c)
	}
	var gone []Change
	for name, b := range before {
		gone = append(gone, Change{Name: name, Before: &b})
	}
	slices.SortFunc(gone, func(x, y Change) int { return cmp.Compare(x.Name, y.Name) })
	return fleet, append(teams, gone...)
}

// weeks returns the fleet's figures in each of reports (newest first) and
// in this period, oldest first.
func weeks(reports []*report, r *analysis.Result, adv *advice.Advice) []Week {
	out := make([]Week, 0, len(reports)+1)
	for _, rep := range slices.Backward(reports) {
		out = append(out, Week{File: rep.path, Start: rep.Start, End: rep.End, Fleet: figuresOf(rep.Fleet.Totals), FreedEURPerMonth: rep.FreedEURPerMonth})
	}
	return append(out, Week{Start: r.Start, End: r.End, Fleet: figuresOf(r.Fleet.Totals), FreedEURPerMonth: adv.FreedEURPerMonth})
}
