package analysis

import (
	"fmt"
	"time"

	"github.com/gputally/gputally/report/model"
)

// The history there is (docs/report.md, "Coverage and partial reports"): an
// engine whose retention is shorter than the range, or a fleet younger than
// it, holds no data before some time in it. That is not a gap: the report
// covers the history there is, from when it begins to the range's end,
// says so, and scales every per-month figure by the hours it covers. A GPU
// counts from the first step bucket in which any of its series is seen
// (firstSeen), so that a node added in the range is not missing before it
// was there.

// historyStart returns when the history d holds begins, and its first step
// bucket with data: the end of that bucket less the most device-seconds any
// GPU has in it (at most the bucket: a counter's first reading may hold
// seconds from before it), since the history may begin inside it — or
// d.Start, when that is less than gapTolerance of a step later (scrape
// jitter).
func historyStart(d *model.Dataset) (time.Time, int) {
	first := 0
	for first < d.Buckets-1 && !d.Present[first] {
		first++
	}
	seen := 0.0
	for _, g := range d.GPUs {
		seen = max(seen, min(g.Seen[first], d.Step.Seconds()))
	}
	start := d.Start.Add(time.Duration(first+1)*d.Step - time.Duration(seen*float64(time.Second))).Truncate(time.Second)
	if start.Sub(d.Start) <= time.Duration(gapTolerance*float64(d.Step)) {
		return d.Start, first
	}
	return start, first
}

// historyWarning says that the range begins before the history, from when
// the report covers it, and how its per-month figures are scaled.
func historyWarning(d *model.Dataset, start time.Time) string {
	return fmt.Sprintf("the engine holds no data before %s (its retention, or when the history begins): the report covers %s – %s, %s of the %s hours asked for, and every per-month figure is scaled by the hours covered",
		start.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), d.End.UTC().Format(time.RFC3339),
		model.FormatHours(d.End.Sub(start).Hours()), model.FormatHours(d.End.Sub(d.Start).Hours()))
}

// firstSeen returns the first step bucket in which GPU g has any seconds;
// len(g.Seen) when none.
func firstSeen(g *model.GPUSeen) int {
	for b, s := range g.Seen {
		if s > 0 {
			return b
		}
	}
	return len(g.Seen)
}
