package ledger

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// deduper counts each ledger series once: its reads take the max over the
// copies of a series that differ only in its labels (copies of one counter
// scraped twice differ by at most one scrape's increment, and their max is a
// counter too). The zero value (no labels) reads every series as it is.
type deduper struct {
	labels []string
}

// read wraps a selector expression of the ledger's counters.
func (d deduper) read(expr string) string {
	if len(d.labels) == 0 {
		return expr
	}
	return fmt.Sprintf("max without (%s) (%s)", strings.Join(d.labels, ", "), expr)
}

// kept returns the first of the labels read aggregates away that series m
// still carries, or "": an engine never answers `max without (l)` with l.
func (d deduper) kept(m pmodel.Metric) string {
	for _, l := range d.labels {
		if m[pmodel.LabelName(l)] != "" {
			return l
		}
	}
	return ""
}

// copies finds ledger series delivered more than once over (r.Start, r.End]
// and says so in d.Notes, naming the labels by which the copies differ and
// their values: one query at the range's step, and a second when it finds
// copies.
func (dd deduper) copies(ctx context.Context, run *engine.Runner, d *model.Dataset, r model.Range) error {
	if len(dd.labels) == 0 {
		return nil
	}
	labels := strings.Join(dd.labels, ", ")
	values := map[string]map[string]bool{} // label → values seen on copies
	copies := 0
	err := run.Run(ctx, "duplicate ledger series", fmt.Sprintf(
		"count without (%s) (last_over_time(gputally_gpu_seconds_total[%s])) > 1",
		labels, pmodel.Duration(r.Step)), r.Start.Add(r.Step), r.End, r.Step, func(m pmodel.Matrix) {
		copies = max(copies, len(m))
	})
	if err != nil || copies == 0 {
		return err
	}
	run.Plan(run.Requests(r.Start.Add(r.Step), r.End, r.Step)) // not in the plan: only when there are copies
	err = run.Run(ctx, "labels of duplicate ledger series", fmt.Sprintf(
		"group by (%s) (last_over_time(gputally_gpu_seconds_total[%s]))", labels, pmodel.Duration(r.Step)),
		r.Start.Add(r.Step), r.End, r.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				for _, l := range dd.labels {
					if values[l] == nil {
						values[l] = map[string]bool{}
					}
					values[l][string(s.Metric[pmodel.LabelName(l)])] = true
				}
			}
		})
	if err != nil {
		return err
	}
	var differ []string
	for _, l := range dd.labels {
		if len(values[l]) > 1 {
			vs := make([]string, 0, len(values[l]))
			for v := range values[l] {
				vs = append(vs, fmt.Sprintf("%q", v))
			}
			slices.Sort(vs)
			differ = append(differ, l+" "+strings.Join(vs, ", "))
		}
	}
	d.Notes = append(d.Notes, fmt.Sprintf("the engine delivered up to %d ledger series more than once, differing in %s (an HA pair without deduplication, or a second scrape job): each counted once",
		copies, strings.Join(differ, "; ")))
	return nil
}
