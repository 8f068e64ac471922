package render

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/analysis"
)

// Own or rent, per GPU model, in every format: the owned cost per GPU-hour
// and per busy GPU-hour, the rental price, what renting only the busy hours
// on demand would have cost, and the break-even busy share.

// ownOrRentModels returns the models that carry a comparison.
func ownOrRentModels(models []analysis.Group) []analysis.Group {
	var out []analysis.Group
	for _, g := range models {
		if g.OwnOrRent != nil {
			out = append(out, g)
		}
	}
	return out
}

// ownOrRentLine says in one sentence how owning a model compared with
// renting its busy hours on demand.
func ownOrRentLine(g analysis.Group) string {
	o := g.OwnOrRent
	head := fmt.Sprintf("%s: busy %s of its GPU-hours", orNone(g.Name), pct(o.BusyShareOfGPUHours))
	if o.CloudEURPerHour == nil {
		where := "no entry of the price book matches it"
		if o.PriceEntry != "" {
			where = "set cloud_eur_per_hour in " + o.PriceEntry
		}
		return fmt.Sprintf("%s, %s EUR per GPU-hour owned: no rental price to compare with (%s).", head, eur(o.CostPerGPUHourEUR), where)
	}
	if o.BreakEvenBusyShare != nil {
		head += ", break-even " + pct(*o.BreakEvenBusyShare)
	}
	owned, rented := g.Totals.CostEUR, *o.CloudEquivalentEUR
	verdict, _ := g.RentVerdict()
	switch verdict {
	case -1:
		return fmt.Sprintf("%s: on demand would have cost %s EUR less in this period (%s EUR for the busy hours at %s EUR/h, against %s EUR owned).",
			head, eur(owned-rented), eur(rented), eur(*o.CloudEURPerHour), eur(owned))
	case 1:
		return fmt.Sprintf("%s: owning cost %s EUR less than renting the busy hours on demand would have (%s EUR owned, against %s EUR at %s EUR/h).",
			head, eur(rented-owned), eur(owned), eur(rented), eur(*o.CloudEURPerHour))
	}
	return fmt.Sprintf("%s: owning cost what renting the busy hours on demand would have, %s EUR.", head, eur(owned))
}

// optEUR formats an optional amount of EUR; "–" when absent.
func optEUR(p *float64) string {
	if p == nil {
		return "–"
	}
	return eur(*p)
}

// optPct formats an optional share; "–" when absent.
func optPct(p *float64) string {
	if p == nil {
		return "–"
	}
	return pct(*p)
}

// ownOrRentHeader heads the table of ownOrRentCells.
var ownOrRentHeader = []string{"model", "owned EUR per GPU-hour", "owned EUR per busy GPU-hour", "busy share of GPU-hours",
	"on demand EUR/h", "busy hours on demand EUR", "owned EUR", "break-even busy share", "reserved EUR/h", "price book entry"}

// ownOrRentCells are a model's row of the own-or-rent table.
func ownOrRentCells(g analysis.Group) []string {
	o := g.OwnOrRent
	return []string{orNone(g.Name), eur(o.CostPerGPUHourEUR), optEUR(o.CostPerBusyGPUHourEUR), pct(o.BusyShareOfGPUHours),
		optEUR(o.CloudEURPerHour), optEUR(o.CloudEquivalentEUR), eur(g.Totals.CostEUR), optPct(o.BreakEvenBusyShare),
		optEUR(o.CloudReservedEURPerHour), o.PriceEntry}
}

// ownOrRentNote says what the comparison counts and where the prices come
// from.
func ownOrRentNote(r *Report) string {
	book := "the price book"
	if r.Prices != nil {
		book = "price book " + r.Prices.Book
	}
	if !slices.ContainsFunc(r.Models, func(g analysis.Group) bool { return g.OwnOrRent != nil && g.CloudEURPerHour != nil }) {
		return "No rental price in " + book + ": set cloud_eur_per_hour (and cloud_reserved_eur_per_hour) per model to compare owning with renting; docs/cost.md gives example figures with their sources."
	}
	return "Renting only the busy hours on demand costs busy GPU-hours × the on-demand price; owning costs the measured cost of every hour, idle and unallocated too. " +
		"Below the break-even busy share (owned cost per GPU-hour ÷ on-demand price) renting on demand would have been cheaper. A reserved price is paid every hour, as owning is: compare it with the owned cost per GPU-hour. " +
		"Rental prices from " + book + " (cloud_eur_per_hour, cloud_reserved_eur_per_hour): figures its owner entered, not quotes; see docs/cost.md."
}

