package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

func renderMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# GPU utilization and cost report\n\n%s (steps of %s) · source: %s · figures: %s\n\n", period(r), r.Step, mdCell(r.Source), mdCell(r.Kind))
	if r.Sampling != "" {
		fmt.Fprintf(&b, "%s\n\n", mdCell(r.Sampling))
	}
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
	fmt.Fprintf(&b, "%s\n\n", mdCell(carbonLine(r)))
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
	mdWaiting(&b, r)
	mdFollowUp(&b, r)
	fmt.Fprintf(&b, "## Recommendations: %s EUR/month freed\n\n%s\n\n", eur(r.FreedEURPerMonth), savingsNote(r))
	if len(r.Recommendations) == 0 {
		b.WriteString("None: every GPU held was busy enough and no smaller MIG profile fits.\n\n")
	} else {
		b.WriteString("| # | change | target | nodes | freed EUR/month | reclaimable EUR/month | evidence |\n|---|---|---|---|---:|---:|---|\n")
		for i, rec := range r.Recommendations {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, mdCell(recTitle(rec)), mdCell(recTarget(rec)), mdCell(recNodes(rec)),
				eur(rec.FreedEURPerMonth), eur(rec.ReclaimableEURPerMonth), mdCell(rec.Evidence))
		}
		b.WriteString("\n")
	}
	for _, p := range r.Packing {
		fmt.Fprintf(&b, "MIG packing on %s%s: %d workload(s) on %d whole GPU(s) today fit on %d GPU(s): %s.\n\n",
			p.Model, inCluster(p.Cluster), p.Workloads, p.Workloads, p.GPUsAfter, layoutsText(p.Layouts))
	}
	mdOwnOrRent(&b, r)
	mdGroups(&b, "Teams", r.Teams, r.Fleet.Previous != nil, false)
	mdGroups(&b, "Namespaces", r.Namespaces, r.Fleet.Previous != nil, false)
	mdGroups(&b, "GPU models", r.Models, r.Fleet.Previous != nil, true)
	mdGroups(&b, "Clusters", r.PerCluster, r.Fleet.Previous != nil, true)
	mdGroups(&b, "Nodes", r.Nodes, r.Fleet.Previous != nil, true)
	mdShares(&b, r)
	mdApply(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdApply writes the configuration to apply, when there is any: per
// cluster, for a fleet in several.
func mdApply(b *strings.Builder, r *Report) {
	if !r.Apply.Any() {
		return
	}
	b.WriteString("## Configuration to apply\n\n")
	for _, a := range r.Apply.PerCluster() {
		mdApplyOne(b, &a, len(r.Apply.Clusters) > 0)
	}
}

// mdApplyOne writes one cluster's configuration; apart, under a heading of
// the cluster's own.
func mdApplyOne(b *strings.Builder, a *advice.Apply, apart bool) {
	level := "###"
	if apart {
		fmt.Fprintf(b, "### Cluster %s\n\n", mdCell(clusterTitle(a.Cluster)))
		level = "####"
	}
	for _, c := range []struct {
		title, yaml      string
		labels, warnings []string
	}{
		{"MIG layout (nvidia mig-parted config, one per node)", a.MIGParted, a.MIGPartedLabels, nil},
		{"Time-slicing (NVIDIA device plugin ConfigMap, one key per node class)", a.TimeSlicing, a.TimeSlicingLabels, a.TimeSlicingSharing},
		{"Kueue (v1beta2: ResourceFlavor, ClusterQueue per team, LocalQueue per namespace)", a.Kueue, nil, nil},
		{volcanoTitle, a.Volcano, nil, nil},
		{schedulerTitle, a.SchedulerConfig, nil, nil},
	} {
		if c.yaml != "" {
			fmt.Fprintf(b, "%s %s\n\n```yaml\n%s```\n\n", level, c.title, c.yaml)
		}
		if len(c.labels) > 0 {
			fmt.Fprintf(b, "Select it per node:\n\n```sh\n%s\n```\n\n", strings.Join(c.labels, "\n"))
		}
		for _, s := range c.warnings {
			fmt.Fprintf(b, "> **warning:** %s.\n\n", mdCell(s))
		}
	}
}

// savingsNote says what the headline counts and the month it is scaled to.
func savingsNote(r *Report) string {
	return fmt.Sprintf("Freed: the measured cost of the whole GPUs the advice makes free, each GPU counted once, per month of %s h (the calendar average, 365.25 × 24 ÷ 12). "+
		"Reclaimable, not in the headline: %s EUR/month of capacity freed on GPUs that stay in use (released MIG instances, replicas or GPU shares, unused parts of MIG layouts). See docs/report.md.",
		strconv.FormatFloat(r.HoursPerMonth, 'f', -1, 64), eur(r.ReclaimableEURPerMonth))
}

// recTarget names what a recommendation changes, with its cluster.
func recTarget(rec advice.Recommendation) string { return clusterTarget(rec.Cluster, rec.Target) }

// clusterTarget names a target in its cluster: "cluster: target", or the
// target alone without one.
func clusterTarget(cluster, target string) string {
	if cluster == "" {
		return target
	}
	return cluster + ": " + target
}

// recNodes names the nodes a recommendation is applied to (model.NodeName).
func recNodes(rec advice.Recommendation) string {
	names := make([]string, len(rec.Nodes))
	for i, n := range rec.Nodes {
		names[i] = model.NodeName(rec.Cluster, n)
	}
	return strings.Join(names, ", ")
}

// clusterTitle names cluster c in a heading: the devices without a cluster
// label among others with one are "(no cluster label)".
func clusterTitle(c string) string {
	if c == "" {
		return "(no cluster label)"
	}
	return c
}

// inCluster is " in cluster c", or "" without one.
func inCluster(c string) string {
	if c == "" {
		return ""
	}
	return " in cluster " + c
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
	fmt.Fprintf(b, "## %s\n\n| name | figures | GPU-hours held | busy share | cost EUR | idle EUR | unknown EUR |", title)
	sep := "|---|---|---:|---:|---:|---:|---:|"
	if unalloc {
		b.WriteString(" unallocated EUR | lost EUR |")
		sep += "---:|---:|"
	}
	b.WriteString(" kWh | kgCO2e | idle kgCO2e | p95 activity | peak FB MiB | p99 FB MiB |")
	sep += "---:|---:|---:|---:|---:|---:|"
	if prev {
		b.WriteString(" held vs prev | idle EUR vs prev |")
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, g := range gs {
		t := g.Totals
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |", mdCell(orNone(g.Place())), mdCell(g.Kind), hours(t.HeldHours), pct(t.BusyShare), eur(t.CostEUR), eur(t.IdleEUR), eur(t.UnknownEUR))
		if unalloc {
			fmt.Fprintf(b, " %s | %s |", eur(t.UnallocatedEUR), eur(t.LostEUR))
		}
		fmt.Fprintf(b, " %s |", strings.Join(mdCells(carbonCells(t)), " | "))
		fmt.Fprintf(b, " %s | %s | %s |", activity(g.Usage), mib(g.Usage.HasFB, g.Usage.PeakFBMiB), mib(g.Usage.HasFB, g.Usage.P99FBMiB))
		if prev && g.Previous != nil {
			fmt.Fprintf(b, " %s | %s |", change(t.HeldHours, g.Previous.HeldHours), change(t.IdleEUR, g.Previous.IdleEUR))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
