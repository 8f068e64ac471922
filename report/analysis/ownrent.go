package analysis

import (
	"fmt"

	"github.com/gputally/gputally/cost"
)

// OwnOrRent compares owning a GPU model's GPUs with renting them, from the
// model's measured cost and busy hours over the range and the price book's
// rental prices. Hours are device-hours: a busy MIG instance or time-sliced
// share counts as its part of a GPU, rented at that part of the price.
type OwnOrRent struct {
	// CostPerGPUHourEUR is the owned cost per GPU-hour: the model's cost
	// over the range ÷ its GPU-hours, every state counted (idle and
	// unallocated hours are paid for too).
	CostPerGPUHourEUR float64 `json:"cost_per_gpu_hour_eur"`
	// CostPerBusyGPUHourEUR is the cost ÷ the busy GPU-hours: what an hour
	// of work cost; nil when no hour was busy.
	CostPerBusyGPUHourEUR *float64 `json:"cost_per_busy_gpu_hour_eur,omitempty"`
	// BusyShareOfGPUHours is busy GPU-hours ÷ all GPU-hours, 0–1: the share
	// the break-even compares with (Totals.BusyShare divides by the held
	// hours instead).
	BusyShareOfGPUHours float64 `json:"busy_share_of_gpu_hours"`
	// CloudEURPerHour is the rental price on demand per GPU-hour, from the
	// price book (PriceEntry); nil without one, and then the two fields
	// after it are nil too.
	CloudEURPerHour *float64 `json:"cloud_eur_per_hour,omitempty"`
	// CloudEquivalentEUR is what renting only the busy hours on demand
	// would have cost: busy GPU-hours × CloudEURPerHour.
	CloudEquivalentEUR *float64 `json:"cloud_equivalent_eur,omitempty"`
	// BreakEvenBusyShare is CostPerGPUHourEUR ÷ CloudEURPerHour: below this
	// busy share renting on demand would have been cheaper, above it owning
	// was (above 1: renting is cheaper even at full use). nil when the
	// rental price is 0.
	BreakEvenBusyShare *float64 `json:"break_even_busy_share,omitempty"`
	// CloudReservedEURPerHour is the price book's reserved rental price per
	// GPU-hour, paid every hour as owning is: compare it with
	// CostPerGPUHourEUR. nil without one.
	CloudReservedEURPerHour *float64 `json:"cloud_reserved_eur_per_hour,omitempty"`
	// PriceEntry names the price book entry the rental prices come from,
	// "models[2] (match \"A100\")"; empty when no entry matches.
	PriceEntry string `json:"price_entry,omitempty"`
}

// RentVerdict says how renting the busy hours on demand compares with
// owning over the range: -1 renting would have been cheaper, 1 owning was,
// 0 the same; and false without a rental price.
func (g *Group) RentVerdict() (int, bool) {
	o := g.OwnOrRent
	if o == nil || o.CloudEquivalentEUR == nil {
		return 0, false
	}
	switch c := *o.CloudEquivalentEUR; {
	case c < g.Totals.CostEUR:
		return -1, true
	case c > g.Totals.CostEUR:
		return 1, true
	}
	return 0, true
}

// ownOrRent sets the OwnOrRent of each model group (its Name is the
// modelName the price book matches).
func (a *analyzer) ownOrRent(models []Group) {
	for i := range models {
		g := &models[i]
		t := g.Totals
		if t.GPUHours <= 0 {
			continue
		}
		o := &OwnOrRent{CostPerGPUHourEUR: t.CostEUR / t.GPUHours, BusyShareOfGPUHours: t.BusyHours / t.GPUHours}
		if t.BusyHours > 0 {
			o.CostPerBusyGPUHourEUR = ptr(t.CostEUR / t.BusyHours)
		}
		g.OwnOrRent = o
		if a.book == nil {
			continue
		}
		p := a.book.Price(g.Name)
		if p == nil {
			continue
		}
		o.PriceEntry = fmt.Sprintf("models[%d] (match %q)", entryIndex(a.book, p), p.Match.String())
		if p.HasCloudReserved {
			o.CloudReservedEURPerHour = ptr(p.CloudReservedEURPerHour)
		}
		if !p.HasCloud {
			continue
		}
		o.CloudEURPerHour = ptr(p.CloudEURPerHour)
		o.CloudEquivalentEUR = ptr(t.BusyHours * p.CloudEURPerHour)
		if p.CloudEURPerHour > 0 {
			o.BreakEvenBusyShare = ptr(o.CostPerGPUHourEUR / p.CloudEURPerHour)
		}
	}
}

// entryIndex is the index of p among the book's entries (Book.Price
// returns one of them).
func entryIndex(b *cost.Book, p *cost.ModelPrice) int {
	for i := range b.Models {
		if &b.Models[i] == p {
			return i
		}
	}
	return -1
}

func ptr(v float64) *float64 { return &v }
