package model

import (
	"cmp"
	"fmt"
	"strconv"
	"time"
)

// HoursPerMonth is the month every EUR/month figure is scaled to: the
// calendar average, 365.25 days × 24 h ÷ 12 = 730.5 h (docs/report.md).
const HoursPerMonth = 365.25 * 24 / 12

// MonthFactor scales an amount over (start, end] to a month of HoursPerMonth
// hours; 0 for an empty range.
func MonthFactor(start, end time.Time) float64 {
	h := end.Sub(start).Hours()
	if h <= 0 {
		return 0
	}
	return HoursPerMonth / h
}

// FormatEUR formats an amount of EUR with 2 decimals.
func FormatEUR(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// FormatHours formats hours (device-hours, GPU-hours) with 1 decimal.
func FormatHours(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// FormatPct formats a share (0–1) as a percentage with 1 decimal, "12.5 %".
func FormatPct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

// CompareGPUIndex orders GPU indexes (the `gpu` label) as numbers: "2"
// before "10".
func CompareGPUIndex(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) }
