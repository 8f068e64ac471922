package followup_test

import (
	"testing"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
)

// TestBeforeAfterTeamsOnce: each team is listed once in before and after —
// this period's teams by EUR, most first, each with its baseline figures
// when it had any, then the teams only the baseline had, by name. The
// baseline had ml (300 EUR) and ops (50 EUR); this period ml/t holds GPU-A
// at 1.00 EUR/h all week (168 EUR) and dev/x GPU-B at 2.00 EUR/h (336 EUR):
// dev (after only), ml (300 → 168 EUR), ops (before only).
func TestBeforeAfterTeamsOnce(t *testing.T) {
	path := baselineJSON(t, t.TempDir(), "baseline.json", nil, map[string]any{"teams": []analysis.Group{
		{Name: "ml", Totals: analysis.Totals{HeldHours: 168, BusyShare: 0.5, IdleEUR: 100, CostEUR: 300}},
		{Name: "ops", Totals: analysis.Totals{HeldHours: 40, IdleEUR: 50, CostEUR: 50}},
	}})
	b, err := followup.Open(path, followup.Period{Start: week2, End: end})
	if err != nil {
		t.Fatal(err)
	}
	r, d := period(t, []gpu{{"GPU-A", "node-a", "0", 1.00}, {"GPU-B", "node-a", "1", 2.00}}, []use{
		{gpu: "GPU-A", holder: "ml/t/main", to: 6, busy: 1}, {gpu: "GPU-B", holder: "dev/x/main", to: 6, busy: 0.5}})
	res, err := b.Follow(r, &advice.Advice{}, d)
	if err != nil {
		t.Fatal(err)
	}
	type figures struct{ before, after float64 } // cost EUR; -1: not there
	cost := func(f *followup.Figures) float64 {
		if f == nil {
			return -1
		}
		return f.CostEUR
	}
	var names []string
	got := map[string]figures{}
	for _, c := range res.Comparison.Teams {
		names = append(names, c.Name)
		got[c.Name] = figures{cost(c.Before), cost(c.After)}
	}
	want := map[string]figures{"dev": {-1, 336}, "ml": {300, 168}, "ops": {50, -1}}
	if len(names) != 3 || names[0] != "dev" || names[1] != "ml" || names[2] != "ops" {
		t.Fatalf("teams %v, want dev, ml, ops, each once", names)
	}
	for name, w := range want {
		if g := got[name]; !near(g.before, w.before) || !near(g.after, w.after) {
			t.Errorf("%s: cost before %.2f after %.2f, want %.2f → %.2f (-1: not there)", name, g.before, g.after, w.before, w.after)
		}
	}
}
