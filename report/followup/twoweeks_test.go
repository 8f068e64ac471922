package followup_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report"
	"github.com/gputally/gputally/report/followup"
)

// The demo fleet over two weeks, through the real queries on the embedded
// PromQL engine (as report --demo). Week 1 is testdata/scenarios/fleet at
// the flat prices of testdata/prices/fleet.yaml (H100 3.00, A100 1.80, L4
// 0.60 EUR/h); its advice (docs/report.md, "The demo fleet"):
//
//	drain fleet-spare (2 × A100 40GB)       2 × 1.80 × 730.5 = 2629.80 EUR/month
//	mig A100-80GB (classifier-0, ranker-0)  1.80 × 730.5     = 1314.90
//	release research/forgotten-0/main       1.80 × 730.5     = 1314.90
//	time-slicing dev (notebook-a, -b)       0.60 × 730.5     =  438.30
//	mig H100-80GB (embedder-0, alone)                               0
//
// Week 2 is testdata/scenarios/followup with the unchanged
// fleet-h100-training: fleet-spare is gone, forgotten-0 ends 48 h into the
// week, notebook-a moves to a time-sliced L4 while notebook-b keeps its own,
// and nothing is repartitioned. Energy got dearer: the A100s cost 2.00 EUR/h
// in week 2 (testdata/prices/fleet-week2.yaml), so what the release realized
// is measured in week 2, not copied
// from week 1: GPU 2's 168 h × 2.00 EUR/h × 730.5/168 = 1461.00 EUR/month.
// Week 2 is simulated into a store of its own: the baseline is only a file,
// older than anything the engine holds.
func TestTwoWeeksOfTheDemoFleet(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	mid, stop := start.Add(7*24*time.Hour), start.Add(14*24*time.Hour)
	scenarios := filepath.Join("..", "..", "testdata", "scenarios")
	book1, err := cost.Load(filepath.Join("..", "..", "testdata", "prices", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	book2, err := cost.Load(filepath.Join("..", "..", "testdata", "prices", "fleet-week2.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fleet, _ := filepath.Glob(filepath.Join(scenarios, "fleet", "*.yaml"))
	later, _ := filepath.Glob(filepath.Join(scenarios, "followup", "*.yaml"))
	later = append(later, filepath.Join(scenarios, "fleet", "h100-training.yaml"))

	dir := t.TempDir()
	w1 := filepath.Join(dir, "gputally-report-1.json")
	weekReport(t, simulate(t, start, book1, fleet), mid, w1, "", 0)
	writeFile(t, dir, "gputally-report-1.md", "")
	store2 := simulate(t, mid, book2, later)
	formatsShowTheFollowUp(t, store2, stop, w1)

	// The directory as the CronJob keeps it: week 2 follows week 1 up,
	// then keeps itself alone.
	w2 := filepath.Join(dir, "gputally-report-2.json")
	weekReport(t, store2, stop, w2, dir, 1)
	var r report.Report
	if b, err := os.ReadFile(w2); err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("week 2's report: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); !slices.Equal(left, []string{w2}) {
		t.Errorf("the directory keeps %v, want week 2's report alone", left)
	}
	const month = 730.5
	want := []struct {
		kind, target, status string
		promised, realized   float64
	}{
		{"drain", "fleet-spare", followup.Gone, 2 * 1.80 * month, 0},
		{"mig", "A100-80GB", followup.NotApplied, 1.80 * month, 0},
		{"release", "research/forgotten-0/main", followup.Applied, 1.80 * month, 2.00 * month},
		{"time-slicing", "dev", followup.PartlyApplied, 0.60 * month, 0},
		{"mig", "H100-80GB", followup.NotApplied, 0, 0},
	}
	if len(r.FollowUp) != len(want) || r.Baseline == nil || r.Baseline.File != w1 {
		t.Fatalf("follow-up of %+v: %+v; want week 1's %d recommendations", r.Baseline, r.FollowUp, len(want))
	}
	for i, w := range want {
		it := r.FollowUp[i]
		if it.Kind != w.kind || it.Target != w.target || it.Status != w.status || !near(it.FreedEURPerMonthPromised, w.promised) || !near(it.FreedEURPerMonthRealized, w.realized) {
			t.Errorf("follow-up %d: %s %s %s, promised %.4f, realized %.4f; want %s %s %s, %.2f, %.2f\n%s", i, it.Kind, it.Target, it.Status,
				it.FreedEURPerMonthPromised, it.FreedEURPerMonthRealized, w.kind, w.target, w.status, w.promised, w.realized, it.Evidence)
		}
	}
	// forgotten-0 ran from the week's first sample to 48 h; GPU 2 then sat
	// unallocated: 120 h, to a sample interval.
	if f := r.FollowUp[2].FreedGPUs; len(f) != 1 || f[0].Node != "fleet-a100-serving" || f[0].GPU != "2" || f[0].Went != "unallocated" ||
		!f[0].FreeSince.Equal(mid.Add(48*time.Hour)) || f[0].UnallocatedHours < 119.99 || f[0].UnallocatedHours > 120.01 {
		t.Errorf("the released GPU %+v; want fleet-a100-serving/2, free since %s, 120 h unallocated", f, mid.Add(48*time.Hour))
	}
	// Before and after: the fleet cost 16.20 EUR/h in week 1 (2 × 3.00 +
	// 5 × 1.80 + 2 × 0.60) and 13.20 in week 2 (2 × 3.00 + 3 × 2.00 +
	// 2 × 0.60), × 168 h; research held GPU 2 all week 1 and 48 h of week 2.
	c := r.Baseline
	research := slices.IndexFunc(c.Teams, func(ch followup.Change) bool { return ch.Name == "research" })
	if !near(c.Fleet.Before.CostEUR, 16.20*168) || !near(c.Fleet.After.CostEUR, 13.20*168) || research < 0 ||
		!near(c.Teams[research].Before.CostEUR, 1.80*168) || c.Teams[research].After.CostEUR < 2.00*47.99 || c.Teams[research].After.CostEUR > 2.00*48 {
		t.Errorf("before and after: fleet %+v → %+v, research %+v", c.Fleet.Before, c.Fleet.After, c.Teams)
	}
	if len(c.Weeks) != 2 || c.Weeks[0].File != w1 || !c.Weeks[1].End.Equal(stop) || !near(c.Weeks[0].FreedEURPerMonth, 7.80*month) {
		t.Errorf("weeks %+v, want week 1 (5697.90 EUR/month advised) and this one", c.Weeks)
	}
}

// formatsShowTheFollowUp writes week 2's report in Markdown, CSV and HTML
// against the baseline file w1 and checks each shows the release applied
// with its realized EUR, the before and after, and (HTML) the weeks' chart.
func formatsShowTheFollowUp(t *testing.T, st *report.Store, end time.Time, w1 string) {
	t.Helper()
	dir := t.TempDir()
	read := func(format string) string {
		out := filepath.Join(dir, "w2."+format)
		cfg := weekConfig(end, out, w1, 0)
		cfg.Format = format
		if err := report.RunDemoStore(context.Background(), cfg, st, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md := read(report.FormatMarkdown)
	for _, w := range []string{"## Did the last report's advice pay off?", "| 3 | release | research/forgotten-0/main | applied | 1314.90 | 1461.00 |",
		"| 4 | time-slicing | dev | partly applied | 438.30 | 0.00 |", "| fleet | ", "2721.60 → 2217.60"} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q", w)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(read(report.FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var release, baseFleet []string
	for _, row := range rows {
		switch {
		case row[0] == "follow-up" && row[1] == "research/forgotten-0/main":
			release = row
		case row[0] == "baseline-fleet":
			baseFleet = row
		}
	}
	if release == nil || release[col["status"]] != "applied" || release[col["freed_eur_per_month_realized"]] != "1461" ||
		release[col["freed_eur_per_month_promised"]] != "1314.9" || baseFleet == nil || baseFleet[col["cost_eur"]] != "2721.6" {
		t.Errorf("CSV rows: release %q, baseline fleet %q", release, baseFleet)
	}
	html := read(report.FormatHTML)
	chart := html[strings.Index(html, `<svg id="chart-weeks"`):]
	chart = chart[:strings.Index(chart, "</svg>")]
	if strings.Count(chart, `<rect class="idle"`) != 2 || strings.Count(chart, `<rect class="unallocated"`) != 2 ||
		strings.Count(html[strings.Index(html, `id="follow-up-items"`):], "<tr>") < 6 {
		t.Errorf("HTML: the weeks' chart has not 2 weeks of idle and unallocated bars, or the follow-up table not 5 rows:\n%s", chart)
	}
}

// simulate runs the nodes of files for 7 days from start, priced by book,
// into a store, as report --demo does. The kubelet is asked at every change
// of the pods and at least hourly (not every 5 minutes): the same holders,
// and a twelfth of the requests, each of which must answer within the
// attribution client's real-time limit however loaded the machine.
func simulate(t *testing.T, start time.Time, book *cost.Book, files []string) *report.Store {
	t.Helper()
	var nodes []*sim.Scenario
	for _, f := range files {
		sc, err := sim.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	st := report.NewStoreBuilder()
	if _, err := history.RunFleet(context.Background(), history.Options{Start: start, Duration: 7 * 24 * time.Hour,
		SampleInterval: 30 * time.Second, ScrapeInterval: time.Minute, AttributionInterval: time.Hour, Book: book}, nodes, st); err != nil {
		t.Fatal(err)
	}
	return st.Store()
}

// weekConfig is the JSON report of the 7 days to end into out, following
// baseline up ("": none) and keeping keep reports.
func weekConfig(end time.Time, out, baseline string, keep int) report.Config {
	cfg := report.DefaultConfig()
	cfg.End, cfg.Format, cfg.Out, cfg.Baseline, cfg.BaselineKeep = end, report.FormatJSON, out, baseline, keep
	return cfg
}

// weekReport writes the report of weekConfig over st.
func weekReport(t *testing.T, st *report.Store, end time.Time, out, baseline string, keep int) {
	t.Helper()
	if err := report.RunDemoStore(context.Background(), weekConfig(end, out, baseline, keep), st, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}
