package render

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// maxWaitRows bounds the pods the Markdown and HTML list; the JSON and CSV
// list every one.
const maxWaitRows = 20

// waitingHeadline says the fleet's waiting figures in a sentence.
func waitingHeadline(w *analysis.Waiting) string {
	if !w.Measured {
		return "Not measured: the range holds no kube-state-metrics pod series (kube_pod_created, kube_pod_status_scheduled_time, kube_pod_container_resource_requests); scrape kube-state-metrics to see the GPU demand that waits for a node."
	}
	if w.Pods == 0 {
		return fmt.Sprintf("No GPU pod waited for a node longer than kube-state-metrics' scrape interval (%s).", w.Interval)
	}
	return fmt.Sprintf("%d GPU pods waited %s GPU-hours for a node (p50 %s h, p95 %s h per pod); %s GPU-hours of it fragmented — enough GPUs of the resource free in the cluster, on no one node; %s EUR burned idle on allocated GPUs while pods waited.",
		w.Pods, hours(w.GPUHours), hours(w.P50WaitHours), hours(w.P95WaitHours), hours(w.FragmentedGPUHours), eur(w.IdleWhileWaitingEUR))
}

// requestText is a pod's request: "4 × nvidia.com/gpu", several joined by
// " + ".
func requestText(rs []model.Request) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s × %s", num(r.Count), r.Resource)
	}
	return strings.Join(parts, " + ")
}

// num formats a request: whole numbers without decimals.
func num(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%g", x)
}

// podName names a pod that waited, with its cluster.
func podName(p *analysis.PodWaited) string {
	return clusterTarget(p.Cluster, p.Namespace+"/"+p.Pod)
}

// outcomeText says what became of a pod, with when.
func outcomeText(p *analysis.PodWaited) string {
	switch {
	case p.Scheduled != nil:
		return fmt.Sprintf("bound to %s at %s", orNone(p.Node), p.Scheduled.Format(time.RFC3339))
	case p.Deleted != nil:
		return "never ran: deleted while waiting at " + p.Deleted.Format(time.RFC3339)
	}
	return "never ran: still waiting at the end"
}

// neverRan returns the pods of w that never ran.
func neverRan(w *analysis.Waiting) []analysis.PodWaited {
	var out []analysis.PodWaited
	for _, p := range w.PodsWaited {
		if p.NeverRan() {
			out = append(out, p)
		}
	}
	return out
}

// waitRows are the rows of the pods table: pod, team, request, created,
// what became of it, hours waited, GPU-hours, fragmented GPU-hours.
func waitRows(pods []analysis.PodWaited) [][]string {
	rows := make([][]string, 0, min(len(pods), maxWaitRows))
	for i := range pods[:min(len(pods), maxWaitRows)] {
		p := &pods[i]
		rows = append(rows, []string{podName(p), p.Team, requestText(p.Requests), p.Created.Format(time.RFC3339), outcomeText(p),
			hours(p.WaitHours), hours(p.GPUHours), hours(p.FragmentedGPUHours)})
	}
	return rows
}

// waitGroupRows are the rows of a namespace or team table.
func waitGroupRows(gs []analysis.WaitGroup) [][]string {
	rows := make([][]string, 0, len(gs))
	for _, g := range gs {
		rows = append(rows, []string{orNone(g.Name), hours(g.GPUHours), fmt.Sprint(g.Pods), hours(g.P50WaitHours), hours(g.P95WaitHours), hours(g.FragmentedGPUHours)})
	}
	return rows
}

var (
	waitGroupHeader = []string{"name", "GPU-hours waited", "pods", "p50 wait h", "p95 wait h", "fragmented GPU-hours"}
	waitPodHeader   = []string{"pod", "team", "request", "created", "outcome", "waited h", "GPU-hours", "fragmented GPU-hours"}
)

