package cost

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
)

// HoursPerYear is the number of hours a GPU is amortized over per year of
// amortization_years: 365 × 24, running around the clock.
const HoursPerYear = 8760

//go:embed default_book.yaml
var defaultBookYAML []byte

// DefaultBookYAML returns the text of the built-in price book, for
// documentation and as a starting point for a site's own book.
func DefaultBookYAML() []byte { return bytes.Clone(defaultBookYAML) }

// MIGWeight says how the cost of a MIG-partitioned GPU splits over its
// instances.
type MIGWeight uint8

// The MIG weights of the price book's mig_weight.
const (
	// ComputeWeight weighs an instance by its compute slices of 7.
	ComputeWeight MIGWeight = iota
	// MemoryWeight weighs an instance by its memory slices of 8.
	MemoryWeight
)

// String returns the price book spelling: "compute" or "memory".
func (w MIGWeight) String() string {
	if w == MemoryWeight {
		return "memory"
	}
	return "compute"
}

// Weight returns the part of a GPU, 0–1, that an instance of the given slices
// holds: computeSlices/7 or memorySlices/8. Slice counts below 0 count as 0.
func (w MIGWeight) Weight(computeSlices, memorySlices int) float64 {
	if w == MemoryWeight {
		return float64(max(memorySlices, 0)) / 8
	}
	return float64(max(computeSlices, 0)) / 7
}

// Book is a validated price book. A Book is immutable once Parse returns it and
// safe for concurrent use.
type Book struct {
	// Name is the file the book came from ("built-in" for Default); errors name it.
	Name string
	// Currency is always "EUR": the metric names carry the currency.
	Currency string
	// Models are the price entries in book order; the first whose Match matches
	// a GPU's modelName prices it.
	Models []ModelPrice
	// MIGWeight splits a MIG GPU's cost over its instances.
	MIGWeight MIGWeight
	// IdleThreshold is the activity ratio, 0–1, below which an allocated part is idle.
	IdleThreshold float64
	// Carbon is the carbon intensity of the grid the GPUs draw from, per
	// cluster; its Known is false when the book gives none.
	Carbon Carbon

	modelsLine int // line of the models key, for errors about GPUs no entry prices
}

// ModelPrice prices the GPUs whose modelName matches Match. Either Flat is set
// and HourlyEUR is the whole rate, or the rate is capital + energy + overhead
// from the other fields (the book's defaults already applied).
type ModelPrice struct {
	Match *regexp.Regexp
	Line  int // line of the entry in the book

	Flat      bool
	HourlyEUR float64 // EUR per hour, the flat rate; only when Flat

	PurchaseEUR        float64 // EUR per GPU
	AmortizationYears  float64 // years
	EnergyEURPerKWh    float64 // EUR per kWh
	PUE                float64 // ratio ≥ 1
	OverheadEURPerHour float64 // EUR per hour

	// CloudEURPerHour is what one GPU of the model costs rented on demand,
	// EUR per GPU-hour: the rental price the report compares owning with.
	// Only when HasCloud.
	CloudEURPerHour float64
	HasCloud        bool
	// CloudReservedEURPerHour is the same GPU rented on a reservation (a
	// commitment paid every hour, used or not), EUR per GPU-hour. Only when
	// HasCloudReserved.
	CloudReservedEURPerHour float64
	HasCloudReserved        bool
}

// Rate is the cost of holding one GPU, in EUR per hour, by component: the
// values of gputally_gpu_hourly_cost_eur{component}. A flat hourly_eur rate is
// reported whole as Capital (it pays for having the GPU; energy and overhead
// are in the price).
type Rate struct {
	Capital  float64 // EUR/h: purchase_eur / (amortization_years × 8760), or the flat rate
	Energy   float64 // EUR/h: power W / 1000 × PUE × energy_eur_per_kwh
	Overhead float64 // EUR/h: overhead_eur_per_hour
}

// Total returns the whole rate in EUR per hour.
func (r Rate) Total() float64 { return r.Capital + r.Energy + r.Overhead }

// MaxPowerW is the highest power reading, W, that Rate believes: no GPU board
// draws 10 kW, so a higher reading is a broken sensor, not a cost.
const MaxPowerW = 10000

// knownPower reports whether powerW is a power reading to believe: not NaN,
// not negative, at most MaxPowerW.
func knownPower(powerW float64) bool { return powerW >= 0 && powerW <= MaxPowerW }

// Rate returns the rate of one GPU priced by p that draws powerW watts. When
// the power is unknown (NaN, negative, or above MaxPowerW), the energy
// component is 0. For a book Parse accepted, every component is finite and
// at most about 1.25e7 EUR/h (see MaxPurchaseEUR).
func (p *ModelPrice) Rate(powerW float64) Rate {
	if p.Flat {
		return Rate{Capital: p.HourlyEUR}
	}
	r := Rate{
		Capital:  p.PurchaseEUR / (p.AmortizationYears * HoursPerYear),
		Overhead: p.OverheadEURPerHour,
	}
	r.Energy = p.FacilityPowerW(powerW) / 1000 * p.EnergyEURPerKWh
	return r
}

// Price returns the first entry whose Match matches model, or nil when none does.
func (b *Book) Price(model string) *ModelPrice {
	for i := range b.Models {
		if b.Models[i].Match.MatchString(model) {
			return &b.Models[i]
		}
	}
	return nil
}

// GPUModel names one GPU of a node for CheckModels.
type GPUModel struct {
	UUID  string // "GPU-…"
	Model string // the modelName
}

// CheckModels returns an error naming the first GPU that no entry of the book
// prices, or nil when every GPU has a price.
func (b *Book) CheckModels(gpus []GPUModel) error {
	for _, g := range gpus {
		if b.Price(g.Model) == nil {
			return &BookError{File: b.Name, Line: b.modelsLine, Field: "models",
				Problem: fmt.Sprintf("no price for GPU model %q (%s)", g.Model, g.UUID)}
		}
	}
	return nil
}

// BookError is a price book that cannot be used: the file, the line, the field
// (a path such as "models[2].purchase_eur") and what is wrong with it.
type BookError struct {
	File    string
	Line    int // 1-based; 0 when the problem has no line (an empty file)
	Field   string
	Problem string
}

func (e *BookError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", where, e.Problem)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Field, e.Problem)
}
