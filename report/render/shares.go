package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gputally/gputally/report/analysis"
)

// The holdings of GPU shares: HAMi's and KAI-Scheduler's, and DRA claims
// that share a GPU by consumed capacity — what each held of its GPU at its
// last sample and what it cost. A KAI reservation pod is listed when it
// held its GPU for no sharer.

// sharesTitle heads the table.
const sharesTitle = "GPU shares (HAMi, KAI-Scheduler, DRA)"

// sharesNote says what the table's share is.
const sharesNote = "Each holds part of a GPU, not the GPU: the share is what the ledger charged it at its last sample " +
	"(its dominant share of the memory and compute it reserved, by default; docs/cost.md). " +
	"Releasing one frees its share, which the GPU's other holders or new shares can take."

// sharesHeader names the table's columns.
var sharesHeader = []string{"holding", "node", "GPU", "sharing", "share", "GPU-hours held", "busy share", "cost EUR", "idle EUR"}

// sharingName names how a holding shares its GPU, for people.
func sharingName(h *analysis.Holding) string {
	switch {
	case h.KAIReservation():
		return "KAI reservation (no sharer)"
	case h.Sharing == "hami":
		return "HAMi"
	case h.Sharing == "kai":
		return "KAI-Scheduler"
	}
	return "DRA"
}

// shareHoldings returns the holdings of GPU shares (a KAI reservation pod's
// among them), most EUR first.
func shareHoldings(hs []analysis.Holding) []*analysis.Holding {
	var out []*analysis.Holding
	for i := range hs {
		if h := &hs[i]; h.Fractional() {
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b *analysis.Holding) int {
		return cmp.Or(cmp.Compare(b.Totals.CostEUR, a.Totals.CostEUR), cmp.Compare(a.Name(), b.Name()))
	})
	return out
}

// shareRows returns the table's rows.
func shareRows(hs []analysis.Holding) [][]string {
	var rows [][]string
	for _, h := range shareHoldings(hs) {
		share := "–"
		if h.Share > 0 {
			share = pct(h.Share)
		}
		t := h.Totals
		rows = append(rows, []string{h.Name(), orNone(h.Place()), h.UUID, sharingName(h), share,
			hours(t.HeldHours), pct(t.BusyShare), eur(t.CostEUR), eur(t.IdleEUR)})
	}
	return rows
}

// mdShares writes the table, when there are shares.
func mdShares(b *strings.Builder, r *Report) {
	rows := shareRows(r.Holdings)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n\n| %s |\n|---|---|---|---|---:|---:|---:|---:|---:|\n", sharesTitle, sharesNote, strings.Join(sharesHeader, " | "))
	for _, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(mdCells(row), " | "))
	}
	b.WriteString("\n")
}

// csvShareCells fills the sharing and share columns of holding h's row.
func csvShareCells(cells []string, h *analysis.Holding) {
	cells[csvSharing] = h.Sharing
	if h.Share > 0 {
		cells[csvShare] = f64(h.Share)
	}
}
