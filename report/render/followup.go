package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/gputally/gputally/report/followup"
)

// The follow-up of the baseline (report/followup) in every format: the
// status and freed EUR of each of its recommendations, the fleet and teams
// before and after, and the kept weeks.

// statusText is a follow-up status for people: "partly applied".
func statusText(s string) string { return strings.ReplaceAll(s, "_", " ") }

// itemTarget names what a followed-up recommendation changed, with its
// cluster.
func itemTarget(it followup.Item) string { return clusterTarget(it.Cluster, it.Target) }

// followUpHeadline says what the baseline is and what its advice promised
// and realized, in one sentence.
func followUpHeadline(r *Report) string {
	c := r.Baseline
	promised, realized := 0.0, 0.0
	count := map[string]int{}
	for _, it := range r.FollowUp {
		promised += it.FreedEURPerMonthPromised
		realized += it.FreedEURPerMonthRealized
		count[it.Status]++
	}
	return fmt.Sprintf("Baseline: %s (%s – %s). Of its %d recommendation(s) %d applied, %d partly applied, %d not applied, %d gone; "+
		"freed %s EUR/month promised, %s EUR/month realized: the measured cost in this period of the whole GPUs the changes left free.",
		c.File, c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339), len(r.FollowUp), count[followup.Applied], count[followup.PartlyApplied],
		count[followup.NotApplied], count[followup.Gone], eur(promised), eur(realized))
}

// beforeAfterCells formats a change's busy share, idle, unallocated and total
// EUR and kgCO2e as "before → after", with the relative change of the EUR
// and the kgCO2e.
func beforeAfterCells(c followup.Change) []string {
	if c.Before == nil || c.After == nil {
		one, when := c.After, "new in this period"
		if one == nil {
			one, when = c.Before, "only in the baseline"
		}
		return []string{pct(one.BusyShare) + " (" + when + ")", eur(one.IdleEUR), eur(one.UnallocatedEUR), eur(one.CostEUR), kgOf(one.KgCO2e)}
	}
	b, a := c.Before, c.After
	moved := func(x, y float64) string { return fmt.Sprintf("%s → %s (%s)", eur(x), eur(y), change(y, x)) }
	return []string{pct(b.BusyShare) + " → " + pct(a.BusyShare), moved(b.IdleEUR, a.IdleEUR), moved(b.UnallocatedEUR, a.UnallocatedEUR),
		moved(b.CostEUR, a.CostEUR), movedKg(b.KgCO2e, a.KgCO2e)}
}

// movedKg formats kgCO2e before and after; a side without a figure (no
// energy readings, no intensity, a baseline written before emissions) is
// "–" and has no relative change.
func movedKg(before, after *float64) string {
	if before == nil || after == nil {
		return kgOf(before) + " → " + kgOf(after)
	}
	return fmt.Sprintf("%s → %s (%s)", kgOf(before), kgOf(after), change(*after, *before))
}

// beforeAfterRows are the fleet's and the teams' before-and-after rows:
// name, then beforeAfterCells.
func beforeAfterRows(c *followup.Comparison) [][]string {
	rows := [][]string{append([]string{"fleet"}, beforeAfterCells(c.Fleet)...)}
	for _, t := range c.Teams {
		rows = append(rows, append([]string{orNone(t.Name)}, beforeAfterCells(t)...))
	}
	return rows
}

// weekName names a kept week: its period's end, and this report's.
func weekName(w followup.Week) string {
	if w.File == "" {
		return "this report, to " + w.End.Format(time.DateOnly)
	}
	return "to " + w.End.Format(time.DateOnly)
}

func mdFollowUp(b *strings.Builder, r *Report) {
	if r.Baseline == nil {
		return
	}
	fmt.Fprintf(b, "## Did the last report's advice pay off?\n\n%s\n\n", mdCell(followUpHeadline(r)))
	for _, n := range r.Baseline.Notes {
		fmt.Fprintf(b, "> note: %s\n\n", mdCell(n))
	}
	if len(r.FollowUp) > 0 {
		b.WriteString("| # | change | target | status | freed EUR/month promised | realized | evidence |\n|---|---|---|---|---:|---:|---|\n")
		for i, it := range r.FollowUp {
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, mdCell(it.Kind), mdCell(itemTarget(it)), statusText(it.Status),
				eur(it.FreedEURPerMonthPromised), eur(it.FreedEURPerMonthRealized), mdCell(it.Evidence))
		}
		b.WriteString("\n")
	}
	b.WriteString("### Before and after\n\n| | busy share | idle EUR (allocated) | unallocated EUR | cost EUR | kgCO2e |\n|---|---:|---:|---:|---:|---:|\n")
	for _, row := range beforeAfterRows(r.Baseline) {
		fmt.Fprintf(b, "| %s |\n", strings.Join(mdCells(row), " | "))
	}
	b.WriteString("\n### Weeks kept\n\n| week | busy share | idle EUR | unallocated EUR | cost EUR | kgCO2e | freed EUR/month advised |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.Baseline.Weeks {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", weekName(w), pct(w.Fleet.BusyShare), eur(w.Fleet.IdleEUR), eur(w.Fleet.UnallocatedEUR),
			eur(w.Fleet.CostEUR), kgOf(w.Fleet.KgCO2e), eur(w.FreedEURPerMonth))
	}
	b.WriteString("\n")
}

// mdCells escapes each cell for a Markdown table.
func mdCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = mdCell(c)
	}
	return out
}

// csvFollowUpRows are the CSV rows of the follow-up: one per followed-up
// recommendation (its status and freed EUR promised and realized in the
// columns of those names), the baseline's fleet and teams (their figures in
// the usual columns, its period in from and to: this report's rows are the
// after) and the kept weeks.
func csvFollowUpRows(r *Report) [][]string {
	c := r.Baseline
	if c == nil {
		return nil
	}
	var rows [][]string
	for _, it := range r.FollowUp {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[csvKind], cells[csvEvidence] = "follow-up", it.Target, it.Kind, it.Evidence
		cells[csvStatus], cells[csvPromised], cells[csvRealized] = it.Status, f64(it.FreedEURPerMonthPromised), f64(it.FreedEURPerMonthRealized)
		cells[csvHoursPerMonth] = f64(r.HoursPerMonth)
		rows = append(rows, withCluster(cells, it.Cluster))
	}
	figures := func(section, name string, f *followup.Figures, from, to time.Time) []string {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[csvHeldHours], cells[csvBusyShare] = section, name, f64(f.HeldHours), f64(f.BusyShare)
		cells[csvCostEUR], cells[csvIdleEUR], cells[csvUnallocatedEUR] = f64(f.CostEUR), f64(f.IdleEUR), f64(f.UnallocatedEUR)
		cells[csvFrom], cells[csvTo] = from.Format(time.RFC3339), to.Format(time.RFC3339)
		cells[csvKgCO2e] = optF64(f.KgCO2e)
		return cells
	}
	rows = append(rows, figures("baseline-fleet", "fleet", c.Fleet.Before, c.Start, c.End))
	for _, t := range c.Teams {
		if t.Before != nil {
			rows = append(rows, figures("baseline-team", t.Name, t.Before, c.Start, c.End))
		}
	}
	for _, w := range c.Weeks {
		cells := figures("week", w.File, &w.Fleet, w.Start, w.End)
		if w.File == "" {
			cells[1] = "this report"
		}
		cells[csvFreed], cells[csvHoursPerMonth] = f64(w.FreedEURPerMonth), f64(r.HoursPerMonth)
		rows = append(rows, cells)
	}
	return rows
}
