// Package history runs a simulated node in virtual time — the real sampler,
// pod attribution, process accounting, ledger and collector, driven by a
// virtual clock instead of sleeping — and writes what Prometheus would have
// scraped as OpenMetrics with timestamps, for `promtool tsdb
// create-blocks-from openmetrics` or an embedded PromQL engine.
package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/sim"
	"github.com/gpuledger/gpuledger/cost"
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
	// AttributionInterval is the virtual time between two kubelet refreshes; default 5m.
	AttributionInterval time.Duration
	Book                *cost.Book // default cost.Default()
	Logger              *slog.Logger
}

// Result summarises a run.
type Result struct {
	Start, End time.Time
	Samples    int            // samples written
	Totals     []cost.Total   // the ledger's totals at End
	Rates      []cost.GPURate // the rates in force at End
}

// Write runs the node of opts in virtual time and writes its metrics to w as
// OpenMetrics, one metric family after another, ending with "# EOF".
func Write(ctx context.Context, w io.Writer, opts Options) (Result, error) {
	if err := opts.defaults(); err != nil {
		return Result{}, err
	}
	backend, err := sim.New(opts.Scenario, sim.Options{Seed: opts.Seed, Start: opts.Start})
	if err != nil {
		return Result{}, err
	}
	kubelet, err := sim.StartKubelet(backend)
	if err != nil {
		return Result{}, err
	}
	defer kubelet.Stop()
	inv, err := backend.Inventory(ctx)
	if err != nil {
		return Result{}, err
	}
	clock := &virtualClock{now: opts.Start}
	client, err := attribution.New(attribution.Config{Socket: kubelet.Socket, Clock: clock, Logger: opts.Logger,
		Slices: attribution.NewStaticSlices(nil, backend.ResourceSlices())})
	if err != nil {
		return Result{}, err
	}
	defer client.Close()
	client.SetDevices(collector.AttributionDevices(inv))
	client.SetMIGLayout(collector.MIGLayout(inv))
	var models []cost.GPUModel
	for _, g := range inv.GPUs {
		models = append(models, cost.GPUModel{UUID: g.UUID, Model: g.Model})
	}
	book, err := cost.NewStore(opts.Book, models)
	if err != nil {
		return Result{}, err
	}
	ledger := cost.NewLedger(book)
	sampler := collector.NewSampler(backend, collector.SamplerOptions{
		Interval: opts.SampleInterval, Now: clock.Now, Logger: opts.Logger,
		Holders: client, Ledger: ledger,
		Processes: collector.NewPodProcesses(attribution.NewProcessResolver(attribution.ProcessConfig{
			ProcRoot: kubelet.ProcRoot, PodLogsDir: kubelet.PodLogsDir, Clock: clock, Logger: opts.Logger,
		})),
	})
	out, err := newFamilyWriter()
	if err != nil {
		return Result{}, err
	}
	defer out.close()
	// Scrapes are gathered and written by a second goroutine while the next
	// samples are taken: each scrape reads the snapshot it was handed.
	scraper := newScraper(backend.Hostname(), out)
	defer scraper.stop()
	end := opts.Start.Add(opts.Duration)
	var nextRefresh, nextScrape time.Time
	for t := opts.Start; !t.After(end); t = t.Add(opts.SampleInterval) {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		clock.now = t
		if !t.Before(nextRefresh) {
			if err := client.Refresh(ctx); err != nil {
				return Result{}, fmt.Errorf("simulated kubelet at %s: %w", t.Format(time.RFC3339), err)
			}
			nextRefresh = t.Add(opts.AttributionInterval)
		}
		if err := sampler.Tick(ctx, t); err != nil {
			return Result{}, fmt.Errorf("sample at %s: %w", t.Format(time.RFC3339), err)
		}
		if t.Before(nextScrape) {
			continue
		}
		nextScrape = t.Add(opts.ScrapeInterval)
		scraper.scrape(sampler.Snapshot())
	}
	if err := scraper.stop(); err != nil {
		return Result{}, err
	}
	snap := sampler.Snapshot()
	res := Result{Start: opts.Start, End: end, Samples: out.samples, Totals: snap.Totals, Rates: snap.Rates}
	return res, out.writeTo(w)
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
	if o.SampleInterval <= 0 || o.ScrapeInterval <= 0 || o.AttributionInterval <= 0 {
		return errors.New("sample, scrape and attribution intervals must be positive")
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// scraper gathers the metrics of handed snapshots, in order, on its own
// goroutine, and appends them to a familyWriter.
type scraper struct {
	snaps chan *collector.Snapshot
	done  chan error
	err   error
	once  bool
}

// pinned is a SnapshotSource of the snapshot being scraped; only the scraper's
// goroutine sets it, between gathers.
type pinned struct{ snap *collector.Snapshot }

func (p *pinned) Snapshot() *collector.Snapshot { return p.snap }

func newScraper(hostname string, out *familyWriter) *scraper {
	s := &scraper{snaps: make(chan *collector.Snapshot, 8), done: make(chan error, 1)}
	src := &pinned{}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector.NewCollector(src, hostname, func() time.Time { return src.snap.Time }))
	go func() {
		var err error
		for snap := range s.snaps {
			if err != nil {
				continue // drain after a failure
			}
			src.snap = snap
			var mfs []*dto.MetricFamily
			if mfs, err = reg.Gather(); err != nil {
				err = fmt.Errorf("gather at %s: %w", snap.Time.Format(time.RFC3339), err)
				continue
			}
			err = out.add(mfs, snap.Time)
		}
		s.done <- err
	}()
	return s
}

// scrape hands snap to the scraper; stop reports what failed.
func (s *scraper) scrape(snap *collector.Snapshot) { s.snaps <- snap }

// stop waits for the handed snapshots to be written and returns the first
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

// familyWriter keeps one temporary file per metric family, so a family's
// samples end up contiguous, as OpenMetrics requires, without holding a week of
// samples in memory.
type familyWriter struct {
	dir      string
	families map[string]*family
	samples  int
}

type family struct {
	typ  string
	file *os.File
	buf  *bufio.Writer
}

func newFamilyWriter() (*familyWriter, error) {
	dir, err := os.MkdirTemp("", "gpuledger-history")
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &familyWriter{dir: dir, families: map[string]*family{}}, nil
}

func (fw *familyWriter) close() {
	for _, f := range fw.families {
		f.file.Close()
	}
	os.RemoveAll(fw.dir)
}

// add appends the samples of mfs at time t.
func (fw *familyWriter) add(mfs []*dto.MetricFamily, t time.Time) error {
	ts := strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
	for _, mf := range mfs {
		f, err := fw.family(mf)
		if err != nil {
			return err
		}
		for _, m := range mf.GetMetric() {
			v := value(mf.GetType(), m)
			if math.IsNaN(v) {
				continue
			}
			f.buf.WriteString(mf.GetName())
			writeLabels(f.buf, m.GetLabel())
			f.buf.WriteByte(' ')
			f.buf.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			f.buf.WriteByte(' ')
			f.buf.WriteString(ts)
			f.buf.WriteByte('\n')
			fw.samples++
		}
	}
	return nil
}

func (fw *familyWriter) family(mf *dto.MetricFamily) (*family, error) {
	if f, ok := fw.families[mf.GetName()]; ok {
		return f, nil
	}
	file, err := os.CreateTemp(fw.dir, "family")
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	// Counters without the _total suffix (the DCGM names) are not valid
	// OpenMetrics counters; their type is not needed to query them.
	typ := "unknown"
	if mf.GetType() == dto.MetricType_GAUGE {
		typ = "gauge"
	}
	f := &family{typ: typ, file: file, buf: bufio.NewWriterSize(file, 64<<10)}
	fw.families[mf.GetName()] = f
	return f, nil
}

// writeTo writes the families, sorted by name, and "# EOF".
func (fw *familyWriter) writeTo(w io.Writer) error {
	names := make([]string, 0, len(fw.families))
	for n := range fw.families {
		names = append(names, n)
	}
	sort.Strings(names)
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, n := range names {
		f := fw.families[n]
		if err := f.buf.Flush(); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		if _, err := f.file.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		fmt.Fprintf(bw, "# TYPE %s %s\n", n, f.typ)
		if _, err := io.Copy(bw, f.file); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

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

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func writeLabels(w *bufio.Writer, labels []*dto.LabelPair) {
	if len(labels) == 0 {
		return
	}
	w.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(l.GetName())
		w.WriteString(`="`)
		labelEscaper.WriteString(w, l.GetValue())
		w.WriteByte('"')
	}
	w.WriteByte('}')
}
