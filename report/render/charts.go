package render

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/followup"
)

// svgText escapes s for SVG text content and attributes.
func svgText(s string) string { return template.HTMLEscapeString(s) }

// idleChart is a horizontal bar chart of allocated-but-idle EUR per namespace.
func idleChart(ns []analysis.Group) template.HTML {
	const width, left, bar = 760, 200, 22
	var b strings.Builder
	maxEUR := 0.0
	for _, g := range ns {
		maxEUR = math.Max(maxEUR, g.Totals.IdleEUR)
	}
	height := max(1, len(ns))*bar + 10
	fmt.Fprintf(&b, `<svg id="chart-idle-eur" role="img" aria-label="idle EUR by namespace" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	if len(ns) == 0 {
		b.WriteString(`<text x="10" y="20">no GPU was allocated to a namespace</text>`)
	}
	for i, g := range ns {
		y := 5 + i*bar
		w := 0.0
		if maxEUR > 0 {
			w = (width - left - 90) * g.Totals.IdleEUR / maxEUR
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+15, svgText(orNone(g.Name)))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="%d"><title>%s: %s EUR idle</title></rect>`,
			left, y+2, math.Max(w, 1), bar-6, svgText(orNone(g.Name)), eur(g.Totals.IdleEUR))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s EUR</text>`, float64(left)+math.Max(w, 1)+6, y+15, eur(g.Totals.IdleEUR))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// heatmapChart draws mean activity by weekday (rows, Monday first) and hour.
func heatmapChart(h [7][24]float64) template.HTML {
	const cell, left, top = 28, 40, 18
	var b strings.Builder
	width, height := left+24*cell+10, top+7*cell+10
	fmt.Fprintf(&b, `<svg id="chart-heatmap" role="img" aria-label="activity by hour of week" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	for hr := 0; hr < 24; hr += 3 {
		fmt.Fprintf(&b, `<text x="%d" y="12">%02d</text>`, left+hr*cell+4, hr)
	}
	for row := range 7 {
		wd := (row + 1) % 7 // Monday first
		day := time.Weekday(wd).String()[:3]
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text>`, top+row*cell+18, day)
		for hr := range 24 {
			v := h[wd][hr]
			fill, label := "#eeeeee", "no data"
			if v >= 0 {
				fill, label = heatColor(v), pct(v)
			}
			fmt.Fprintf(&b, `<rect class="cell" x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s %02d:00 %s</title></rect>`,
				left+hr*cell, top+row*cell, cell-2, cell-2, fill, day, hr, label)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// heatColor maps 0–1 from pale yellow to dark green.
func heatColor(v float64) string {
	v = math.Max(0, math.Min(1, v))
	lerp := func(a, b float64) int { return int(math.Round(a + (b-a)*v)) }
	return fmt.Sprintf("#%02x%02x%02x", lerp(0xff, 0x1b), lerp(0xf7, 0x5e), lerp(0xbc, 0x20))
}

// timelineChart stacks busy, idle, unallocated, lost and unknown device-hours per step.
func timelineChart(tl []analysis.TimelinePoint) template.HTML {
	const width, height, left, bottom = 900, 240, 50, 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart-timeline" role="img" aria-label="busy, idle, unallocated, lost and unknown device-hours" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	maxH := 0.0
	for _, p := range tl {
		maxH = math.Max(maxH, p.BusyHours+p.IdleHours+p.UnallocatedHours+p.LostHours+p.UnknownHours)
	}
	plotH := float64(height - bottom - 10)
	if maxH > 0 && len(tl) > 0 {
		bw := float64(width-left-10) / float64(len(tl))
		for i, p := range tl {
			x := float64(left) + float64(i)*bw
			y := float64(height - bottom)
			for _, part := range []struct {
				class string
				v     float64
			}{{"busy", p.BusyHours}, {"idle", p.IdleHours}, {"unallocated", p.UnallocatedHours}, {"lost", p.LostHours}, {"unknown", p.UnknownHours}} {
				if part.v <= 0 {
					continue
				}
				h := plotH * part.v / maxH
				y -= h
				fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s: %s %s device-hours</title></rect>`,
					part.class, x, y, math.Max(bw-0.3, 0.5), h, p.Time.Format("Mon 02 Jan 15:04"), part.class, hours(part.v))
			}
		}
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text><text x="0" y="%d">0</text>`, 20, hours(maxH), height-bottom)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
			left, height-10, tl[0].Time.Format("Mon 02 Jan 15:04"), width-10, height-10, tl[len(tl)-1].Time.Format("Mon 02 Jan 15:04"))
	} else {
		b.WriteString(`<text x="10" y="20">no data</text>`)
	}
	lx := width - 450
	for i, c := range []string{"busy", "idle", "unallocated", "lost", "unknown"} {
		fmt.Fprintf(&b, `<rect class="%s legend" x="%d" y="4" width="10" height="10"></rect><text x="%d" y="13">%s</text>`, c, lx+i*90, lx+i*90+14, c)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// weeksChart draws the fleet's idle (allocated) and unallocated EUR of each
// kept week as stacked bars, oldest first, with its busy share above: how
// the money that burns idle moved as the advice was applied.
func weeksChart(weeks []followup.Week) template.HTML {
	const width, height, left, bottom, top = 900, 260, 60, 40, 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart-weeks" role="img" aria-label="idle and unallocated EUR per kept week" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, width, height, width, height)
	maxEUR := 0.0
	for _, w := range weeks {
		maxEUR = math.Max(maxEUR, w.Fleet.IdleEUR+w.Fleet.UnallocatedEUR)
	}
	plotH, slot := float64(height-bottom-top), float64(width-left-10)/float64(max(1, len(weeks)))
	bw := math.Min(80, slot*0.6)
	for i, w := range weeks {
		x := float64(left) + float64(i)*slot + (slot-bw)/2
		y := float64(height - bottom)
		for _, part := range []struct {
			class string
			v     float64
		}{{"idle", w.Fleet.IdleEUR}, {"unallocated", w.Fleet.UnallocatedEUR}} {
			h := 0.0
			if maxEUR > 0 {
				h = plotH * part.v / maxEUR
			}
			y -= h
			fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s: %s EUR %s</title></rect>`,
				part.class, x, y, bw, h, svgText(weekName(w)), eur(part.v), part.class)
		}
		fmt.Fprintf(&b, `<text x="%.2f" y="%.2f" text-anchor="middle">busy %s</text>`, x+bw/2, y-6, pct(w.Fleet.BusyShare))
		fmt.Fprintf(&b, `<text x="%.2f" y="%d" text-anchor="middle">%s</text>`, x+bw/2, height-bottom+16, svgText(w.End.Format(time.DateOnly)))
	}
	fmt.Fprintf(&b, `<text x="0" y="%d">%s EUR</text><text x="0" y="%d">0</text>`, top, eur(maxEUR), height-bottom)
	for i, c := range []string{"idle", "unallocated"} {
		fmt.Fprintf(&b, `<rect class="%s legend" x="%d" y="4" width="10" height="10"></rect><text x="%d" y="13">%s EUR</text>`, c, left+i*130, left+i*130+14, c)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
