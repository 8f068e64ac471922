package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/gputally/gputally/report/analysis"
)

var csvHeader = []string{"section", "name", "gpu_hours", "held_hours", "busy_hours", "idle_hours", "unallocated_hours",
	"busy_share", "cost_eur", "idle_eur", "unallocated_eur", "p95_activity", "peak_fb_mib", "p99_fb_mib",
	"kind", "freed_eur_per_month", "reclaimable_eur_per_month", "hours_per_month", "evidence",
	"lost_hours", "unknown_hours", "lost_eur", "unknown_eur", "coverage", "missing_hours", "from", "to", "figures", "cluster",
	"status", "freed_eur_per_month_promised", "freed_eur_per_month_realized",
	"energy_kwh", "kgco2e", "idle_kgco2e", "unmetered_hours", "cost_per_gpu_hour_eur", "cost_per_busy_gpu_hour_eur",
	"busy_share_of_gpu_hours", "cloud_eur_per_hour", "cloud_reserved_eur_per_hour", "cloud_equivalent_eur", "break_even_busy_share", "gco2e_per_kwh",
	"sharing", "share"}

// Columns of csvHeader the rows fill by name.
const (
	csvKind = 14 + iota
	csvFreed
	csvReclaimable
	csvHoursPerMonth
	csvEvidence
	csvLostHours
	csvUnknownHours
	csvLostEUR
	csvUnknownEUR
	csvCoverage
	csvMissingHours
	csvFrom
	csvTo
	csvFigures
	csvCluster // of a node, holding, recommendation, GPU or gap: the report's cluster label; empty without one
	csvStatus  // of a followed-up recommendation: applied, partly_applied, not_applied or gone
	csvPromised
	csvRealized
	csvEnergyKWh // of a group or holding with energy readings; empty without
	csvKgCO2e
	csvIdleKgCO2e
	csvUnmeteredHours
	csvCostPerGPUHour // of a model: own or rent (ownOrRentCSV)
	csvCostPerBusyGPUHour
	csvBusyShareOfGPUHours
	csvCloud
	csvCloudReserved
	csvCloudEquivalent
	csvBreakEven
	csvGCO2ePerKWh // of a carbon-intensity row
	csvSharing     // of a holding: how it shares its device (gputally_gpu_allocation's sharing)
	csvShare       // of a shared holding: its share of its device at its last sample
)

// Columns of the figures csvHeader begins with, for rows that fill only some.
const (
	csvHeldHours      = 3
	csvBusyShare      = 7
	csvCostEUR        = 8
	csvIdleEUR        = 9
	csvUnallocatedEUR = 10
)

// withCluster sets the cluster cell of a row and returns it.
func withCluster(cells []string, cluster string) []string {
	cells[csvCluster] = cluster
	return cells
}

// f64 formats x rounded to 6 decimals.
func f64(x float64) string { return strconv.FormatFloat(math.Round(x*1e6)/1e6, 'f', -1, 64) }

func usageCells(u analysis.Usage) []string {
	c := []string{"", "", ""}
	if u.HasActivity {
		c[0] = f64(u.P95Activity)
	}
	if u.HasFB {
		c[1], c[2] = f64(u.PeakFBMiB), f64(u.P99FBMiB)
	}
	return c
}

// renderCSV writes one row per fleet, team, namespace, model, node, holding
// and recommendation, then coverage, faults and the follow-up of the
// baseline; columns a row does not have are empty. Columns are only ever
// added at the end (cluster, then the follow-up's), so that readers by
// position of the columns before them keep working.
func renderCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	rows := [][]string{csvHeader}
	row := func(section, name, figures, cluster string, t analysis.Totals, u analysis.Usage) []string {
		cells := append(append([]string{section, name, f64(t.GPUHours), f64(t.HeldHours), f64(t.BusyHours), f64(t.IdleHours),
			f64(t.UnallocatedHours), f64(t.BusyShare), f64(t.CostEUR), f64(t.IdleEUR), f64(t.UnallocatedEUR)}, usageCells(u)...),
			make([]string, len(csvHeader)-csvKind)...)
		cells[csvLostHours], cells[csvUnknownHours] = f64(t.LostHours), f64(t.UnknownHours)
		cells[csvLostEUR], cells[csvUnknownEUR] = f64(t.LostEUR), f64(t.UnknownEUR)
		cells[csvFigures], cells[csvCluster] = figures, cluster
		carbonCSV(cells, t)
		rows = append(rows, cells)
		return cells
	}
	row("fleet", "fleet", r.Fleet.Kind, "", r.Fleet.Totals, r.Fleet.Usage)
	for _, s := range []struct {
		name string
		gs   []analysis.Group
	}{{"team", r.Teams}, {"namespace", r.Namespaces}, {"model", r.Models}, {"cluster", r.PerCluster}, {"node", r.Nodes}} {
		for _, g := range s.gs {
			row(s.name, g.Name, g.Kind, g.Cluster, g.Totals, g.Usage)
			ownOrRentCSV(rows[len(rows)-1], g)
		}
	}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		name := h.Name() + "@" + h.UUID
		if h.MIGID != "" {
			name += "/" + h.MIGID
		}
		csvShareCells(row("holding", name, h.Kind, h.Cluster, h.Totals, h.Usage), h)
	}
	month := f64(r.HoursPerMonth)
	headline := make([]string, len(csvHeader))
	headline[0], headline[1], headline[csvKind], headline[csvFigures] = "headline", "fleet", "all advice", r.Kind
	headline[csvFreed], headline[csvReclaimable], headline[csvHoursPerMonth] = f64(r.FreedEURPerMonth), f64(r.ReclaimableEURPerMonth), month
	rows = append(rows, headline)
	for _, rec := range r.Recommendations {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1] = "recommendation", rec.Target
		cells[csvKind], cells[csvFreed], cells[csvReclaimable] = recTitle(rec), f64(rec.FreedEURPerMonth), f64(rec.ReclaimableEURPerMonth)
		cells[csvHoursPerMonth], cells[csvEvidence], cells[csvFigures], cells[csvCluster] = month, rec.Evidence, rec.Figures, rec.Cluster
		rows = append(rows, cells)
	}
	rows = append(rows, carbonIntensityRows(r)...)
	rows = append(rows, csvFaultRows(r)...)
	rows = append(rows, csvFollowUpRows(r)...)
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
