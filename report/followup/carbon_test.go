package followup_test

import (
	"testing"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
	"github.com/gputally/gputally/report/model"
)

// TestBeforeAfterCarriesKgCO2e: the baseline emitted 50 kgCO2e, 20 of them
// team ml's. This week ml/train holds GPU-A (500 W at the facility) all
// week and GPU-B is unallocated at 500 W: 168 h × 0.5 kW = 84 kWh each, ×
// 400 gCO2e/kWh = 33.6 kg each, 67.2 for the fleet. Before and after, and
// the kept weeks, carry those figures; a baseline written without emissions
// has none before, rather than 0.
func TestBeforeAfterCarriesKgCO2e(t *testing.T) {
	book, err := cost.Parse([]byte("models: [{match: ., purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 400}\n"), "prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, d := period(t, []gpu{{"GPU-A", "n1", "0", 2}, {"GPU-B", "n1", "1", 2}},
		[]use{{gpu: "GPU-A", holder: "ml/train/main", from: 0, to: 6, busy: 0.5}, {gpu: "GPU-B", from: 0, to: 6}})
	for _, e := range d.Ledger {
		e.Metered = true
		for st, s := range e.Seconds {
			e.Joules[st] = s * 500
		}
	}
	r, err := analysis.Analyze(d, nil, false, analysis.WithBook(book))
	if err != nil {
		t.Fatal(err)
	}
	kg := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		name                 string
		fleet, ml            *float64
		wantFleet, wantTeamB *float64
	}{
		{"baseline with emissions", kg(50), kg(20), kg(50), kg(20)},
		{"baseline without", nil, nil, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]any{
				"fleet": analysis.Group{Name: "fleet", Kind: "exact", Totals: analysis.Totals{HeldHours: 336, CostEUR: 700, KgCO2e: tt.fleet}},
				"teams": []analysis.Group{{Name: "ml", Totals: analysis.Totals{HeldHours: 168, CostEUR: 300, KgCO2e: tt.ml}}},
			}
			path := baselineJSON(t, t.TempDir(), "baseline.json", nil, extra)
			b, err := followup.Open(path, followup.Period{Start: week2, End: end})
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.Follow(r, &advice.Advice{}, d)
			if err != nil {
				t.Fatal(err)
			}
			c := res.Comparison
			if !same(c.Fleet.Before.KgCO2e, tt.wantFleet) || !same(c.Fleet.After.KgCO2e, kg(67.2)) {
				t.Errorf("fleet kgCO2e %s → %s, want %s → 67.2", show(c.Fleet.Before.KgCO2e), show(c.Fleet.After.KgCO2e), show(tt.wantFleet))
			}
			if ml := c.Teams[0]; ml.Name != "ml" || !same(ml.Before.KgCO2e, tt.wantTeamB) || !same(ml.After.KgCO2e, kg(33.6)) {
				t.Errorf("team %s kgCO2e %s → %s, want %s → 33.6", ml.Name, show(ml.Before.KgCO2e), show(ml.After.KgCO2e), show(tt.wantTeamB))
			}
			if w := c.Weeks; len(w) != 2 || !same(w[0].Fleet.KgCO2e, tt.wantFleet) || !same(w[1].Fleet.KgCO2e, kg(67.2)) {
				t.Errorf("weeks kept: %+v", w)
			}
		})
	}
	if i := r.Fleet.Totals.IdleKgCO2e; i == nil || !near(*i, 16.8) {
		t.Errorf("idle kgCO2e %s, want 84 h idle × 0.5 kW × 0.4 = 16.8", show(i))
	}
}

func same(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && near(*a, *b) }

func show(p *float64) string {
	if p == nil {
		return "none"
	}
	return model.FormatEUR(*p)
}
