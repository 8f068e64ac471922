package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gputally/gputally/report/analysis"
)

// The energy and emissions of GPU time in every format: kWh, kgCO2e and the
// kgCO2e emitted while held idle beside each EUR total, and where the
// carbon intensities come from.

// kWhOf formats a group's energy: "–" without device-hours, "no power
// readings" when none of them had energy readings, and the hours without
// readings beside a figure that covers only part of them.
func kWhOf(t analysis.Totals) string {
	switch {
	case t.EnergyKWh == nil && t.UnmeteredHours > 0:
		return "no power readings"
	case t.EnergyKWh == nil:
		return "–"
	case t.UnmeteredHours > 0:
		return fmt.Sprintf("%s (%s h without power readings)", kWh(*t.EnergyKWh), hours(t.UnmeteredHours))
	}
	return kWh(*t.EnergyKWh)
}

// withUnit appends the unit to a figure, not to "–" or words that say there
// is none.
func withUnit(figure, unit string) string {
	if figure == "–" || figure == "no power readings" {
		return figure
	}
	return figure + " " + unit
}

// kWh formats kilowatt-hours with 1 decimal.
func kWh(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// kgOf formats kg CO2e with 2 decimals; "–" when not known.
func kgOf(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// carbonCells are a group's energy, kgCO2e and idle kgCO2e cells.
func carbonCells(t analysis.Totals) []string {
	return []string{kWhOf(t), kgOf(t.KgCO2e), kgOf(t.IdleKgCO2e)}
}

// carbonLine says the fleet's energy and emissions, and the intensities
// used, in a sentence.
func carbonLine(r *Report) string {
	t := r.Fleet.Totals
	if t.EnergyKWh == nil {
		return "Energy and CO2e: no power readings (flat-rate models, or power not read): not known, not 0."
	}
	s := fmt.Sprintf("Energy %s kWh (measured power × PUE × time, the energy the EUR price)", kWh(*t.EnergyKWh))
	if t.UnmeteredHours > 0 {
		s += fmt.Sprintf("; %s device-hours had no power readings (flat-rate models, or power not read) and are not in it", hours(t.UnmeteredHours))
	}
	if t.KgCO2e == nil {
		return s + ". CO2e: the price book gives no carbon intensity (carbon.gco2e_per_kwh)."
	}
	return s + fmt.Sprintf(". %s kgCO2e, %s of it emitted while GPUs were held idle, at %s.", kgOf(t.KgCO2e), kgOf(t.IdleKgCO2e), intensities(r.Prices))
}

// intensities names the carbon intensities used and their price book fields.
func intensities(p *analysis.Prices) string {
	if p == nil || len(p.Carbon) == 0 {
		return "no carbon intensity"
	}
	parts := make([]string, len(p.Carbon))
	for i, c := range p.Carbon {
		where := ""
		if c.Cluster != "" {
			where = c.Cluster + ": "
		}
		parts[i] = fmt.Sprintf("%s%s gCO2e/kWh (%s)", where, strconv.FormatFloat(c.GCO2ePerKWh, 'f', -1, 64), c.Field)
	}
	return strings.Join(parts, ", ") + " from price book " + p.Book
}

// optF64 formats an optional figure for the CSV; empty when absent.
func optF64(p *float64) string {
	if p == nil {
		return ""
	}
	return f64(*p)
}

// carbonCSV fills a group's or holding's energy and emission cells: empty
// where there is no figure, never 0 for one not known.
func carbonCSV(cells []string, t analysis.Totals) {
	cells[csvEnergyKWh], cells[csvKgCO2e], cells[csvIdleKgCO2e] = optF64(t.EnergyKWh), optF64(t.KgCO2e), optF64(t.IdleKgCO2e)
	cells[csvUnmeteredHours] = f64(t.UnmeteredHours)
}

// carbonIntensityRows are the CSV rows of the carbon intensities used: one
// per cluster, its price book in name and its field in evidence.
func carbonIntensityRows(r *Report) [][]string {
	if r.Prices == nil {
		return nil
	}
	var rows [][]string
	for _, c := range r.Prices.Carbon {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[csvEvidence], cells[csvGCO2ePerKWh] = "carbon-intensity", r.Prices.Book, c.Field, f64(c.GCO2ePerKWh)
		rows = append(rows, withCluster(cells, c.Cluster))
	}
	return rows
}
