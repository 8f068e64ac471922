package analysis_test

import (
	"math"
	"testing"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

func mustBook(t *testing.T, yaml string) *cost.Book {
	t.Helper()
	b, err := cost.Parse([]byte(yaml), "prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// modelGroup returns the group of model name in r.
func modelGroup(t *testing.T, r *analysis.Result, name string) analysis.Group {
	t.Helper()
	for _, g := range r.Models {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no model %s in %+v", name, r.Models)
	return analysis.Group{}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

// is reports whether the optional figure p is there and near want.
func is(p *float64, want float64) bool { return p != nil && near(*p, want) }

const (
	a100 = "NVIDIA A100-SXM4-80GB"
	h100 = "NVIDIA H100 80GB HBM3"
	h200 = "NVIDIA H200"
	t4   = "Tesla T4"
)

// rentalBook rents an A100 at 5.00 EUR/h on demand (1.50 reserved), an H100
// at 4.00, an H200 at 6.00, and gives a T4 no rental price.
const rentalBook = `
models:
  - {match: A100, purchase_eur: 15000, cloud_eur_per_hour: 5.00, cloud_reserved_eur_per_hour: 1.50}
  - {match: H100, purchase_eur: 30000, cloud_eur_per_hour: 4.00}
  - {match: H200, purchase_eur: 35000, cloud_eur_per_hour: 6.00}
  - {match: ".", hourly_eur: 2.5}
`

// TestOwnOrRentHandComputed: over 10 one-hour buckets,
//
//   - A100 (2 GPUs at 2.00 EUR/h): GPU-A1 busy 3 h, idle 5 h, unallocated
//     2 h; GPU-A2 unallocated 10 h. Cost 20 GPU-h × 2 = 40 EUR: 2.00 EUR per
//     GPU-hour, 40 / 3 = 13.33 per busy GPU-hour; busy 3 / 20 = 15 %.
//     Break-even 2.00 / 5.00 = 40 %: below it. On demand the busy hours
//     cost 3 × 5 = 15 EUR, 25 less than owning.
//   - H100 (1 GPU at 3.00 EUR/h): busy 8 h, unallocated 2 h. 30 EUR, 3.00
//     per GPU-hour; busy 8 / 10 = 80 % of its GPU-hours (100 % of the held
//     ones); break-even 3 / 4 = 75 %: above it. On demand 8 × 4 = 32 EUR,
//     2 more than owning.
//   - H200 (1 GPU at 3.00 EUR/h): busy 5 h, unallocated 5 h. 30 EUR, 3.00
//     per GPU-hour, busy 50 %; break-even 3 / 6 = 50 %: exactly at it, and
//     5 × 6 = 30 EUR on demand, the same.
//   - T4 (1 GPU at 2.50 EUR/h): idle 10 h, no rental price: its owned
//     cost, 2.50 per GPU-hour, and no cost per busy hour (none was busy).
func TestOwnOrRentHandComputed(t *testing.T) {
	d := hourly.Dataset(10)
	ml := model.HolderKey{Namespace: "ml", Pod: "p", Container: "main"}
	dev := func(uuid, m string, eur float64) hourly.Device {
		return hourly.Device{Key: model.DeviceKey{UUID: uuid}, Host: "n1", GPU: uuid, Model: m, EURPerHour: eur}
	}
	fill := func(dv hourly.Device, states ...int) {
		for b, st := range states {
			holder := ml
			if st == model.StateUnallocated {
				holder = model.HolderKey{}
			}
			hourly.Add(d, dv, holder, b, st, 3600)
		}
	}
	const B, I, U = model.StateBusy, model.StateIdle, model.StateUnallocated
	fill(dev("GPU-A1", a100, 2), B, B, B, I, I, I, I, I, U, U)
	fill(dev("GPU-A2", a100, 2), U, U, U, U, U, U, U, U, U, U)
	fill(dev("GPU-H1", h100, 3), B, B, B, B, B, B, B, B, U, U)
	fill(dev("GPU-H2", h200, 3), B, B, B, B, B, U, U, U, U, U)
	fill(dev("GPU-T1", t4, 2.5), I, I, I, I, I, I, I, I, I, I)
	r, err := analysis.Analyze(d, nil, false, analysis.WithBook(mustBook(t, rentalBook)))
	if err != nil {
		t.Fatal(err)
	}

	a := modelGroup(t, r, a100)
	o := a.OwnOrRent
	if !near(o.CostPerGPUHourEUR, 2) || !is(o.CostPerBusyGPUHourEUR, 40.0/3) || !near(o.BusyShareOfGPUHours, 0.15) ||
		!is(o.CloudEURPerHour, 5) || !is(o.CloudEquivalentEUR, 15) || !is(o.BreakEvenBusyShare, 0.4) || !is(o.CloudReservedEURPerHour, 1.5) {
		t.Errorf("A100: %+v", *o)
	}
	if v, ok := a.RentVerdict(); !ok || v != -1 {
		t.Errorf("A100 busy 15 %% below break-even 40 %%: verdict %d, %v; want renting cheaper (-1)", v, ok)
	}
	if o.PriceEntry != `models[0] (match "A100")` {
		t.Errorf("A100 price entry %q", o.PriceEntry)
	}

	h := modelGroup(t, r, h100)
	o = h.OwnOrRent
	if !near(o.CostPerGPUHourEUR, 3) || !is(o.CostPerBusyGPUHourEUR, 30.0/8) || !near(o.BusyShareOfGPUHours, 0.8) ||
		!is(o.CloudEquivalentEUR, 32) || !is(o.BreakEvenBusyShare, 0.75) || o.CloudReservedEURPerHour != nil {
		t.Errorf("H100: %+v", *o)
	}
	if v, ok := h.RentVerdict(); !ok || v != 1 {
		t.Errorf("H100 busy 80 %% above break-even 75 %%: verdict %d, %v; want owning cheaper (1)", v, ok)
	}

	at := modelGroup(t, r, h200)
	o = at.OwnOrRent
	if *o.CloudEquivalentEUR != 30 || *o.BreakEvenBusyShare != 0.5 || o.BusyShareOfGPUHours != 0.5 || at.Totals.CostEUR != 30 {
		t.Errorf("H200 at break-even: %+v, cost %v", *o, at.Totals.CostEUR)
	}
	if v, ok := at.RentVerdict(); !ok || v != 0 {
		t.Errorf("H200 exactly at break-even: verdict %d, %v; want the same (0)", v, ok)
	}

	none := modelGroup(t, r, t4)
	o = none.OwnOrRent
	if !near(o.CostPerGPUHourEUR, 2.5) || o.CostPerBusyGPUHourEUR != nil || o.CloudEURPerHour != nil || o.CloudEquivalentEUR != nil || o.BreakEvenBusyShare != nil {
		t.Errorf("T4 without a rental price: %+v", *o)
	}
	if _, ok := none.RentVerdict(); ok {
		t.Error("T4 without a rental price has a verdict")
	}
	// Only models compare owning with renting.
	if r.Fleet.OwnOrRent != nil || r.Namespaces[0].OwnOrRent != nil {
		t.Error("a group other than a model carries own-or-rent figures")
	}
}

// TestOwnOrRentFreeRental: a rental price of 0 makes renting free: the
// busy hours cost 0, and there is no break-even share (it would be
// infinite), not a division by zero.
func TestOwnOrRentFreeRental(t *testing.T) {
	d := hourly.Dataset(1)
	hourly.Add(d, hourly.Device{Key: model.DeviceKey{UUID: "GPU-A"}, Host: "n1", GPU: "0", Model: a100, EURPerHour: 2},
		model.HolderKey{Namespace: "ml", Pod: "p", Container: "main"}, 0, model.StateBusy, 3600)
	r, err := analysis.Analyze(d, nil, false, analysis.WithBook(mustBook(t, "models: [{match: A100, purchase_eur: 1, cloud_eur_per_hour: 0}]\n")))
	if err != nil {
		t.Fatal(err)
	}
	g := modelGroup(t, r, a100)
	if o := g.OwnOrRent; !is(o.CloudEquivalentEUR, 0) || o.BreakEvenBusyShare != nil {
		t.Errorf("free rental: %+v", *o)
	}
	if v, _ := g.RentVerdict(); v != -1 {
		t.Errorf("free rental: verdict %d, want renting cheaper", v)
	}
}
