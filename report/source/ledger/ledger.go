package ledger

import (
	"context"
	"fmt"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// Options are the settings of a Source.
type Options struct {
	// TeamLabel (optional) is a pod label key whose value names the team,
	// read from kube-state-metrics' kube_pod_labels into Dataset.PodTeams.
	TeamLabel string
	// MaxPointsPerQuery bounds the steps one request asks for (at least 2);
	// longer ranges are split into several requests.
	MaxPointsPerQuery int
	// MaxSamplesPerQuery bounds the samples (series × steps) one answer
	// should hold: requests are sized by the series of the previous answer.
	// 0: no bound.
	MaxSamplesPerQuery int
	// QueriesInFlight bounds the requests of one query sent at once; the
	// answers are folded in time order whatever it is, so the dataset does
	// not depend on it. 0 or 1: one at a time. Above 1 the Querier must be
	// safe for concurrent use.
	QueriesInFlight int
	// Progress (optional) receives a line per request.
	Progress engine.Progress
	// ClusterLabel (optional) is the label that names a series' cluster
	// (DefaultClusterLabel): a GPU is its cluster and UUID, a node and a pod
	// their cluster and name. Empty: one cluster.
	ClusterLabel string
	// DedupeLabels (optional) are the labels by which copies of one ledger
	// series differ when the engine delivers it more than once (see
	// source.DefaultDedupeLabels): they are counted once, and the report says so.
	DedupeLabels []string
}

// Source is the source.Source that reads gputally's metrics through an
// engine.Querier: the ledger counters gputally_gpu_seconds_total,
// gputally_cost_eur_total and gputally_energy_joules_total, read exactly
// (increase.go) for the range and the period before it, and gputally_gpu_allocation, gputally_gpu_info,
// kube_pod_labels, DCGM's and gputally's activity and framebuffer gauges.
// The queries are range queries split into requests of bounded size, at most
// QueriesInFlight of them at once; it needs no recording rules. A Source is
// safe for use by one goroutine at a time.
type Source struct {
	q    engine.Querier
	opts Options
}

// New returns the ledger source reading through q.
func New(q engine.Querier, opts Options) *Source { return &Source{q: q, opts: opts} }

// Collect implements Source: it runs every query over (r.Start, r.End]. The
// dataset's Warnings are the annotations the queries returned, and Requests
// the requests made.
func (l *Source) Collect(ctx context.Context, r model.Range) (*model.Dataset, error) {
	run := engine.NewRunner(engine.InclusiveEnd(l.q), engine.Limits{MaxPoints: l.opts.MaxPointsPerQuery, MaxSamples: l.opts.MaxSamplesPerQuery,
		InFlight: l.opts.QueriesInFlight}, l.opts.Progress)
	c := &collector{run: run, teamLabel: l.opts.TeamLabel, dedupe: deduper{l.opts.DedupeLabels}, id: source.NewIdentity(l.opts.ClusterLabel)}
	d, err := c.collect(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := c.dedupe.copies(ctx, run, d, r); err != nil {
		return nil, err
	}
	d.Warnings, d.Requests = run.Warnings(), run.Done()
	return d, nil
}

// hostOf returns a device series' node: its `hostname` label, or the
// `Hostname` that dcgm-exporter up to 4.8.2 and gputally's
// --collector.legacy-hostname-label write. A range that spans the change of
// spelling has two series per device; both name the same node.
func hostOf(m pmodel.Metric) string {
	if h, ok := m["hostname"]; ok {
		return string(h)
	}
	return string(m["Hostname"])
}

// collector runs the report's queries.
type collector struct {
	id        source.Identity
	run       *engine.Runner
	teamLabel string
	dedupe    deduper
	win       engine.Windows // how the engine bounds a range selector (engine.ProbeWindows)
	leftOut   leftOut        // gauge samples out of their range
	stretch   int            // step buckets the ledger is read in at a time; 0: a week's (stretch.go)
}

func (c *collector) plan(d *model.Dataset) {
	first := d.Start.Add(d.Step)
	// The window probe; each ledger counter: two queries from the bucket
	// ending at the start, for this period and the previous one (and the
	// second reads of buckets with resets or gaps, counted when planned).
	n := 1 + c.run.Requests(first, d.End, d.Step) + 2*ledgerCounters*c.run.Requests(d.Start, d.End, d.Step) +
		2*ledgerCounters*c.run.Requests(d.Start.Add(-d.End.Sub(d.Start)), d.Start, d.Step)
	n += c.run.Requests(first, d.End, d.Step) // migModes
	n += c.endRequests(d)
	n += c.concurrencyRequests(d)
	if len(c.dedupe.labels) > 0 {
		n += c.run.Requests(first, d.End, d.Step) // the search for copies
	}
	if c.teamLabel != "" {
		n += c.run.Requests(first, d.End, d.Step)
	}
	n += source.WaitingRequests(c.run, d)
	n += 5 * c.run.Requests(d.Start.Add(d.Resolution), d.End, d.Resolution)
	c.run.Plan(n)
}

// collect runs every query over (r.Start, r.End], in this order: the window
// probe, the ledger, the previous period's ledger, the allocations, the MIG
// modes, the pods' team labels, the pods that waited for a node
// (kube-state-metrics), the activity and framebuffer samples, the last
// bucket's ledger and the time-sliced shares (end.go) and the devices busy at
// once (concurrency.go).
func (c *collector) collect(ctx context.Context, r model.Range) (*model.Dataset, error) {
	d := model.NewDataset(r)
	c.plan(d)
	defer c.run.Finish()
	note, err := c.probeWindows(ctx, d.End)
	if err != nil {
		return nil, err
	}
	if note != "" {
		d.Notes = append(d.Notes, note)
	}
	for _, step := range []func(context.Context, *model.Dataset) error{
		c.thisPeriod, c.previous, c.allocations, c.migModes, c.podTeams, c.waiting, c.usage, c.lastBucket, c.shares, c.concurrency,
	} {
		if err := step(ctx, d); err != nil {
			return nil, err
		}
	}
	d.Notes = append(d.Notes, c.leftOut.notes()...)
	return d, nil
}

// allocations fills d.Alloc from gputally_gpu_allocation.
func (c *collector) allocations(ctx context.Context, d *model.Dataset) error {
	return c.run.Run(ctx, "allocation", fmt.Sprintf(
		"max by (%s, resource, sharing) (max_over_time(gputally_gpu_allocation[%s]))", c.id.ByDevice(), c.win.Of(d.Step)),
		d.Start.Add(d.Step), d.End, d.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				d.Alloc[c.id.HoldingOf(s.Metric)] = model.Alloc{Resource: string(s.Metric["resource"]), Sharing: string(s.Metric["sharing"])}
			}
		})
}

