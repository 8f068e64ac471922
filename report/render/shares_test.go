package render

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/analysis"
)

// sharesReport has a HAMi share, a KAI sharer, a KAI reservation pod
// holding its GPU for no sharer, a DRA claim holding its GPU whole and a
// whole GPU.
func sharesReport() *Report {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h := func(pod, sharing, resource string, share, cost float64) analysis.Holding {
		return analysis.Holding{Namespace: "ml", Pod: pod, Container: "main", Node: "n1", UUID: "GPU-" + pod, Sharing: sharing,
			Resource: resource, Share: share, Totals: analysis.Totals{HeldHours: 24 * share, CostEUR: cost, IdleEUR: cost / 2, BusyShare: 0.5}}
	}
	return &Report{Start: start, End: start.Add(24 * time.Hour), Step: "1h", Holdings: []analysis.Holding{
		h("hami-a", "hami", "nvidia.com/gpu", 0.25, 6),
		h("kai-b", "kai", "", 0.5, 12),
		h("res-c", "kai", "nvidia.com/gpu", 1, 24),
		h("dra-d", "dra", "gpu.nvidia.com", 1, 24),
		h("whole-e", "exclusive", "nvidia.com/gpu", 0, 24),
	}}
}

// TestSharesTable: Markdown and HTML list the GPU shares — HAMi, KAI sharer,
// KAI reservation — with their share, most EUR first; not a DRA claim
// holding its GPU whole, nor a whole GPU; the CSV's holding rows end with
// their sharing and share.
func TestSharesTable(t *testing.T) {
	r := sharesReport()
	var md, html, csvOut bytes.Buffer
	for _, f := range []struct {
		w      *bytes.Buffer
		format string
	}{{&md, FormatMarkdown}, {&html, FormatHTML}, {&csvOut, FormatCSV}} {
		if err := Render(f.w, r, f.format); err != nil {
			t.Fatal(err)
		}
	}
	wantRows := []string{
		"| ml/res-c/main | n1 | GPU-res-c | KAI reservation (no sharer) | 100.0 % | 24.0 | 50.0 % | 24.00 | 12.00 |",
		"| ml/kai-b/main | n1 | GPU-kai-b | KAI-Scheduler | 50.0 % | 12.0 | 50.0 % | 12.00 | 6.00 |",
		"| ml/hami-a/main | n1 | GPU-hami-a | HAMi | 25.0 % | 6.0 | 50.0 % | 6.00 | 3.00 |",
	}
	table := md.String()[strings.Index(md.String(), "## GPU shares (HAMi, KAI-Scheduler, DRA)"):]
	if got := strings.Join(strings.Split(table, "\n")[6:9], "\n"); got != strings.Join(wantRows, "\n") {
		t.Errorf("Markdown rows:\n%s\nwant\n%s", got, strings.Join(wantRows, "\n"))
	}
	if end := strings.Index(table[1:], "\n## "); end >= 0 {
		table = table[:end+1]
	}
	for _, not := range []string{"dra-d", "whole-e"} {
		if strings.Contains(table, not) {
			t.Errorf("the shares table lists %s:\n%s", not, table)
		}
	}
	if !strings.Contains(html.String(), "<td>ml/kai-b/main</td><td>n1</td><td>GPU-kai-b</td><td>KAI-Scheduler</td><td>50.0 %</td>") {
		t.Errorf("HTML lacks the KAI sharer's row:\n%s", html.String())
	}
	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, row := range rows[1:] {
		if row[0] == "holding" {
			got[row[1]] = [2]string{row[csvSharing], row[csvShare]}
		}
	}
	if rows[0][csvSharing] != "sharing" || rows[0][csvShare] != "share" || got["ml/hami-a/main@GPU-hami-a"] != [2]string{"hami", "0.25"} ||
		got["ml/whole-e/main@GPU-whole-e"] != [2]string{"exclusive", ""} {
		t.Errorf("CSV header %v, holdings %v", rows[0], got)
	}
}
