// Package history runs a simulated node in virtual time — the real sampler,
// pod attribution, process accounting, ledger and collector, driven by a
// virtual clock instead of sleeping — and hands what Prometheus would have
// scraped to a Sink: WriteFleet renders it as OpenMetrics with timestamps, for
// `promtool tsdb create-blocks-from openmetrics`; Run and RunFleet hand the
// gathered families to any other sink, such as the report's in-memory store for
// `report --demo`, without a text round trip.
package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
)

// Options configure a run.
type Options struct {
	Scenario *sim.Scenario
	Seed     int64     // 0: the scenario's
	Start    time.Time // first sample; default: Duration before now, at a whole minute
	Duration time.Duration
	// SampleInterval is the sampler's tick (the ledger integrates at it);
	// ScrapeInterval how often the metrics are written. Defaults 10s and 30s.
	SampleInterval, ScrapeInterval time.Duration
	// AttributionInterval is the most virtual time between two kubelet
	// refreshes; default 5m. The kubelet is asked again, besides, at the first
	// sample after each change of the scenario's pods and jobs, at every sample
	// while it is down, and at the last sample before it goes down — so its
	// answer is as fresh as a real exporter's at the sample interval.
	AttributionInterval time.Duration
	// StaleAfter is how long the attribution client keeps the last good
	// holders while the kubelet does not answer; default
	// attribution.DefaultStaleAfter, as the exporter's flag.
	StaleAfter time.Duration
	Book       *cost.Book // default cost.Default()
	// LegacyHostnameLabel writes the node's label as `Hostname`, as the
	// exporter's --collector.legacy-hostname-label does.
	LegacyHostnameLabel bool
	// Flavor is the form the scrapes are written in: FlavorGputally (also
	// "") or FlavorDCGMExporter (dcgmexporter.go).
	Flavor string
	// DCGMExporter leaves out of the dcgm-exporter flavour what clusters
	// often lack (FlavorDCGMExporter only).
	DCGMExporter DCGMExporterOptions
	// KubeStateMetrics writes kube-state-metrics' pod and node series
	// (kubestate.go) in the gputally flavour too, as it does by itself for a
	// scenario whose pods wait; RunFleet sets it for every node of a fleet
	// in which one node's pods wait: kube-state-metrics sees the cluster.
	KubeStateMetrics bool
	// Names are the names of the DCGM_* series (names.go): dcgm-exporter
	// 4.8's (the zero value), 4.10's, a rolling upgrade from one to the other,
	// or both side by side.
	Names Names
	// ScrapeJitter, when not 0, stores some scrapes late by up to it, as a
	// loaded scrape loop does (jitter.go); at least 1ms and under half the
	// scrape interval.
	ScrapeJitter time.Duration
	Logger       *slog.Logger
	// Progress (optional) is called on the run's goroutine after every whole
	// hour of virtual time and at the end, with the virtual time simulated so
	// far and the run's Duration.
	Progress func(done, total time.Duration)
}

// Sink receives the scrapes of a run, in time order, on one goroutine (not
// the run's). mfs are the families gathered from the collector at t, as a
// registry gathers them for an HTTP scrape; a sink may keep them, and must not
// modify the label pairs, which are shared between scrapes. A sample whose
// value is NaN (a reading that is absent) is not one Prometheus would store:
// the run drops it before the sink sees the families.
type Sink interface {
	AddScrape(mfs []*dto.MetricFamily, t time.Time) error
}

// Result summarises a run.
type Result struct {
	Start, End time.Time
	Samples    int // samples written
	// Restarts counts the exporter restarts that `exporter: stopped` and
	// `exporter: restarted` events made.
	Restarts int
	// Totals are the ledger's totals per series at End, summed over exporter
	// restarts and over series that ended and came back: every device-second
	// and EUR the ledgers accounted, sorted by GPU, device, holder and state.
	Totals []cost.Total
	Rates  []cost.GPURate // the rates in force at the last sample
}

