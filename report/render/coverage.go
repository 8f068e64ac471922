package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/gputally/gputally/report/analysis"
)

// heldBy names the holdings of a broken GPU in a clause; "" when none.
func heldBy(holdings []string) string {
	if len(holdings) == 0 {
		return ""
	}
	return "; held by " + strings.Join(holdings, ", ")
}

// gapsTitle heads the list of gaps.
const gapsTitle = "Gaps: no data (missing), or no sample between two (unknown: the time of the GPU's holders before it)"

// gapHolders names whose unknown time a gap is; "" for none.
func gapHolders(g analysis.Gap) string { return strings.Join(g.Holders, ", ") }

// heldByGap says whose unknown time a gap is, in a clause; "" for none.
func heldByGap(g analysis.Gap) string {
	if len(g.Holders) == 0 {
		return ""
	}
	return "held by " + gapHolders(g)
}

// uncovered returns the GPUs with missing or unknown time: the rest were
// fully covered, which the renderers say in one line.
func uncovered(c *analysis.Coverage) []analysis.GPUCoverage {
	var out []analysis.GPUCoverage
	for _, g := range c.GPUs {
		if g.MissingHours > 0 || g.UnknownHours > 0 {
			out = append(out, g)
		}
	}
	return out
}

// coverageLine says the fleet's coverage in one sentence.
func coverageLine(c *analysis.Coverage) string {
	return fmt.Sprintf("%s of %s device-hours seen (%d GPUs over the range); %s device-hours missing (no data), %s unknown (holder or activity not measured).",
		pct(c.Ratio), hours(c.ExpectedHours), len(c.GPUs), hours(c.MissingHours), hours(c.UnknownHours))
}

func mdCoverage(b *strings.Builder, r *Report) {
	c := &r.Coverage
	fmt.Fprintf(b, "## Coverage\n\n%s\n\n", coverageLine(c))
	if len(c.Nodes) > 0 {
		b.WriteString("| node | GPUs | coverage | missing device-hours | unknown device-hours |\n|---|---:|---:|---:|---:|\n")
		for _, n := range c.Nodes {
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", mdCell(orNone(n.Place())), n.GPUs, pct(n.Ratio), hours(n.MissingHours), hours(n.UnknownHours))
		}
		b.WriteString("\n")
	}
	if u := uncovered(c); len(u) > 0 {
		b.WriteString("GPUs not fully covered (every other GPU was):\n\n| node | GPU | UUID | coverage | missing device-hours | unknown device-hours |\n|---|---|---|---:|---:|---:|\n")
		for _, g := range u {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(orNone(g.Place())), mdCell(g.GPU), mdCell(g.UUID), pct(g.Ratio), hours(g.MissingHours), hours(g.UnknownHours))
		}
		b.WriteString("\n")
	}
	if len(c.Gaps) > 0 {
		b.WriteString(gapsTitle + ":\n\n| node | GPU | UUID | held by | from | to | device-hours | counted as |\n|---|---|---|---|---|---|---:|---|\n")
		for _, g := range c.Gaps {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(orNone(g.Place())), mdCell(g.GPU), mdCell(g.UUID), mdCell(gapHolders(g)),
				g.From.Format(time.RFC3339), g.To.Format(time.RFC3339), hours(g.Hours), g.Kind)
		}
		b.WriteString("\n")
	}
}

// csvFaultRows are the CSV rows of the coverage (fleet, nodes, GPUs), the gaps
// and the broken GPUs. The fleet's coverage row says partial or complete in
// the evidence column.
func csvFaultRows(r *Report) [][]string {
	c := &r.Coverage
	var rows [][]string
	row := func(section, name string, o analysis.CoverageOf) []string {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[2] = section, name, f64(o.SeenHours)
		cells[csvUnknownHours], cells[csvCoverage], cells[csvMissingHours] = f64(o.UnknownHours), f64(o.Ratio), f64(o.MissingHours)
		return cells
	}
	fleet := row("coverage", "fleet", analysis.CoverageOf{Ratio: c.Ratio, ExpectedHours: c.ExpectedHours, SeenHours: c.SeenHours, MissingHours: c.MissingHours, UnknownHours: c.UnknownHours})
	fleet[csvEvidence] = "complete"
	if r.Partial {
		fleet[csvEvidence] = "partial"
	}
	rows = append(rows, fleet)
	for _, n := range c.Nodes {
		rows = append(rows, withCluster(row("coverage-node", n.Node, n.CoverageOf), n.Cluster))
	}
	for _, g := range c.GPUs {
		rows = append(rows, withCluster(row("coverage-gpu", g.Node+"/"+g.GPU+"@"+g.UUID, g.CoverageOf), g.Cluster))
	}
	for _, g := range c.Gaps {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1] = "gap", g.Node+"/"+g.GPU+"@"+g.UUID
		hoursCell := csvMissingHours
		if g.Kind == analysis.GapUnknown {
			hoursCell = csvUnknownHours
		}
		cells[hoursCell], cells[csvFrom], cells[csvTo] = f64(g.Hours), g.From.Format(time.RFC3339), g.To.Format(time.RFC3339)
		cells[csvKind], cells[csvEvidence] = g.Kind, heldByGap(g)
		rows = append(rows, withCluster(cells, g.Cluster))
	}
	for _, g := range r.BrokenGPUs {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1] = "broken-gpu", g.Node+"/"+g.GPU+"@"+g.UUID
		cells[csvKind], cells[csvEvidence] = "repair", g.Advice()+heldBy(g.Holdings)
		cells[csvLostHours], cells[csvLostEUR], cells[csvFrom] = f64(g.LostHours), f64(g.LostEUR), g.Since.Format(time.RFC3339)
		rows = append(rows, withCluster(cells, g.Cluster))
	}
	return rows
}