// probeWindows asks the engine how it bounds a range selector
// (engine.ProbeWindows) and reads every window so from then on.
func (c *collector) probeWindows(ctx context.Context, at time.Time) (note string, err error) {
	c.win, note, err = engine.ProbeWindows(ctx, c.run, at)
	return note, err
}

// podTeams fills d.PodTeams (source.ReadPodTeams).
func (c *collector) podTeams(ctx context.Context, d *model.Dataset) error {
	return source.ReadPodTeams(ctx, c.run, c.id, c.win, c.teamLabel, d)
}

// waiting fills d.Waiting (source.ReadWaiting).
func (c *collector) waiting(ctx context.Context, d *model.Dataset) error {
	return source.ReadWaiting(ctx, c.run, c.id, c.win, d)
}

// migModes fills d.MIGMode from the physical GPUs' gputally_gpu_info series:
// per GPU, the mig_mode of the series with the latest sample in the range.
func (c *collector) migModes(ctx context.Context, d *model.Dataset) error {
	latest := map[model.GPUKey]pmodel.Time{}
	return c.run.Run(ctx, "gputally_gpu_info", fmt.Sprintf(
		`max by (%s) (max_over_time(gputally_gpu_info{GPU_I_ID=""}[%s]))`, c.id.By("UUID, GPU_I_ID, mig_mode"), c.win.Of(d.Step)),
		d.Start.Add(d.Step), d.End, d.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				if s.Metric["GPU_I_ID"] != "" || len(s.Values) == 0 {
					continue
				}
				g := c.id.GPUOf(s.Metric)
				if t := s.Values[len(s.Values)-1].Timestamp; t >= latest[g] {
					latest[g] = t
					d.MIGMode[g] = string(s.Metric["mig_mode"])
				}
			}
		})
}