// Run runs the node of opts in virtual time and hands every scrape to sink.
//
// The scenario's faults play as they would on a node: inside a `kubelet: down`
// window the kubelet fails every call and the real attribution client keeps its
// last holders until StaleAfter, then has none; inside a `backend: failing`
// window every sample fails; inside an `exporter: stopped` window nothing is
// sampled or scraped, and the exporter then starts again with a new ledger,
// attribution client and process resolver, so its counters start from 0. At an
// `exporter: restarted` event a new exporter process takes the next sample,
// counters from 0, without a gap in samples or scrapes; inside a `scrape:
// missing` window the exporter runs on but no scrape is written; at a `mig`
// event the backend's inventory changes, the sampler reads it again and hands
// its devices to the attribution client, and the pods on instances that went
// have ended.
func Run(ctx context.Context, opts Options, sink Sink) (Result, error) {
	if err := opts.defaults(); err != nil {
		return Result{}, err
	}
	node, err := newNode(ctx, &opts)
	if err != nil {
		return Result{}, err
	}
	defer node.close()
	switch {
	case opts.Flavor == FlavorDCGMExporter:
		sink = newDCGMExporterSink(sink, node.backend, opts.DCGMExporter, opts.Names, opts.Start)
	case opts.KubeStateMetrics || opts.Scenario.Waits():
		sink = &kubeStateSink{sink: sink, ksm: newKubeStateWriter(node.backend, true)}
	}
	if opts.ScrapeJitter > 0 {
		sink = &jitterSink{sink: sink, most: opts.ScrapeJitter, seed: cmp.Or(opts.Seed, opts.Scenario.Seed)}
	}
	// Scrapes are gathered and handed to the sink by a second goroutine while
	// the next samples are taken: each scrape reads the snapshot it was handed.
	scraper := newScraper(collector.Node{Hostname: node.backend.Hostname(), LegacyHostnameLabel: opts.LegacyHostnameLabel}, opts.Names, opts.Start, sink)
	defer scraper.stop()

	res := Result{Start: opts.Start, End: opts.Start.Add(opts.Duration)}
	var sums tally
	var rates []cost.GPURate
	nextHour := opts.Start.Add(time.Hour)
	for t := opts.Start; !t.After(res.End); t = t.Add(opts.SampleInterval) {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if opts.Progress != nil && !t.Before(nextHour) && t.Before(res.End) {
			opts.Progress(t.Sub(opts.Start).Truncate(time.Hour), opts.Duration)
			nextHour = nextHour.Add(time.Hour)
		}
		node.clock.now = t
		snap, started, err := node.tick(ctx, t)
		if err != nil {
			return Result{}, err
		}
		if snap == nil {
			continue // the exporter is stopped
		}
		if started {
			sums.restart() // a new ledger: every series starts again from 0
		}
		sums.add(snap.Totals)
		rates = snap.Rates
		// Inside a `scrape: missing` window Prometheus did not scrape: the
		// exporter ran on, but nothing is written.
		if node.scrapeDue(t) && !node.backend.ScrapeMissing(t) {
			scraper.scrape(snap)
		}
	}
	if err := scraper.stop(); err != nil {
		return Result{}, err
	}
	if opts.Progress != nil {
		opts.Progress(opts.Duration, opts.Duration)
	}
	res.Samples, res.Restarts = scraper.samples, max(node.starts-1, 0)
	res.Totals, res.Rates = sums.totals(), rates
	return res, nil
}

