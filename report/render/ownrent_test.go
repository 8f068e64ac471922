package render

import (
	"strings"
	"testing"

	"github.com/gputally/gputally/report/analysis"
)

func f(v float64) *float64 { return &v }

// modelOwned is a model group that cost 100 EUR over 50 GPU-hours (2.00 EUR
// per GPU-hour), busy 20 h (40 %), rented at rent EUR/h on demand: break-even
// 2 / rent, and renting the busy hours costs 20 × rent.
func modelOwned(name string, rent *float64) analysis.Group {
	o := &analysis.OwnOrRent{CostPerGPUHourEUR: 2, CostPerBusyGPUHourEUR: f(5), BusyShareOfGPUHours: 0.4, CloudEURPerHour: rent, PriceEntry: `models[0] (match "X")`}
	if rent != nil {
		o.CloudEquivalentEUR, o.BreakEvenBusyShare = f(20**rent), f(2 / *rent)
	}
	return analysis.Group{Name: name, Totals: analysis.Totals{CostEUR: 100, GPUHours: 50, BusyHours: 20}, OwnOrRent: o}
}

// TestOwnOrRentLines: the line says which way it went, by how much, from the
// model's figures — at 4.00 EUR/h (break-even 50 %, above the 40 % busy)
// renting the busy hours costs 80, 20 less; at 6.00 (33.3 %) 120, 20 more;
// at 5.00 (exactly 40 %) 100, the same; without a rental price it names the
// entry to set. The note says where the rental prices come from, or that
// the book has none.
func TestOwnOrRentLines(t *testing.T) {
	for _, tt := range []struct {
		rent *float64
		want string
	}{
		{f(4), "A: busy 40.0 % of its GPU-hours, break-even 50.0 %: on demand would have cost 20.00 EUR less in this period (80.00 EUR for the busy hours at 4.00 EUR/h, against 100.00 EUR owned)."},
		{f(6), "A: busy 40.0 % of its GPU-hours, break-even 33.3 %: owning cost 20.00 EUR less than renting the busy hours on demand would have (100.00 EUR owned, against 120.00 EUR at 6.00 EUR/h)."},
		{f(5), "A: busy 40.0 % of its GPU-hours, break-even 40.0 %: owning cost what renting the busy hours on demand would have, 100.00 EUR."},
		{nil, `A: busy 40.0 % of its GPU-hours, 2.00 EUR per GPU-hour owned: no rental price to compare with (set cloud_eur_per_hour in models[0] (match "X")).`},
	} {
		if got := ownOrRentLine(modelOwned("A", tt.rent)); got != tt.want {
			t.Errorf("line\n got: %s\nwant: %s", got, tt.want)
		}
	}
	priced := &Report{Models: []analysis.Group{modelOwned("A", f(4))}, Prices: &analysis.Prices{Book: "prices.yaml"}}
	if n := ownOrRentNote(priced); !strings.Contains(n, "Rental prices from price book prices.yaml") {
		t.Errorf("note with a rental price: %s", n)
	}
	unpriced := &Report{Models: []analysis.Group{modelOwned("A", nil)}, Prices: &analysis.Prices{Book: "built-in"}}
	if n := ownOrRentNote(unpriced); !strings.HasPrefix(n, "No rental price in price book built-in: set cloud_eur_per_hour") {
		t.Errorf("note without a rental price: %s", n)
	}
}