func mdOwnOrRent(b *strings.Builder, r *Report) {
	models := ownOrRentModels(r.Models)
	if len(models) == 0 {
		return
	}
	b.WriteString("## Own or rent\n\n")
	for _, g := range models {
		fmt.Fprintf(b, "- %s\n", mdCell(ownOrRentLine(g)))
	}
	fmt.Fprintf(b, "\n%s\n\n| %s |\n|---|%s\n", mdCell(ownOrRentNote(r)), strings.Join(ownOrRentHeader, " | "), strings.Repeat("---:|", len(ownOrRentHeader)-2)+"---|")
	for _, g := range models {
		fmt.Fprintf(b, "| %s |\n", strings.Join(mdCells(ownOrRentCells(g)), " | "))
	}
	b.WriteString("\n")
}

// ownOrRentChart draws, per model, its busy share of GPU-hours as a bar and
// its break-even busy share as a mark: a bar that ends left of its mark is
// a model renting on demand would have been cheaper for.
func ownOrRentChart(models []analysis.Group) template.HTML {
	const width, left, bar, right = 900, 200, 26, 230
	scale := 1.0
	for _, g := range models {
		if be := g.BreakEvenBusyShare; be != nil {
			scale = math.Max(scale, *be)
		}
	}
	plot := float64(width - left - right)
	x := func(share float64) float64 { return float64(left) + plot*share/scale }
	var b strings.Builder
	height := max(1, len(models))*bar + 30
	fmt.Fprintf(&b, `<svg id="chart-own-or-rent" role="img" aria-label="busy share against break-even busy share per GPU model" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	for i, g := range models {
		y := 5 + i*bar
		name := svgText(orNone(g.Name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+16, name)
		fmt.Fprintf(&b, `<rect class="busy" x="%d" y="%d" width="%.1f" height="%d"><title>%s: busy %s of its GPU-hours</title></rect>`,
			left, y+3, math.Max(x(g.BusyShareOfGPUHours)-left, 1), bar-8, name, pct(g.BusyShareOfGPUHours))
		label := "no rental price"
		if be := g.BreakEvenBusyShare; be != nil {
			label = "break-even " + pct(*be)
			fmt.Fprintf(&b, `<line class="break-even" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#b71c1c" stroke-width="3"><title>%s: break-even %s</title></line>`,
				x(*be), y, x(*be), y+bar-2, name, pct(*be))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">busy %s, %s</text>`, width-right+6, y+16, pct(g.BusyShareOfGPUHours), label)
	}
	axis := 5 + len(models)*bar + 16
	fmt.Fprintf(&b, `<text x="%d" y="%d">0 %%</text><text x="%.1f" y="%d" text-anchor="end">%s</text>`, left, axis, x(scale), axis, pct(scale))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// ownOrRentCSV fills a model row's own-or-rent cells; other rows have none.
func ownOrRentCSV(cells []string, g analysis.Group) {
	o := g.OwnOrRent
	if o == nil {
		return
	}
	cells[csvCostPerGPUHour], cells[csvCostPerBusyGPUHour] = f64(o.CostPerGPUHourEUR), optF64(o.CostPerBusyGPUHourEUR)
	cells[csvBusyShareOfGPUHours], cells[csvCloud], cells[csvCloudReserved] = f64(o.BusyShareOfGPUHours), optF64(o.CloudEURPerHour), optF64(o.CloudReservedEURPerHour)
	cells[csvCloudEquivalent], cells[csvBreakEven] = optF64(o.CloudEquivalentEUR), optF64(o.BreakEvenBusyShare)
	if o.PriceEntry != "" {
		cells[csvEvidence] = o.PriceEntry
	}
}