// mdWaiting writes the section on the demand that waited.
func mdWaiting(b *strings.Builder, r *Report) {
	w := &r.Waiting
	fmt.Fprintf(b, "## Demand that waited for a GPU\n\n%s\n\n", mdCell(waitingHeadline(w)))
	if !w.Measured || w.Pods == 0 {
		return
	}
	if never := neverRan(w); len(never) > 0 {
		b.WriteString("Pods that never ran:\n\n")
		for i := range never {
			p := &never[i]
			fmt.Fprintf(b, "- %s (%s, team %s): waited %s h, %s\n", mdCell(podName(p)), mdCell(requestText(p.Requests)), mdCell(p.Team), hours(p.WaitHours), mdCell(outcomeText(p)))
		}
		b.WriteString("\n")
	}
	for _, t := range []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"Waiting by namespace", waitGroupHeader, waitGroupRows(w.ByNamespace)},
		{"Waiting by team", waitGroupHeader, waitGroupRows(w.ByTeam)},
		{waitPodsTitle(w), waitPodHeader, waitRows(w.PodsWaited)},
		{waitAdviceTitle, waitAdviceHeader, waitAdviceRows(r.WaitingAdvice)},
	} {
		if len(t.rows) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n| %s |\n|%s\n", t.title, strings.Join(t.header, " | "), strings.Repeat("---|", len(t.header)))
		for _, row := range t.rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = mdCell(c)
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
}

// waitPodsTitle is the title of the pods table, saying when it is cut.
func waitPodsTitle(w *analysis.Waiting) string {
	if n := len(w.PodsWaited); n > maxWaitRows {
		return fmt.Sprintf("Pods that waited (the %d of %d with the most GPU-hours; the JSON and CSV list all)", maxWaitRows, n)
	}
	return "Pods that waited (one row per pod, with its whole request)"
}

