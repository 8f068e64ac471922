package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// Render writes r in format (FormatHTML, FormatMarkdown, FormatCSV or FormatJSON).
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case FormatHTML:
		return renderHTML(w, r)
	case FormatMarkdown:
		return renderMarkdown(w, r)
	case FormatCSV:
		return renderCSV(w, r)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return fmt.Errorf("format %q: want html, md, csv or json", format)
}

func eur(x float64) string   { return strconv.FormatFloat(x, 'f', 2, 64) }
func hours(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

func mib(has bool, x float64) string {
	if !has {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func activity(u analysis.Usage) string {
	if !u.HasActivity {
		return "–"
	}
	return pct(u.P95Activity)
}

// change formats the relative change from prev to cur.
func change(cur, prev float64) string {
	switch {
	case prev == 0 && cur == 0:
		return "±0 %"
	case prev == 0:
		return "new"
	}
	return fmt.Sprintf("%+.1f %%", 100*(cur-prev)/prev)
}

func period(r *Report) string {
	return r.Start.Format(time.RFC3339) + " – " + r.End.Format(time.RFC3339)
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func renderMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# GPU utilization and cost report\n\n%s (steps of %s) · source: %s\n\n", period(r), r.Step, mdCell(r.Source))
	if r.Partial {
		fmt.Fprintf(&b, "**PARTIAL REPORT: %s of the device-hours are missing or unknown (more than %s); see Coverage.**\n\n",
			hours(r.Coverage.MissingHours+r.Coverage.UnknownHours), pct(analysis.PartialAbove))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "> warning: %s\n", mdCell(w))
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
	}
	f := r.Fleet.Totals
	fmt.Fprintf(&b, "## Fleet\n\n%d GPUs, %s device-hours: %s busy, %s idle but allocated, %s unallocated, %s lost (broken GPUs), %s unknown. Busy share of held time %s.\n\n",
		r.GPUs, hours(f.GPUHours), hours(f.BusyHours), hours(f.IdleHours), hours(f.UnallocatedHours), hours(f.LostHours), hours(f.UnknownHours), pct(f.BusyShare))
	fmt.Fprintf(&b, "Cost %s EUR: busy %s, **idle %s** (allocated), **unallocated %s**, lost %s, unknown %s. p95 activity %s, framebuffer peak %s MiB, p99 %s MiB.\n\n",
		eur(f.CostEUR), eur(f.BusyEUR), eur(f.IdleEUR), eur(f.UnallocatedEUR), eur(f.LostEUR), eur(f.UnknownEUR), activity(r.Fleet.Usage),
		mib(r.Fleet.Usage.HasFB, r.Fleet.Usage.PeakFBMiB), mib(r.Fleet.Usage.HasFB, r.Fleet.Usage.P99FBMiB))
	if p := r.Fleet.Previous; p != nil {
		fmt.Fprintf(&b, "Against the previous period: cost %s, idle EUR %s, unallocated EUR %s, busy share %s → %s.\n\n",
			change(f.CostEUR, p.CostEUR), change(f.IdleEUR, p.IdleEUR), change(f.UnallocatedEUR, p.UnallocatedEUR), pct(p.BusyShare), pct(f.BusyShare))
	}
	mdCoverage(&b, r)
	if len(r.BrokenGPUs) > 0 {
		b.WriteString("## Broken hardware\n\n")
		for _, g := range r.BrokenGPUs {
			fmt.Fprintf(&b, "- %s (%s, lost since %s, %s device-hours%s)\n", mdCell(g.Advice()), mdCell(g.Model),
				g.Since.Format(time.RFC3339), hours(g.LostHours), mdCell(heldBy(g.Holdings)))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Recommendations: %s EUR/month freed\n\n%s\n\n", eur(r.FreedEURPerMonth), savingsNote(r))
	if len(r.Recommendations) == 0 {
		b.WriteString("None: every GPU held was busy enough and no smaller MIG profile fits.\n\n")
	} else {
		b.WriteString("| # | change | target | nodes | freed EUR/month | reclaimable EUR/month | evidence |\n|---|---|---|---|---:|---:|---|\n")
		for i, rec := range r.Recommendations {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, mdCell(recTitle(rec)), mdCell(rec.Target), mdCell(strings.Join(rec.Nodes, ", ")),
				eur(rec.FreedEURPerMonth), eur(rec.ReclaimableEURPerMonth), mdCell(rec.Evidence))
		}
		b.WriteString("\n")
	}
	for _, p := range r.Packing {
		fmt.Fprintf(&b, "MIG packing on %s: %d workload(s) on %d whole GPU(s) today fit on %d GPU(s): %s.\n\n",
			p.Model, p.Workloads, p.Workloads, p.GPUsAfter, layoutsText(p.Layouts))
	}
	mdGroups(&b, "Teams", r.Teams, r.Fleet.Previous != nil, false)
	mdGroups(&b, "Namespaces", r.Namespaces, r.Fleet.Previous != nil, false)
	mdGroups(&b, "GPU models", r.Models, r.Fleet.Previous != nil, true)
	mdGroups(&b, "Nodes", r.Nodes, r.Fleet.Previous != nil, true)
	if r.Apply.Any() {
		b.WriteString("## Configuration to apply\n\n")
		for _, c := range []struct {
			title, yaml      string
			labels, warnings []string
		}{
			{"MIG layout (nvidia mig-parted config, one per node)", r.Apply.MIGParted, r.Apply.MIGPartedLabels, nil},
			{"Time-slicing (NVIDIA device plugin ConfigMap, one key per node class)", r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels, r.Apply.TimeSlicingSharing},
			{"Kueue (v1beta2: ResourceFlavor, ClusterQueue per team, LocalQueue per namespace)", r.Apply.Kueue, nil, nil},
		} {
			if c.yaml != "" {
				fmt.Fprintf(&b, "### %s\n\n```yaml\n%s```\n\n", c.title, c.yaml)
			}
			if len(c.labels) > 0 {
				fmt.Fprintf(&b, "Select it per node:\n\n```sh\n%s\n```\n\n", strings.Join(c.labels, "\n"))
			}
			for _, s := range c.warnings {
				fmt.Fprintf(&b, "> **warning:** %s.\n\n", mdCell(s))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// savingsNote says what the headline counts and the month it is scaled to.
func savingsNote(r *Report) string {
	return fmt.Sprintf("Freed: the measured cost of the whole GPUs the advice makes free, each GPU counted once, per month of %s h (the calendar average, 365.25 × 24 ÷ 12). "+
		"Reclaimable, not in the headline: %s EUR/month of capacity freed on GPUs that stay in use (released MIG instances or replicas, unused parts of MIG layouts). See docs/report.md.",
		strconv.FormatFloat(r.HoursPerMonth, 'f', -1, 64), eur(r.ReclaimableEURPerMonth))
}

func recTitle(rec advice.Recommendation) string {
	switch rec.Kind {
	case "mig":
		return "MIG " + rec.Profile
	case "time-slicing":
		return fmt.Sprintf("time-slicing ×%d", rec.Replicas)
	}
	return rec.Kind
}

func layoutsText(ls [][]string) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = strings.Join(l, " + ")
	}
	return strings.Join(parts, "; ")
}

func mdGroups(b *strings.Builder, title string, gs []analysis.Group, prev, unalloc bool) {
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n| name | GPU-hours held | busy share | cost EUR | idle EUR | unknown EUR |", title)
	sep := "|---|---:|---:|---:|---:|---:|"
	if unalloc {
		b.WriteString(" unallocated EUR | lost EUR |")
		sep += "---:|---:|"
	}
	b.WriteString(" p95 activity | peak FB MiB | p99 FB MiB |")
	sep += "---:|---:|---:|"
	if prev {
		b.WriteString(" held vs prev | idle EUR vs prev |")
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, g := range gs {
		t := g.Totals
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |", mdCell(orNone(g.Name)), hours(t.HeldHours), pct(t.BusyShare), eur(t.CostEUR), eur(t.IdleEUR), eur(t.UnknownEUR))
		if unalloc {
			fmt.Fprintf(b, " %s | %s |", eur(t.UnallocatedEUR), eur(t.LostEUR))
		}
		fmt.Fprintf(b, " %s | %s | %s |", activity(g.Usage), mib(g.Usage.HasFB, g.Usage.PeakFBMiB), mib(g.Usage.HasFB, g.Usage.P99FBMiB))
		if prev && g.Previous != nil {
			fmt.Fprintf(b, " %s | %s |", change(t.HeldHours, g.Previous.HeldHours), change(t.IdleEUR, g.Previous.IdleEUR))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

var csvHeader = []string{"section", "name", "gpu_hours", "held_hours", "busy_hours", "idle_hours", "unallocated_hours",
	"busy_share", "cost_eur", "idle_eur", "unallocated_eur", "p95_activity", "peak_fb_mib", "p99_fb_mib",
	"kind", "freed_eur_per_month", "reclaimable_eur_per_month", "hours_per_month", "evidence",
	"lost_hours", "unknown_hours", "lost_eur", "unknown_eur", "coverage", "missing_hours", "from", "to"}

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
)

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
// and recommendation; columns a row does not have are empty.
func renderCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	rows := [][]string{csvHeader}
	row := func(section, name string, t analysis.Totals, u analysis.Usage) {
		cells := append(append([]string{section, name, f64(t.GPUHours), f64(t.HeldHours), f64(t.BusyHours), f64(t.IdleHours),
			f64(t.UnallocatedHours), f64(t.BusyShare), f64(t.CostEUR), f64(t.IdleEUR), f64(t.UnallocatedEUR)}, usageCells(u)...),
			make([]string, len(csvHeader)-csvKind)...)
		cells[csvLostHours], cells[csvUnknownHours] = f64(t.LostHours), f64(t.UnknownHours)
		cells[csvLostEUR], cells[csvUnknownEUR] = f64(t.LostEUR), f64(t.UnknownEUR)
		rows = append(rows, cells)
	}
	row("fleet", "fleet", r.Fleet.Totals, r.Fleet.Usage)
	for _, s := range []struct {
		name string
		gs   []analysis.Group
	}{{"team", r.Teams}, {"namespace", r.Namespaces}, {"model", r.Models}, {"node", r.Nodes}} {
		for _, g := range s.gs {
			row(s.name, g.Name, g.Totals, g.Usage)
		}
	}
	for _, h := range r.Holdings {
		name := h.Name() + "@" + h.UUID
		if h.MIGID != "" {
			name += "/" + h.MIGID
		}
		row("holding", name, h.Totals, h.Usage)
	}
	month := f64(r.HoursPerMonth)
	headline := make([]string, len(csvHeader))
	headline[0], headline[1], headline[csvKind] = "headline", "fleet", "all advice"
	headline[csvFreed], headline[csvReclaimable], headline[csvHoursPerMonth] = f64(r.FreedEURPerMonth), f64(r.ReclaimableEURPerMonth), month
	rows = append(rows, headline)
	for _, rec := range r.Recommendations {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1] = "recommendation", rec.Target
		cells[csvKind], cells[csvFreed], cells[csvReclaimable] = recTitle(rec), f64(rec.FreedEURPerMonth), f64(rec.ReclaimableEURPerMonth)
		cells[csvHoursPerMonth], cells[csvEvidence] = month, rec.Evidence
		rows = append(rows, cells)
	}
	rows = append(rows, csvFaultRows(r)...)
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func pct(x float64) string { return model.FormatPct(x) }
