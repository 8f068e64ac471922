package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/followup"
)

// TestNonFiniteFigureNeverWritten: a figure that is not a number, however it
// got into a report (a source other than the ledger's checks, an analysis
// bug), is refused in every format by its JSON path, and no file is written:
// Markdown, HTML and CSV printed "+Inf EUR" with exit 0, JSON failed with a
// Go encoding error.
func TestNonFiniteFigureNeverWritten(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(r *Report)
		wanted string
	}{
		{"+Inf", func(r *Report) { r.Fleet.Totals.CostEUR = math.Inf(1) }, "the report holds +Inf at report.fleet.totals.cost_eur"},
		{"NaN", func(r *Report) { r.Namespaces[1].Totals.IdleEUR = math.NaN() }, "the report holds NaN at report.namespaces[1].totals.idle_eur"},
	} {
		for _, format := range []string{FormatJSON, FormatMarkdown, FormatHTML, FormatCSV} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				r, err := generateFrom(context.Background(), testConfig(), fleetQuerier(testFleet(), time.Hour), discard())
				if err != nil {
					t.Fatal(err)
				}
				tc.spoil(r)
				path := filepath.Join(t.TempDir(), "report."+format)
				out, err := createOutput(path)
				if err != nil {
					t.Fatal(err)
				}
				defer out.discard()
				if err := out.write(r, format); err == nil || !strings.Contains(err.Error(), tc.wanted) {
					t.Errorf("error %v, want one saying %q", err, tc.wanted)
				}
				out.discard()
				if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
					t.Errorf("left %v behind", entries)
				}
			})
		}
	}
}

// TestCheckFiniteShapes: the walk reaches a figure however the report holds
// it — behind a pointer (the baseline's before and after, nil where a team
// was not there), inside a fixed-size array (the heatmap) — and refuses
// −Inf as well as +Inf and NaN, naming its JSON path. Every figure of the
// finite report is a number, heatmap hours without data −1 included.
func TestCheckFiniteShapes(t *testing.T) {
	finite := func() *Report {
		r := &Report{Baseline: &followup.Comparison{
			Fleet: followup.Change{Name: "fleet", Before: &followup.Figures{CostEUR: 700}, After: &followup.Figures{CostEUR: 650}},
			Teams: []followup.Change{{Name: "ml", After: &followup.Figures{IdleEUR: 40}}, {Name: "ops", Before: &followup.Figures{IdleEUR: 12}, After: &followup.Figures{IdleEUR: 9}}},
		}}
		for d := range r.Heatmap {
			for h := range r.Heatmap[d] {
				r.Heatmap[d][h] = -1
			}
		}
		return r
	}
	if err := checkFinite(finite()); err != nil {
		t.Fatalf("a finite report refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		spoil  func(r *Report)
		wanted string
	}{
		{"NaN behind a pointer", func(r *Report) { r.Baseline.Fleet.Before.CostEUR = math.NaN() }, "the report holds NaN at report.baseline.fleet.before.cost_eur"},
		{"+Inf behind a pointer in a list", func(r *Report) { r.Baseline.Teams[1].After.IdleEUR = math.Inf(1) }, "the report holds +Inf at report.baseline.teams[1].after.idle_eur"},
		{"+Inf in a fixed-size array", func(r *Report) { r.Heatmap[3][14] = math.Inf(1) }, "the report holds +Inf at report.heatmap[3][14]"},
		{"-Inf alone", func(r *Report) { r.Fleet.Totals.CostEUR = math.Inf(-1) }, "the report holds -Inf at report.fleet.totals.cost_eur"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := finite()
			tc.spoil(r)
			if err := checkFinite(r); err == nil || !strings.Contains(err.Error(), tc.wanted) {
				t.Errorf("error %v, want one saying %q", err, tc.wanted)
			}
		})
	}
}