// waitingChart draws, per step bucket, the devices waiting on average —
// fragmented apart — as bars, beside the devices held and busy as lines.
func waitingChart(tl []analysis.WaitPoint) template.HTML {
	const width, height, left, bottom = 900, 240, 50, 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart-waiting" role="img" aria-label="GPUs waiting, held and busy" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	most := 0.0
	for _, p := range tl {
		most = math.Max(most, math.Max(p.WaitingGPUs, p.HeldGPUs))
	}
	if most <= 0 || len(tl) == 0 {
		b.WriteString(`<text x="10" y="20">no data</text></svg>`)
		return template.HTML(b.String())
	}
	plotH, bw := float64(height-bottom-10), float64(width-left-10)/float64(len(tl))
	y := func(v float64) float64 { return float64(height-bottom) - plotH*v/most }
	var held, busy strings.Builder
	for i, p := range tl {
		x := float64(left) + float64(i)*bw
		when := p.Time.Format("Mon 02 Jan 15:04")
		for _, part := range []struct {
			class    string
			from, to float64
		}{{"fragmented", 0, p.FragmentedGPUs}, {"waiting", p.FragmentedGPUs, p.WaitingGPUs}} {
			if part.to > part.from {
				fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s: %s GPUs %s</title></rect>`,
					part.class, x, y(part.to), math.Max(bw-0.3, 0.5), y(part.from)-y(part.to), when, hours(part.to-part.from), part.class)
			}
		}
		fmt.Fprintf(&held, "%.2f,%.2f ", x+bw/2, y(p.HeldGPUs))
		fmt.Fprintf(&busy, "%.2f,%.2f ", x+bw/2, y(p.BusyGPUs))
	}
	fmt.Fprintf(&b, `<polyline class="held-line" fill="none" points="%s"><title>GPUs held</title></polyline>`, strings.TrimSpace(held.String()))
	fmt.Fprintf(&b, `<polyline class="busy-line" fill="none" points="%s"><title>GPUs busy</title></polyline>`, strings.TrimSpace(busy.String()))
	fmt.Fprintf(&b, `<text x="0" y="20">%s</text><text x="0" y="%d">0</text>`, hours(most), height-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
		left, height-10, tl[0].Time.Format("Mon 02 Jan 15:04"), width-10, height-10, tl[len(tl)-1].Time.Format("Mon 02 Jan 15:04"))
	lx := width - 460
	for i, c := range []struct{ class, label string }{{"waiting", "waiting"}, {"fragmented", "of it fragmented"}, {"held-line", "held"}, {"busy-line", "busy"}} {
		fmt.Fprintf(&b, `<rect class="%s legend" x="%d" y="4" width="10" height="10"></rect><text x="%d" y="13">%s</text>`, c.class, lx+i*115, lx+i*115+14, c.label)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var waitingTemplate = template.Must(template.New("waiting").Parse(`<h2 id="waiting">Demand that waited for a GPU</h2>
<p>{{.Headline}}</p>
{{if .Shown}}<div class="kpis">
<div class="kpi">GPU-hours waited<b id="waiting-gpu-hours">{{.GPUHours}}</b></div>
<div class="kpi">pods that waited<b>{{.W.Pods}}</b></div>
<div class="kpi">p50 / p95 wait<b>{{.P50}} / {{.P95}} h</b></div>
<div class="kpi">fragmented GPU-hours<b>{{.Fragmented}}</b></div>
<div class="kpi">idle EUR while pods waited<b>{{.IdleEUR}} EUR</b></div>
</div>
<h3>GPUs waiting, held and busy over the range</h3>
{{.Chart}}
{{with .NeverRan}}<p>Pods that never ran:</p>
<ul id="never-ran">{{range .}}<li>{{.}}</li>
{{end}}</ul>{{end}}
{{range .Tables}}{{if .Rows}}<h3>{{.Title}}</h3>
<table><tr>{{range $i, $h := .Header}}<th{{if lt $i 1}} class="l"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{end}}{{end}}`))

// waitingHTML renders the HTML section on the demand that waited.
func waitingHTML(r *Report) (template.HTML, error) {
	w := &r.Waiting
	type table struct {
		Title  string
		Header []string
		Rows   [][]string
	}
	var never []string
	for _, p := range neverRan(w) {
		never = append(never, fmt.Sprintf("%s (%s, team %s): waited %s h, %s", podName(&p), requestText(p.Requests), p.Team, hours(p.WaitHours), outcomeText(&p)))
	}
	data := struct {
		W                                       *analysis.Waiting
		Headline                                string
		Shown                                   bool
		GPUHours, P50, P95, Fragmented, IdleEUR string
		Chart                                   template.HTML
		NeverRan                                []string
		Tables                                  []table
	}{W: w, Headline: waitingHeadline(w), Shown: w.Measured && w.Pods > 0, GPUHours: hours(w.GPUHours), P50: hours(w.P50WaitHours), P95: hours(w.P95WaitHours),
		Fragmented: hours(w.FragmentedGPUHours), IdleEUR: eur(w.IdleWhileWaitingEUR), Chart: waitingChart(w.Timeline), NeverRan: never,
		Tables: []table{{"Waiting by namespace", waitGroupHeader, waitGroupRows(w.ByNamespace)}, {"Waiting by team", waitGroupHeader, waitGroupRows(w.ByTeam)},
			{waitPodsTitle(w), waitPodHeader, waitRows(w.PodsWaited)}, {waitAdviceTitle, waitAdviceHeader, waitAdviceRows(r.WaitingAdvice)}}}
	var b strings.Builder
	if err := waitingTemplate.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render html: waiting: %w", err)
	}
	return template.HTML(b.String()), nil
}

// csvWaitingRows are the waiting figures: a row "waiting" for the fleet,
// "waiting_namespace", "waiting_team" and "waiting_cluster" per group, and
// "waiting_pod" per pod (from: created; to: bound or deleted). Their
// gpu_hours are GPU-hours waited. None when not measured.
func csvWaitingRows(r *Report) [][]string {
	w := &r.Waiting
	if !w.Measured {
		return nil
	}
	// idle is the group's idle EUR while its pods waited: a cluster's or the
	// fleet's; "" for a namespace or team, which has none of its own.
	group := func(section, name string, t analysis.WaitTotals, idle string) []string {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[2] = section, name, f64(t.GPUHours)
		cells[csvPods], cells[csvP50Wait], cells[csvP95Wait] = fmt.Sprint(t.Pods), f64(t.P50WaitHours), f64(t.P95WaitHours)
		cells[csvFragmented], cells[csvIdleWhileWaiting] = f64(t.FragmentedGPUHours), idle
		return cells
	}
	rows := append([][]string{group("waiting", "fleet", w.WaitTotals, f64(w.IdleWhileWaitingEUR))}, csvWaitAdviceRows(r)...)
	for _, s := range []struct {
		section string
		gs      []analysis.WaitGroup
	}{{"waiting_namespace", w.ByNamespace}, {"waiting_team", w.ByTeam}} {
		for _, g := range s.gs {
			rows = append(rows, group(s.section, g.Name, g.WaitTotals, ""))
		}
	}
	for _, c := range w.ByCluster {
		rows = append(rows, group("waiting_cluster", c.Name, c.WaitTotals, f64(c.IdleWhileWaitingEUR)))
	}
	for _, p := range w.PodsWaited {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[2] = "waiting_pod", p.Namespace+"/"+p.Pod, f64(p.GPUHours)
		cells[csvCluster], cells[csvFrom], cells[csvFragmented] = p.Cluster, p.Created.Format(time.RFC3339), f64(p.FragmentedGPUHours)
		cells[csvRequest], cells[csvOutcome], cells[csvWaitHours] = requestText(p.Requests), p.Outcome, f64(p.WaitHours)
		switch {
		case p.Scheduled != nil:
			cells[csvTo] = p.Scheduled.Format(time.RFC3339)
		case p.Deleted != nil:
			cells[csvTo] = p.Deleted.Format(time.RFC3339)
		}
		rows = append(rows, cells)
	}
	return rows
}

// The headings of the scheduler configuration to apply, and of what the
// waiting calls for.
const (
	waitAdviceTitle = "What the waiting calls for (it frees no GPU: not in the headline; the configuration is under Configuration to apply)"
	volcanoTitle    = "Volcano (scheduling.volcano.sh/v1beta1: a Queue per team for the capacity plugin, Namespaces that pick them)"
	schedulerTitle  = "kube-scheduler (a profile that packs GPU pods: NodeResourcesFit, MostAllocated)"
)

// waitAdviceHeader and waitAdviceRows are the table of what the waiting
// calls for.
var waitAdviceHeader = []string{"change", "target", "EUR it is about", "EUR/month", "GPU-hours waited", "evidence"}

func waitAdviceRows(ws []advice.WaitAdvice) [][]string {
	rows := make([][]string, 0, len(ws))
	for _, w := range ws {
		rows = append(rows, []string{w.Kind, clusterTarget(w.Cluster, w.Target), eur(w.EUR), eur(w.EURPerMonth), hours(w.GPUHours), w.Evidence})
	}
	return rows
}

// csvWaitAdviceRows are a "waiting_advice" row per WaitAdvice: kind, target,
// evidence, cluster; its EUR over the range in cost_eur, per month in
// freed_eur_per_month (it frees nothing: the headline row excludes it), and
// the GPU-hours waited it addresses in gpu_hours.
func csvWaitAdviceRows(r *Report) [][]string {
	var rows [][]string
	for _, w := range r.WaitingAdvice {
		cells := make([]string, len(csvHeader))
		cells[0], cells[1], cells[2] = "waiting_advice", w.Target, f64(w.GPUHours)
		cells[csvKind], cells[csvCostEUR], cells[csvFreed] = w.Kind, f64(w.EUR), f64(w.EURPerMonth)
		cells[csvEvidence], cells[csvCluster], cells[csvHoursPerMonth] = w.Evidence, w.Cluster, f64(r.HoursPerMonth)
		rows = append(rows, cells)
	}
	return rows
}
