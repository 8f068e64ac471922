// Package analysis turns a model.Dataset into the report's figures: totals
// of device-hours and EUR per fleet, team, namespace, GPU model and node
// (with the previous period's), per holding with its activity and
// framebuffer statistics (p95 activity, peak and p99 framebuffer), the
// timeline and hour-of-week heatmap, the coverage of the range (missing and
// unknown device-hours, gaps, partial reports) and the faults (broken GPUs,
// unknown time that blocks advice).
//
// It makes no query and decides no saving: it reads model only, and the
// advice and render packages read its Result.
package analysis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// TeamMap names the team of a namespace; team.Map, read from the team
// map file, is one. It must be safe for concurrent reads.
type TeamMap interface {
	Team(namespace string) (string, bool)
}

// Team returns the team of holding k's holder: its pod's team label
// (d.PodTeams), else the team teams maps its namespace to, else the
// namespace. teams may be nil.
func Team(d *model.Dataset, teams TeamMap, k model.HoldingKey) string {
	return PodTeam(d, teams, k.Pod())
}

// PodTeam returns the team of pod p: its team label (d.PodTeams), else the
// team teams maps its namespace to, else the namespace. teams may be nil.
func PodTeam(d *model.Dataset, teams TeamMap, p model.PodKey) string {
	if t, ok := d.PodTeams[p]; ok {
		return t
	}
	if teams != nil {
		if t, ok := teams.Team(p.Namespace); ok {
			return t
		}
	}
	return p.Namespace
}

// Result is the analysis of one range: a plain value, read by the advice and
// the renderers, safe for concurrent reads. Hours are device-hours (a MIG
// instance or a time-sliced share counts as its part of a GPU), amounts EUR
// over the range.
type Result struct {
	// Start and End are the period reported on: Start is later than the
	// range asked for when the history begins inside it (history.go).
	Start, End time.Time
	Range      string // the length of the range asked for, e.g. "1w"
	Step       string // the step bucket, e.g. "1h"
	// Partial is true when more than PartialAbove of the device-hours the
	// range should hold are missing (no data) or unknown; Coverage says where.
	Partial  bool
	Coverage Coverage
	Warnings []string
	Fleet    Group
	GPUs     int // physical GPUs seen in the range
	// Clusters are the clusters the GPUs are in, sorted, by the report's
	// cluster label; empty when no GPU has one.
	Clusters   []string
	Teams      []Group
	Namespaces []Group
	Models     []Group
	Nodes      []Group
	// PerCluster are the totals of each cluster (Name the cluster, "" for
	// GPUs without the label among others with it); empty without a
	// cluster label.
	PerCluster []Group
	Holdings   []Holding
	// BrokenGPUs are the GPUs that fell off the bus: repair or replace them.
	BrokenGPUs []BrokenGPU
	Timeline   []TimelinePoint
	// Waiting is the GPU demand that waited for a node (waiting.go).
	Waiting Waiting
	// Heatmap is the mean device activity (0–1) by weekday (0 = Sunday) and
	// hour of day, UTC; -1 where there was no data.
	Heatmap [7][24]float64
	// Sampling is the source's statement of its grid's resolution; empty
	// for the ledger's exact counters (model.Dataset.Sampling).
	Sampling string
	// Prices are the price book's figures the rental comparisons and the
	// emissions used; nil when the analysis had no book (WithBook).
	Prices *Prices
}

// MonthFactor scales an amount over the range to a month of
// model.HoursPerMonth hours.
func (r *Result) MonthFactor() float64 { return model.MonthFactor(r.Start, r.End) }

// errNoDataFmt is the message when the range holds no gputally data at all.
const errNoDataFmt = "no GPU data: no gputally_gpu_seconds_total samples between %s and %s (is the exporter scraped, and is the range right?)"

// Analyze turns the dataset into the analysis; teams (may be nil) names the
// teams of namespaces. It fails when there is no data, and when the coverage
// is partial unless allowPartial: then the result is marked Partial and its
// first warning says what is missing. It only reads d.
func Analyze(d *model.Dataset, teams TeamMap, allowPartial bool, opts ...Option) (*Result, error) {
	r := &Result{Start: d.Start.UTC(), End: d.End.UTC(), Range: pmodel.Duration(d.End.Sub(d.Start)).String(), Step: pmodel.Duration(d.Step).String()}
	if len(d.Ledger) == 0 {
		return nil, fmt.Errorf(errNoDataFmt, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339))
	}
	start, first := historyStart(d)
	r.Start = start.UTC()
	r.Coverage = coverageOf(d)
	for _, gap := range []struct {
		partial bool
		msg     string
	}{
		{r.Coverage.partial(), r.Coverage.summary()},
		{len(d.Warnings) > 0, engineGaps(d.Warnings)},
	} {
		if gap.partial {
			r.Partial = true
			r.Warnings = append(r.Warnings, gap.msg)
		}
	}
	// The source's notes say what it could not read: why time is unknown.
	r.Warnings = append(r.Warnings, d.Notes...)
	if r.Partial && !allowPartial {
		return nil, fmt.Errorf("%s (pass --allow-partial to report on what there is)", strings.Join(r.Warnings, "; "))
	}
	if start.After(d.Start) {
		r.Warnings = append(r.Warnings, historyWarning(d, start))
	}
	r.Sampling = d.Sampling
	r.Timeline = timeline(d)[first:]
	r.Waiting = waiting(d, teams)
	r.Waiting.Timeline = r.Waiting.Timeline[min(first, len(r.Waiting.Timeline)):]
	r.Heatmap = heatmap(d)
	a := &analyzer{teams: teams}
	for _, o := range opts {
		o(a)
	}
	a.groups(r, d)
	a.ownOrRent(r.Models)
	r.Prices = a.prices(d)
	r.Holdings = a.holdings(d)
	r.BrokenGPUs = brokenGPUs(d)
	if w := unlabelledWarning(d); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	r.Warnings = append(r.Warnings, unknownNodeWarnings(r)...)
	r.Warnings = append(r.Warnings, unknownHoldingWarnings(r)...)
	return r, nil
}