func (o *Options) defaults() error {
	if o.Scenario == nil {
		o.Scenario = sim.Default()
	}
	if o.Duration <= 0 {
		return fmt.Errorf("duration must be positive, got %s", o.Duration)
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = 10 * time.Second
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = 30 * time.Second
	}
	if o.AttributionInterval == 0 {
		o.AttributionInterval = 5 * time.Minute
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = attribution.DefaultStaleAfter
	}
	if o.SampleInterval <= 0 || o.ScrapeInterval <= 0 || o.AttributionInterval <= 0 || o.StaleAfter <= 0 {
		return errors.New("sample, scrape and attribution intervals and stale-after must be positive")
	}
	if o.ScrapeInterval < o.SampleInterval {
		return fmt.Errorf("scrape interval %s is shorter than the sample interval %s", o.ScrapeInterval, o.SampleInterval)
	}
	if o.Start.IsZero() {
		o.Start = time.Now().Add(-o.Duration).Truncate(time.Minute)
	}
	if o.Book == nil {
		o.Book = cost.Default()
	}
	if o.Flavor != "" && o.Flavor != FlavorGputally && o.Flavor != FlavorDCGMExporter {
		return fmt.Errorf("flavor %q: want %s or %s", o.Flavor, FlavorGputally, FlavorDCGMExporter)
	}
	if o.DCGMExporter != (DCGMExporterOptions{}) && o.Flavor != FlavorDCGMExporter {
		return fmt.Errorf("what the dcgm-exporter flavour leaves out applies to it alone, not to flavor %q", o.Flavor)
	}
	if err := o.Names.check(cmp.Or(o.Flavor, FlavorGputally), o.Duration); err != nil {
		return err
	}
	if sh := o.DCGMExporter.Shapes; sh != nil {
		if err := sh.Check(); err != nil {
			return fmt.Errorf("dcgm-exporter shapes: %w", err)
		}
		if sh.Names1x && cmp.Or(o.Names.Mode, NamesLegacy) != NamesLegacy {
			return fmt.Errorf("dcgm-exporter shapes: 1.x names are 4.8's renamed, not names %q's", o.Names.Mode)
		}
	}
	if o.ScrapeJitter != 0 && (o.ScrapeJitter < time.Millisecond || 2*o.ScrapeJitter >= o.ScrapeInterval) {
		return fmt.Errorf("scrape jitter %s must be 0, or at least 1ms and under half the scrape interval %s", o.ScrapeJitter, o.ScrapeInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// scraper gathers the metrics of handed snapshots, in order, on its own
// goroutine, and hands them to a Sink on a third, so that sampling, gathering
// and writing overlap: each is about a third of a run's CPU.
type scraper struct {
	snaps   chan *collector.Snapshot
	done    chan error
	err     error
	once    bool
	samples int // samples handed over, NaN excluded; read after stop
}

// gathered is one scrape on its way to the sink.
type gathered struct {
	mfs []*dto.MetricFamily
	t   time.Time
}

// pinned is a SnapshotSource of the snapshot being scraped; only the scraper's
// goroutine sets it, between gathers.
type pinned struct{ snap *collector.Snapshot }

func (p *pinned) Snapshot() *collector.Snapshot { return p.snap }

func newScraper(node collector.Node, names Names, start time.Time, sink Sink) *scraper {
	s := &scraper{snaps: make(chan *collector.Snapshot, 8), done: make(chan error, 1)}
	src := &pinned{}
	var cols [2]*collector.Collector // per dcgmnames.Naming, made when first needed
	pairs := map[[2]string]*dto.LabelPair{}
	gather := func(snap *collector.Snapshot) []*dto.MetricFamily {
		ns := names.at(start, snap.Time)
		var mfs [2][]*dto.MetricFamily
		for i, n := range ns {
			if cols[n] == nil {
				node.Names = n
				cols[n] = collector.NewCollector(src, node, func() time.Time { return src.snap.Time })
			}
			mfs[i] = cols[n].Gather()
		}
		if len(ns) == 1 {
			return mfs[0]
		}
		return sideBySide(mfs[0], mfs[1], pairs)
	}
	scrapes := make(chan gathered, 8)
	go func() {
		defer close(scrapes)
		for snap := range s.snaps {
			src.snap = snap
			scrapes <- gathered{gather(snap), snap.Time}
		}
	}()
	go func() {
		var err error
		for g := range scrapes {
			if err != nil {
				continue // drain after a failure
			}
			s.samples += dropNaN(g.mfs)
			err = sink.AddScrape(g.mfs, g.t)
		}
		s.done <- err
	}()
	return s
}

// scrape hands snap to the scraper; stop reports what failed.
func (s *scraper) scrape(snap *collector.Snapshot) { s.snaps <- snap }

// stop waits for the handed snapshots to be written and returns the sink's
// error. It may be called more than once.
func (s *scraper) stop() error {
	if !s.once {
		s.once = true
		close(s.snaps)
		s.err = <-s.done
	}
	return s.err
}

// virtualClock is the time of the run; only its goroutine reads and sets it.
// Nothing runs on its own in virtual time, so it makes no tickers.
type virtualClock struct{ now time.Time }

func (c *virtualClock) Now() time.Time { return c.now }

func (c *virtualClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

// dropNaN removes the samples whose value is NaN from mfs and returns how
// many samples are left.
func dropNaN(mfs []*dto.MetricFamily) int {
	n := 0
	for _, mf := range mfs {
		keep := mf.Metric[:0]
		for _, m := range mf.Metric {
			if !math.IsNaN(value(mf.GetType(), m)) {
				keep = append(keep, m)
			}
		}
		clear(mf.Metric[len(keep):])
		mf.Metric = keep
		n += len(keep)
	}
	return n
}

// value returns the value of m, a sample of a family of type t: its counter's,
// gauge's or untyped value.
func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}
