package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