// engineGaps says, in the engine's words, that answers of the source's
// backend were partial or incomplete (model.Dataset.Warnings): the money of
// such a report is not all there, however complete its coverage looks.
func engineGaps(words []string) string {
	seen := map[string]bool{}
	var distinct []string
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			distinct = append(distinct, strconv.Quote(w))
		}
	}
	more := ""
	if len(distinct) > 3 {
		more = fmt.Sprintf(" and %d more", len(distinct)-3)
		distinct = distinct[:3]
	}
	return fmt.Sprintf("the engine answered %d requests with data missing: %s%s", len(words), strings.Join(distinct, "; "), more)
}

// analyzer holds the analysis' settings.
type analyzer struct {
	teams TeamMap
	book  *cost.Book // nil: no rental prices, no carbon intensity
}

// timeline is the fleet's device-hours per step bucket.
func timeline(d *model.Dataset) []TimelinePoint {
	var out []TimelinePoint
	for i := range d.Timeline {
		out = append(out, TimelinePoint{
			Time:             d.Start.Add(time.Duration(i+1) * d.Step).UTC(),
			BusyHours:        d.Timeline[i][model.StateBusy] / 3600,
			IdleHours:        d.Timeline[i][model.StateIdle] / 3600,
			UnallocatedHours: d.Timeline[i][model.StateUnallocated] / 3600,
			LostHours:        d.Timeline[i][model.StateLost] / 3600,
			UnknownHours:     d.Timeline[i][model.StateUnknown] / 3600,
			Missing:          !d.Present[i],
		})
	}
	return out
}

// heatmap is the mean device activity by weekday and hour; -1 without data.
func heatmap(d *model.Dataset) [7][24]float64 {
	var out [7][24]float64
	for wd := range 7 {
		for h := range 24 {
			c := d.Heat[wd][h]
			out[wd][h] = -1
			if c.N > 0 {
				out[wd][h] = c.Sum / float64(c.N)
			}
		}
	}
	return out
}

// groups fills r's fleet, teams, namespaces, models and nodes, with the
// previous period's totals when d has one, and r.GPUs.
func (a *analyzer) groups(r *Result, d *model.Dataset) {
	fleet, teams, namespaces, models, nodes, clusters := groupSet{}, groupSet{}, groupSet{}, groupSet{}, groupSet{}, groupSet{}
	gpus := map[model.GPUKey]bool{}
	// groupsOf lists the groups an entry counts in: the fleet, its model and
	// its node (in its cluster), and for a held entry its team and namespace.
	groupsOf := func(k model.HoldingKey, e *model.LedgerEntry) []*groupAcc {
		gs := []*groupAcc{fleet.get(groupKey{}), models.get(groupKey{name: e.Model}), nodes.get(groupKey{k.Dev.Cluster, e.Host}),
			clusters.get(groupKey{name: k.Dev.Cluster})}
		if k.Holder != (model.HolderKey{}) {
			gs = append(gs, teams.get(groupKey{name: Team(d, a.teams, k)}), namespaces.get(groupKey{name: k.Holder.Namespace}))
		}
		return gs
	}
	for _, k := range model.SortedKeys(d.Ledger) {
		e := d.Ledger[k]
		gpus[k.Dev.GPU()] = true
		act, fb := d.Activity[k], d.FBMiB[k]
		grid := a.grid(k.Dev.Cluster)
		for _, g := range groupsOf(k, e) {
			g.totals.add(e)
			g.carbon.add(e, grid)
			g.kinds = g.kinds.With(e.Kind)
			if k.Holder != (model.HolderKey{}) {
				g.act.Merge(act)
				g.fb.Merge(fb)
			}
		}
	}
	for _, k := range model.SortedKeys(d.Previous) {
		e := d.Previous[k]
		grid := a.grid(k.Dev.Cluster)
		for _, g := range groupsOf(k, e) {
			g.prev.add(e)
			g.prevCarbon.add(e, grid)
		}
	}
	withPrev := d.Previous != nil
	r.Fleet = fleet.groups(withPrev)[0]
	r.Fleet.Name = "fleet"
	r.GPUs = len(gpus)
	for _, c := range d.Clusters() {
		if c != "" {
			r.Clusters = append(r.Clusters, c)
		}
	}
	r.Teams = teams.groups(withPrev)
	r.Namespaces = namespaces.groups(withPrev)
	r.Models = models.groups(withPrev)
	r.Nodes = nodes.groups(withPrev)
	if len(r.Clusters) > 0 {
		r.PerCluster = clusterGroups(clusters, withPrev)
	}
}
