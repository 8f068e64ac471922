package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// eur, hours and pct format EUR, hours and shares as the model does.
func eur(x float64) string   { return model.FormatEUR(x) }
func hours(x float64) string { return model.FormatHours(x) }
func pct(x float64) string   { return model.FormatPct(x) }

func mib(has bool, x float64) string {
	if !has {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func activity(u analysis.Usage) string {
	if !u.HasActivity {
		return "–"
	}
	return pct(u.P95Activity)
}

// change formats the relative change from prev to cur.
func change(cur, prev float64) string {
	switch {
	case prev == 0 && cur == 0:
		return "±0 %"
	case prev == 0:
		return "new"
	}
	return fmt.Sprintf("%+.1f %%", 100*(cur-prev)/prev)
}

func period(r *Report) string {
	return r.Start.Format(time.RFC3339) + " – " + r.End.Format(time.RFC3339)
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
