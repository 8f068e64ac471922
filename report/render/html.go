package render

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
)

// The HTML report is one self-contained file: inline CSS and SVG, no
// JavaScript, no external resources.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"eur": eur, "hours": hours, "pct": pct, "activity": activity, "mib": mib, "change": change,
	"rectitle": recTitle, "inc": func(i int) int { return i + 1 }, "orNone": orNone, "layouts": layoutsText,
	"join": func(s []string) string { return strings.Join(s, ", ") }, "join_lines": func(s []string) string { return strings.Join(s, "\n") },
	"rfc3339": func(t time.Time) string { return t.Format(time.RFC3339) }, "heldBy": heldBy, "coverageLine": coverageLine, "gapHolders": gapHolders, "gapsTitle": func() string { return gapsTitle },
	"rectarget": recTarget, "clustertitle": clusterTitle, "recnodes": recNodes, "incluster": inCluster,
	"itemtarget": itemTarget, "status": statusText, "kgOf": kgOf, "kWhOf": kWhOf, "unit": withUnit, "carbonLine": carbonLine, "ownOrRentLine": ownOrRentLine,
	"volcanoTitle": func() string { return volcanoTitle }, "schedulerTitle": func() string { return schedulerTitle },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPU report {{.Period}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1d232b;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #d8dde3;padding-bottom:.2rem}
.sub{color:#5b6571}.partial{background:#fff3cd;border:1px solid #e0b000;padding:.6rem;margin:1rem 0;font-weight:bold}
.warn{color:#8a5a00}.kpis{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}
.kpi{border:1px solid #d8dde3;border-radius:6px;padding:.6rem 1rem;min-width:9rem}.kpi b{display:block;font-size:1.3rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;font-size:.9rem}th,td{border-bottom:1px solid #e6e9ed;padding:.3rem .5rem;text-align:right;vertical-align:top}
th:first-child,td:first-child,td.l,th.l{text-align:left}th{background:#f4f6f8}
pre{background:#f4f6f8;padding:.8rem;overflow-x:auto;font-size:.85rem}svg{max-width:100%;height:auto}
svg text{font-size:11px;fill:#1d232b}.break-even{stroke:#b71c1c}.busy{fill:#2e7d32}.idle{fill:#e65100}.unallocated{fill:#9e9e9e}.lost{fill:#b71c1c}.unknown{fill:#7e57c2}.bar{fill:#e65100}
.waiting{fill:#1565c0}.fragmented{fill:#ad1457}.held-line{stroke:#e65100;stroke-width:2}.busy-line{stroke:#2e7d32;stroke-width:2}rect.held-line{fill:#e65100}rect.busy-line{fill:#2e7d32}
</style>
</head>
<body>
<h1>GPU utilization and cost report</h1>
<p class="sub">{{.Period}} · steps of {{.R.Step}} · source: {{.R.Source}} · figures: <span id="kind">{{.R.Kind}}</span></p>
{{with .R.Sampling}}<p class="sub" id="sampling">{{.}}</p>{{end}}
{{if .R.Partial}}<p class="partial" id="partial">Partial report: {{hours .Missing}} of the device-hours are missing or unknown (more than {{pct .PartialAbove}}); see Coverage.</p>{{end}}
{{range .R.Warnings}}<p class="warn">warning: {{.}}</p>{{end}}
{{with .R.Fleet}}<div class="kpis">
<div class="kpi">GPUs<b>{{$.R.GPUs}}</b></div>
<div class="kpi">device-hours<b>{{hours .Totals.GPUHours}}</b></div>
<div class="kpi">busy share of held<b>{{pct .Totals.BusyShare}}</b></div>
<div class="kpi">cost<b>{{eur .Totals.CostEUR}} EUR</b></div>
<div class="kpi">idle, allocated<b>{{eur .Totals.IdleEUR}} EUR</b></div>
<div class="kpi">unallocated<b>{{eur .Totals.UnallocatedEUR}} EUR</b></div>
<div class="kpi">lost (broken GPUs)<b>{{eur .Totals.LostEUR}} EUR</b></div>
<div class="kpi">unknown<b>{{eur .Totals.UnknownEUR}} EUR</b></div>
<div class="kpi">energy<b>{{unit (kWhOf .Totals) "kWh"}}</b></div>
<div class="kpi">emissions<b id="kgco2e">{{unit (kgOf .Totals.KgCO2e) "kgCO2e"}}</b></div>
<div class="kpi">emitted while held idle<b>{{unit (kgOf .Totals.IdleKgCO2e) "kgCO2e"}}</b></div>
<div class="kpi">coverage<b>{{pct $.R.Coverage.Ratio}}</b></div>
<div class="kpi">freed if all advice is applied<b id="freed">{{eur $.R.FreedEURPerMonth}} EUR/month</b></div>
<div class="kpi">reclaimable capacity<b>{{eur $.R.ReclaimableEURPerMonth}} EUR/month</b></div>
</div>
<p>p95 activity {{activity .Usage}}, framebuffer peak {{mib .Usage.HasFB .Usage.PeakFBMiB}} MiB, p99 {{mib .Usage.HasFB .Usage.P99FBMiB}} MiB.
{{with .Previous}}Against the previous period: cost {{change $.R.Fleet.Totals.CostEUR .CostEUR}}, idle EUR {{change $.R.Fleet.Totals.IdleEUR .IdleEUR}}, unallocated EUR {{change $.R.Fleet.Totals.UnallocatedEUR .UnallocatedEUR}}.{{end}}</p>
<p id="carbon">{{carbonLine $.R}}</p>{{end}}

<h2>Coverage</h2>
{{with .R.Coverage}}<p id="coverage">{{coverageLine .}}</p>
{{if .Nodes}}<table id="coverage-nodes"><tr><th class="l">node</th><th>GPUs</th><th>coverage</th><th>missing device-hours</th><th>unknown device-hours</th></tr>
{{range .Nodes}}<tr><td>{{orNone .Place}}</td><td>{{.GPUs}}</td><td>{{pct .Ratio}}</td><td>{{hours .MissingHours}}</td><td>{{hours .UnknownHours}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Uncovered}}<p>GPUs not fully covered (every other GPU was):</p>
<table id="coverage-gpus"><tr><th class="l">node</th><th class="l">GPU</th><th class="l">UUID</th><th>coverage</th><th>missing device-hours</th><th>unknown device-hours</th></tr>
{{range .}}<tr><td>{{orNone .Place}}</td><td class="l">{{.GPU}}</td><td class="l">{{.UUID}}</td><td>{{pct .Ratio}}</td><td>{{hours .MissingHours}}</td><td>{{hours .UnknownHours}}</td></tr>
{{end}}</table>{{end}}
{{with .R.Coverage.Gaps}}<p>{{gapsTitle}}:</p>
<table id="gaps"><tr><th class="l">node</th><th class="l">GPU</th><th class="l">UUID</th><th class="l">held by</th><th class="l">from</th><th class="l">to</th><th>device-hours</th><th class="l">counted as</th></tr>
{{range .}}<tr><td>{{orNone .Place}}</td><td class="l">{{.GPU}}</td><td class="l">{{.UUID}}</td><td class="l">{{gapHolders .}}</td><td class="l">{{rfc3339 .From}}</td><td class="l">{{rfc3339 .To}}</td><td>{{hours .Hours}}</td><td class="l">{{.Kind}}</td></tr>
{{end}}</table>{{end}}
{{with .R.BrokenGPUs}}<h2>Broken hardware</h2>
<ul id="broken-gpus">{{range .}}<li>{{.Advice}} ({{.Model}}, lost since {{rfc3339 .Since}}, {{hours .LostHours}} device-hours{{heldBy .Holdings}})</li>
{{end}}</ul>{{end}}

{{.Waiting}}
{{with .R.Baseline}}<h2 id="follow-up">Did the last report's advice pay off?</h2>
<p>{{$.FollowUpHeadline}}</p>
{{range .Notes}}<p class="sub">note: {{.}}</p>
{{end}}{{if $.R.FollowUp}}<table id="follow-up-items"><tr><th>#</th><th class="l">change</th><th class="l">target</th><th class="l">status</th><th>freed EUR/month promised</th><th>realized</th><th class="l">evidence</th></tr>
{{range $i, $it := $.R.FollowUp}}<tr><td>{{inc $i}}</td><td class="l">{{$it.Kind}}</td><td class="l">{{itemtarget $it}}</td><td class="l status">{{status $it.Status}}</td><td>{{eur $it.FreedEURPerMonthPromised}}</td><td>{{eur $it.FreedEURPerMonthRealized}}</td><td class="l">{{$it.Evidence}}</td></tr>
{{end}}</table>{{end}}
<h3>Before and after</h3>
<table id="before-after"><tr><th class="l">name</th><th>busy share</th><th>idle EUR (allocated)</th><th>unallocated EUR</th><th>cost EUR</th><th>kgCO2e</th></tr>
{{range $.BeforeAfter}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<h3>Weeks kept: idle and unallocated EUR</h3>
{{$.Weeks}}{{end}}

<h2>Recommendations</h2>
<p>{{.SavingsNote}}</p>
{{if .R.Recommendations}}<table id="recommendations"><tr><th>#</th><th class="l">change</th><th class="l">target</th><th class="l">nodes</th><th>freed EUR/month</th><th>reclaimable EUR/month</th><th class="l">evidence</th></tr>
{{range $i, $r := .R.Recommendations}}<tr><td>{{inc $i}}</td><td class="l">{{rectitle $r}}</td><td class="l">{{rectarget $r}}</td><td class="l">{{recnodes $r}}</td><td>{{eur $r.FreedEURPerMonth}}</td><td>{{eur $r.ReclaimableEURPerMonth}}</td><td class="l">{{$r.Evidence}}</td></tr>
{{end}}</table>{{else}}<p>None: every GPU held was busy enough and no smaller MIG profile fits.</p>{{end}}
{{range .R.Packing}}<p>MIG packing on {{.Model}}{{incluster .Cluster}}: {{.Workloads}} workload(s) on {{.Workloads}} whole GPU(s) today fit on {{.GPUsAfter}} GPU(s): {{layouts .Layouts}}.</p>{{end}}

{{with .OwnOrRent}}<h2>Own or rent</h2>
<ul id="own-or-rent">{{range .}}<li>{{ownOrRentLine .}}</li>
{{end}}</ul>
{{$.OwnOrRentChart}}
<p class="sub">{{$.OwnOrRentNote}}</p>
<table id="own-or-rent-table"><tr>{{range $.OwnOrRentHeader}}<th>{{.}}</th>{{end}}</tr>
{{range $.OwnOrRentRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}

<h2>Idle EUR by namespace</h2>
{{.IdleChart}}
<h2>Activity by hour of week (UTC)</h2>
{{.Heatmap}}
<h2>Busy, idle, unallocated, lost and unknown over the range</h2>
{{.Timeline}}

{{range .Tables}}<h2>{{.Title}}</h2>
<table><tr><th class="l">name</th><th class="l">figures</th><th>GPU-hours held</th><th>busy share</th><th>cost EUR</th><th>idle EUR</th><th>unknown EUR</th>{{if .Unalloc}}<th>unallocated EUR</th><th>lost EUR</th>{{end}}<th>kWh</th><th>kgCO2e</th><th>idle kgCO2e</th><th>p95 activity</th><th>peak FB MiB</th><th>p99 FB MiB</th>{{if .Prev}}<th>held vs prev</th><th>idle EUR vs prev</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
{{with .Shares}}<h2>{{$.SharesTitle}}</h2>
<p>{{$.SharesNote}}</p>
<table><tr>{{range $i, $h := $.SharesHeader}}<th{{if lt $i 4}} class="l"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .ApplyAny}}<h2>Configuration to apply</h2>
{{range .Applies}}{{if $.ApplyApart}}<h3>Cluster {{clustertitle .Cluster}}</h3>
{{end}}{{with .MIGParted}}<h3>MIG layout (nvidia mig-parted config, one per node)</h3><pre>{{.}}</pre>{{end}}
{{with .MIGPartedLabels}}<p>Select it per node:</p><pre>{{join_lines .}}</pre>{{end}}
{{with .TimeSlicing}}<h3>Time-slicing (NVIDIA device plugin ConfigMap, one key per node class)</h3><pre>{{.}}</pre>{{end}}
{{with .TimeSlicingLabels}}<p>Select it per node:</p><pre>{{join_lines .}}</pre>{{end}}
{{range .TimeSlicingSharing}}<p class="warning">Warning: {{.}}.</p>{{end}}
{{with .Kueue}}<h3>Kueue (v1beta2: ResourceFlavor, ClusterQueue per team, LocalQueue per namespace)</h3><pre>{{.}}</pre>{{end}}
{{with .Volcano}}<h3>{{volcanoTitle}}</h3><pre>{{.}}</pre>{{end}}
{{with .SchedulerConfig}}<h3>{{schedulerTitle}}</h3><pre>{{.}}</pre>{{end}}{{end}}{{end}}
</body>
</html>
`))

type htmlTable struct {
	Title         string
	Unalloc, Prev bool
	Rows          [][]string
}

func groupRows(gs []analysis.Group, unalloc, prev bool) [][]string {
	rows := make([][]string, 0, len(gs))
	for _, g := range gs {
		t := g.Totals
		row := []string{orNone(g.Place()), g.Kind, hours(t.HeldHours), pct(t.BusyShare), eur(t.CostEUR), eur(t.IdleEUR), eur(t.UnknownEUR)}
		if unalloc {
			row = append(row, eur(t.UnallocatedEUR), eur(t.LostEUR))
		}
		row = append(row, carbonCells(t)...)
		row = append(row, activity(g.Usage), mib(g.Usage.HasFB, g.Usage.PeakFBMiB), mib(g.Usage.HasFB, g.Usage.P99FBMiB))
		if prev && g.Previous != nil {
			row = append(row, change(t.HeldHours, g.Previous.HeldHours), change(t.IdleEUR, g.Previous.IdleEUR))
		}
		rows = append(rows, row)
	}
	return rows
}

func renderHTML(w io.Writer, r *Report) error {
	prev := r.Fleet.Previous != nil
	var tables []htmlTable
	for _, t := range []struct {
		title   string
		gs      []analysis.Group
		unalloc bool
	}{{"Teams", r.Teams, false}, {"Namespaces", r.Namespaces, false}, {"GPU models", r.Models, true}, {"Clusters", r.PerCluster, true}, {"Nodes", r.Nodes, true}} {
		if len(t.gs) > 0 {
			tables = append(tables, htmlTable{Title: t.title, Unalloc: t.unalloc, Prev: prev, Rows: groupRows(t.gs, t.unalloc, prev)})
		}
	}
	data := struct {
		R                            *Report
		Period                       string
		IdleChart, Heatmap, Timeline template.HTML
		Tables                       []htmlTable
		ApplyAny, ApplyApart         bool
		Applies                      []advice.Apply
		SavingsNote                  string
		Missing, PartialAbove        float64
		Uncovered                    []analysis.GPUCoverage
		FollowUpHeadline             string
		BeforeAfter                  [][]string
		Weeks                        template.HTML
		Waiting                      template.HTML
		OwnOrRent                    []analysis.Group
		OwnOrRentChart               template.HTML
		OwnOrRentNote                string
		OwnOrRentHeader              []string
		OwnOrRentRows                [][]string
		Shares                       [][]string
		SharesTitle, SharesNote      string
		SharesHeader                 []string
	}{
		R: r, Period: period(r), Tables: tables, ApplyAny: r.Apply.Any(), ApplyApart: len(r.Apply.Clusters) > 0, Applies: r.Apply.PerCluster(), SavingsNote: savingsNote(r),
		Missing: r.Coverage.MissingHours + r.Coverage.UnknownHours, PartialAbove: analysis.PartialAbove, Uncovered: uncovered(&r.Coverage),
		IdleChart: idleChart(r.Namespaces), Heatmap: heatmapChart(r.Heatmap), Timeline: timelineChart(r.Timeline),
		Shares: shareRows(r.Holdings), SharesTitle: sharesTitle, SharesNote: sharesNote, SharesHeader: sharesHeader,
	}
	if models := ownOrRentModels(r.Models); len(models) > 0 {
		data.OwnOrRent, data.OwnOrRentChart, data.OwnOrRentNote, data.OwnOrRentHeader = models, ownOrRentChart(models), ownOrRentNote(r), ownOrRentHeader
		for _, g := range models {
			data.OwnOrRentRows = append(data.OwnOrRentRows, ownOrRentCells(g))
		}
	}
	var err error
	if data.Waiting, err = waitingHTML(r); err != nil {
		return err
	}
	if c := r.Baseline; c != nil {
		data.FollowUpHeadline, data.BeforeAfter, data.Weeks = followUpHeadline(r), beforeAfterRows(c), weeksChart(c.Weeks)
	}
	if err := htmlTemplate.Execute(w, data); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	return nil
}
