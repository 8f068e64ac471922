package report

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/render"
)

// faultGPU is one GPU of the faults fleet: state returns, for the step bucket
// ending at hour h of the range (1–168), the state of its whole hour and the
// holder ("" for none); ok false means no data that hour.
type faultGPU struct {
	node, uuid string
	rate       float64 // EUR per hour; lost hours cost lostRate
	state      func(h int) (state, holder string, ok bool)
}

const lostRate = 1.0 // EUR per hour: the capital part of the 1.50 EUR/h

func faultQuerier(gpus []faultGPU, start time.Time) *fakeQuerier {
	f := &fakeQuerier{}
	for _, g := range gpus {
		holders := map[[2]string]bool{}
		for h := 1; h <= 168; h++ {
			if st, ho, ok := g.state(h); ok {
				holders[[2]string{st, ho}] = true
			}
		}
		for sh := range holders {
			id := map[string]string{"gpu": "0", "UUID": g.uuid, "modelName": "NVIDIA H100 80GB HBM3", "Hostname": g.node,
				"namespace": "", "pod": "", "container": "", "state": sh[0]}
			if sh[1] != "" {
				ns, pod, _ := strings.Cut(sh[1], "/")
				id["namespace"], id["pod"], id["container"] = ns, pod, "main"
			}
			value := func(eur bool) func(t time.Time) float64 {
				return func(t time.Time) float64 {
					h := int(t.Sub(start) / time.Hour)
					if st, ho, ok := g.state(h); h < 1 || !ok || st != sh[0] || ho != sh[1] {
						return math.NaN()
					}
					switch {
					case !eur:
						return 3600
					case sh[0] == "lost":
						return lostRate
					}
					return g.rate
				}
			}
			f.series = append(f.series,
				fakeSeries{"gputally_gpu_seconds_total", id, value(false)},
				fakeSeries{"gputally_cost_eur_total", id, value(true)})
		}
	}
	// The holder of the lost GPU: whole-GPU, nearly idle and small; release,
	// time-slicing and MIG would all apply were it not lost.
	pl := map[string]string{"gpu": "0", "UUID": "GPU-A0", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-a", "namespace": "ml", "pod": "trainer", "container": "main"}
	upTo100 := func(v float64) func(t time.Time) float64 {
		return func(t time.Time) float64 {
			if h := t.Sub(start).Hours(); h <= 0 || h > 100 {
				return math.NaN()
			}
			return v
		}
	}
	f.series = append(f.series,
		fakeSeries{"gputally_gpu_allocation", with(pl, "resource", "nvidia.com/gpu", "sharing", "exclusive"), upTo100(1)},
		fakeSeries{dcgmnames.GREngineActive.New, pl, upTo100(0.02)},
		fakeSeries{dcgmnames.FBUsed.New, pl, upTo100(500 << 20)}) // 500 MiB
	return f
}

func unallocatedBut(state string, from, to int) func(h int) (string, string, bool) {
	return func(h int) (string, string, bool) {
		if h >= from && h <= to {
			return state, "", state != ""
		}
		return "unallocated", "", true
	}
}

// faultsFleet: on node-a a GPU held idle by ml/trainer falls off the bus after
// hour 100; node-b's two GPUs sit unallocated but for 3 hours of unknown each
// (kubelet down: 3/168 = 1.8 % unknown); node-c's GPU is unallocated with no
// data for hours 51–53 (exporter stopped); node-d's GPU is unallocated but for
// 1 unknown hour (0.6 %).
func faultsFleet() []faultGPU {
	return []faultGPU{
		{node: "node-a", uuid: "GPU-A0", rate: 1.5, state: func(h int) (string, string, bool) {
			if h <= 100 {
				return "idle", "ml/trainer", true
			}
			return "lost", "", true
		}},
		{node: "node-b", uuid: "GPU-B0", rate: 1.5, state: unallocatedBut("unknown", 10, 12)},
		{node: "node-b", uuid: "GPU-B1", rate: 1.5, state: unallocatedBut("unknown", 10, 12)},
		{node: "node-c", uuid: "GPU-C0", rate: 1.5, state: unallocatedBut("", 51, 53)},
		{node: "node-d", uuid: "GPU-D0", rate: 1.5, state: unallocatedBut("unknown", 20, 20)},
	}
}

// TestFaultsReport: the lost GPU is broken hardware with its lost EUR and no
// other advice; unknown hours are their own state, block drain advice above 1 %
// of a node's device-hours (node-b at 1.8 % gets none, node-d at 0.6 % does),
// and count towards partial; the gap is named with its hours.
func TestFaultsReport(t *testing.T) {
	cfg := testConfig()
	start := cfg.End.Add(-cfg.Range)
	q := faultQuerier(faultsFleet(), start)
	if _, err := generateFrom(context.Background(), cfg, q, discard()); err == nil || !strings.Contains(err.Error(), "--allow-partial") {
		t.Fatalf("error %v, want a partial report refused without --allow-partial", err)
	}
	cfg.AllowPartial = true
	r, err := generateFrom(context.Background(), cfg, q, discard())
	if err != nil {
		t.Fatal(err)
	}
	f := r.Fleet.Totals
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"lost hours", f.LostHours, 68},
		{"lost EUR", f.LostEUR, 68 * lostRate},
		{"unknown hours", f.UnknownHours, 3 + 3 + 1},
		{"unknown EUR", f.UnknownEUR, 7 * 1.5},
		{"device-hours", f.GPUHours, 5*168 - 3},
		{"cost EUR", f.CostEUR, 100*1.5 + 68*lostRate + (4*168-3)*1.5},
		// 5 GPUs × 168 h expected; 3 h missing and 7 h unknown.
		{"coverage", r.Coverage.Ratio, (5*168 - 3) / (5 * 168.0)},
		{"missing hours", r.Coverage.MissingHours, 3},
		{"coverage unknown hours", r.Coverage.UnknownHours, 7},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %.6f, want %.6f", c.name, c.got, c.want)
		}
	}
	if !r.Partial {
		t.Error("10 of 840 device-hours missing or unknown (1.2 %): want partial")
	}
	wantBroken := "repair or replace GPU GPU-A0 (gpu 0) on node node-a: 68.00 EUR this period"
	if len(r.BrokenGPUs) != 1 || r.BrokenGPUs[0].Advice() != wantBroken || !r.BrokenGPUs[0].Since.Equal(start.Add(100*time.Hour)) {
		t.Errorf("broken GPUs %+v, want one: %q since hour 100", r.BrokenGPUs, wantBroken)
	}
	drained := map[string]bool{}
	for _, rec := range r.Recommendations {
		if strings.Contains(strings.Join(rec.Holdings, " "), "ml/trainer") || strings.Contains(rec.Target, "trainer") {
			t.Errorf("advice %s %s for the holder of the lost GPU", rec.Kind, rec.Target)
		}
		if rec.Kind == "drain" {
			drained[rec.Target] = true
		}
	}
	if drained["node-b"] || !drained["node-c"] || !drained["node-d"] {
		t.Errorf("drained %v: want node-c and node-d (unknown 0.6 %%), not node-b (unknown 1.8 %%)", drained)
	}
	warned := false
	for _, w := range r.Warnings {
		if strings.Contains(w, "node node-b: 6.0 of 336.0 device-hours unknown") && strings.Contains(w, "no drain advice") {
			warned = true
		}
		if strings.Contains(w, "node-d") && strings.Contains(w, "no drain advice") {
			t.Errorf("warning names node-d, whose unknown time is below 1 %%: %s", w)
		}
	}
	if !warned {
		t.Errorf("no warning names node-b's unknown hours: %q", r.Warnings)
	}
	wantGap := analysis.Gap{Node: "node-c", UUID: "GPU-C0", GPU: "0", From: start.Add(50 * time.Hour), To: start.Add(53 * time.Hour), Hours: 3, Kind: analysis.GapMissing}
	if len(r.Coverage.Gaps) != 1 || !reflect.DeepEqual(r.Coverage.Gaps[0], wantGap) {
		t.Errorf("gaps %+v, want %+v", r.Coverage.Gaps, wantGap)
	}
	for _, n := range r.Coverage.Nodes {
		if n.Node == "node-c" && !near(n.MissingHours, 3) || n.Node == "node-b" && (!near(n.UnknownHours, 6) || n.GPUs != 2) {
			t.Errorf("node coverage %+v", n)
		}
	}

	// Every format states the lost GPU, the unknown hours, the coverage and the gap.
	for _, c := range []struct{ format, lost, unknown, coverage, gap string }{
		{FormatMarkdown, wantBroken, "7.0 unknown", "99.6 % of 840.0 device-hours seen", "| node-c | 0 | GPU-C0 |  | 2026-01-07T02:00:00Z | 2026-01-07T05:00:00Z | 3.0 | missing |"},
		{FormatHTML, wantBroken, "unknown<b>10.50 EUR</b>", "99.6 % of 840.0 device-hours seen", "<td class=\"l\">2026-01-07T02:00:00Z</td><td class=\"l\">2026-01-07T05:00:00Z</td><td>3.0</td>"},
		// The timeline chart stacks lost and unknown hours too.
		{FormatHTML, `<rect class="lost" x=`, `<rect class="unknown" x=`, `lost legend`, `unknown legend`},
		{FormatCSV, wantBroken, ",68,7,68,10.5,", "coverage,fleet,837,", "gap,node-c/0@GPU-C0,"},
		{FormatJSON, `"lost_eur": 68`, `"unknown_hours": 7`, `"ratio": 0.99642857`, `"from": "2026-01-07T02:00:00Z"`},
	} {
		var b bytes.Buffer
		if err := render.Render(&b, r, c.format); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{c.lost, c.unknown, c.coverage, c.gap} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s output lacks %q", c.format, want)
			}
		}
	}
}

// TestPartialThreshold: a report is partial when more than 1 % of the
// expected device-hours are missing or unknown, not at 0.6 %.
func TestPartialThreshold(t *testing.T) {
	cfg := testConfig()
	start := cfg.End.Add(-cfg.Range)
	for _, c := range []struct {
		unknownHours int
		partial      bool
	}{{1, false}, {2, true}} { // 1/168 = 0.6 %, 2/168 = 1.2 %
		gpus := []faultGPU{{node: "n", uuid: "GPU-0", rate: 1.5, state: unallocatedBut("unknown", 5, 4+c.unknownHours)}}
		r, err := generateFrom(context.Background(), cfg, faultQuerier(gpus, start), discard())
		if c.partial {
			if err == nil || r != nil {
				t.Errorf("%d unknown hours of 168: report written without --allow-partial", c.unknownHours)
			}
			continue
		}
		if err != nil || r.Partial {
			t.Errorf("%d unknown hours of 168: err %v, partial %v; want a complete report", c.unknownHours, err, r != nil && r.Partial)
		}
	}
}

// TestDrainFreesNoLostGPU: node-e's GPU-E0 sits unallocated all week; GPU-E1
// is held idle by ml/old for hours 1–2, unallocated for hours 3–160 and lost
// from hour 161: (168 + 158) / 336 = 97.0 % unallocated, so node-e is
// drained. The drain frees GPU-E0 alone, 168 h × 1.50 EUR = 252 EUR over the
// range, 252 × 730.5 / 168 = 1,095.75 EUR per month; the broken GPU-E1 is
// not freed (it needs repair) and ml/old, its holder, is not to be moved.
func TestDrainFreesNoLostGPU(t *testing.T) {
	cfg := testConfig()
	start := cfg.End.Add(-cfg.Range)
	gpus := []faultGPU{
		{node: "node-e", uuid: "GPU-E0", rate: 1.5, state: unallocatedBut("", 0, -1)},
		{node: "node-e", uuid: "GPU-E1", rate: 1.5, state: func(h int) (string, string, bool) {
			switch {
			case h <= 2:
				return "idle", "ml/old", true
			case h <= 160:
				return "unallocated", "", true
			}
			return "lost", "", true
		}},
	}
	r, err := generateFrom(context.Background(), cfg, faultQuerier(gpus, start), discard())
	if err != nil {
		t.Fatal(err)
	}
	var drains []advice.Recommendation
	for _, rec := range r.Recommendations {
		if rec.Kind == "drain" {
			drains = append(drains, rec)
		}
	}
	if len(drains) != 1 {
		t.Fatalf("drains %+v, want one of node-e", drains)
	}
	d := drains[0]
	if d.Target != "node-e" || len(d.FreedGPUs) != 1 || d.FreedGPUs[0] != "GPU-E0" || !near(d.FreedEURPerMonth, 1095.75) {
		t.Errorf("drain %s frees %v for %.2f EUR/month, want node-e freeing GPU-E0 alone for 1095.75", d.Target, d.FreedGPUs, d.FreedEURPerMonth)
	}
	if len(d.Holdings) != 0 {
		t.Errorf("drain moves %v: the holder of the lost GPU gets no advice", d.Holdings)
	}
}
