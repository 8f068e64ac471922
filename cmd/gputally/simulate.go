package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
)

// promDuration is a flag value in Prometheus duration syntax ("7d", "30s", "1h30m").
type promDuration time.Duration

func (d *promDuration) Set(s string) error {
	v, err := model.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = promDuration(v)
	return nil
}

func (d *promDuration) String() string { return model.Duration(*d).String() }

func durationFlag(f *kingpin.FlagClause, def string) *promDuration {
	d := new(promDuration)
	f.Default(def).SetValue(namedValue{d, f.Model().Name})
	return d
}

// namedValue is a flag value whose errors name its flag: kingpin's name only
// the value ("not a valid duration string: \"abc\"").
type namedValue struct {
	kingpin.Value
	name string
}

func (v namedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return fmt.Errorf("--%s: %w", v.name, err)
	}
	return nil
}

// simulateHistoryCommand writes a simulated node's metrics over a period, in
// virtual time, as OpenMetrics.
type simulateHistoryCommand struct {
	scenarios []string
	seed      int64
	start     string
	duration  *promDuration
	sample    *promDuration
	scrape    *promDuration
	book      string
	out       string
	summary   string
	legacy    bool
	flavor    string
	dcgm      history.DCGMExporterOptions
	names     string
	upgrade   *promDuration
	every     *promDuration
	jitter    *promDuration
	stdout    io.Writer
}

func newSimulateCommand(app *kingpin.Application, stdout io.Writer) *simulateHistoryCommand {
	c := &simulateHistoryCommand{stdout: stdout}
	cmd := app.Command("simulate", "Run the simulated node.").Command("history",
		"Run the simulated node in virtual time and write its metrics as OpenMetrics with timestamps (for promtool tsdb create-blocks-from openmetrics).")
	cmd.Flag("scenario", "Scenario YAML, or a directory of them (a fleet: one node each); repeat for several nodes; none: the built-in scenario.").StringsVar(&c.scenarios)
	cmd.Flag("seed", "Seed of the simulated workloads; 0: the scenario's.").Int64Var(&c.seed)
	cmd.Flag("start", "Time of the first sample (RFC 3339); default: --duration before now.").StringVar(&c.start)
	c.duration = durationFlag(cmd.Flag("duration", "Length of the simulated period."), "7d")
	c.sample = durationFlag(cmd.Flag("sample-interval", "Sampler tick: the ledger integrates at it."), "10s")
	c.scrape = durationFlag(cmd.Flag("scrape-interval", "Interval between two written scrapes."), "30s")
	cmd.Flag("cost.price-book", "Price book YAML; empty: the built-in book.").StringVar(&c.book)
	cmd.Flag("out", "OpenMetrics file to write; - for standard output.").Default("-").StringVar(&c.out)
	legacyHostnameFlag(cmd).BoolVar(&c.legacy)
	cmd.Flag("flavor", "Form of the written series: gputally (the exporter's own, the ledger among them) or dcgm-exporter (dcgm-exporter's DCGM_* label sets and kube-state-metrics' pod requests, phases, labels and node capacity; no gputally_* series). --summary writes the ledger's totals either way.").
		Default(history.FlavorGputally).EnumVar(&c.flavor, history.FlavorGputally, history.FlavorDCGMExporter)
	cmd.Flag("dcgm-exporter.no-hostname", "With --flavor=dcgm-exporter: no hostname label on the DCGM_* series, as dcgm-exporter's -n (--no-hostname) writes them.").BoolVar(&c.dcgm.NoHostname)
	cmd.Flag("dcgm-exporter.no-profiling", "With --flavor=dcgm-exporter: no DCGM_FI_PROF_* series, as dcgm-exporter writes them with its profiling (DCP) fields off.").BoolVar(&c.dcgm.NoProfiling)
	cmd.Flag("dcgm-exporter.no-kube-state-metrics", "With --flavor=dcgm-exporter: no kube-state-metrics series, as in a cluster that does not run it.").BoolVar(&c.dcgm.NoKubeStateMetrics)
	cmd.Flag("dcgm-exporter.names", "With --flavor=dcgm-exporter: the names of the DCGM_* series: 4.8 (dcgm-exporter up to 4.8), 4.10 (4.9 and later: new names in base units, DCGM_FI_SYSTEM_DRIVER_VERSION), rolling (a rolling upgrade from 4.8 to 4.10 at --dcgm-exporter.upgrade-after, node by node) or both (a 4.10 exporter whose custom collector file keeps 4.8's rows).").
		Default(history.NamesLegacy).EnumVar(&c.names, history.NamesLegacy, history.NamesCurrent, history.NamesRolling, history.NamesBoth)
	c.upgrade = durationFlag(cmd.Flag("dcgm-exporter.upgrade-after", "With --dcgm-exporter.names=rolling: when, after the start, the first node's dcgm-exporter is replaced by a 4.10 one."), "0s")
	c.every = durationFlag(cmd.Flag("dcgm-exporter.upgrade-every", "With --dcgm-exporter.names=rolling: the time between two nodes' replacements, as a DaemonSet's rolling update takes."), model.Duration(history.DefaultUpgradeEvery).String())
	c.jitter = durationFlag(cmd.Flag("scrape-jitter", "Store one scrape in 20 late by up to this (a tenth of it at least, whole milliseconds), as a loaded scrape loop does; 0: none."), "0s")
	cmd.Flag("summary", "Also write the ledger's own totals as JSON to this file: per namespace and state, and per series, in device-seconds and EUR, summed over exporter restarts.").StringVar(&c.summary)
	return c
}

func (c *simulateHistoryCommand) run(ctx context.Context, logger *slog.Logger) error {
	opts := history.Options{
		Seed: c.seed, Duration: time.Duration(*c.duration),
		SampleInterval: time.Duration(*c.sample), ScrapeInterval: time.Duration(*c.scrape),
		LegacyHostnameLabel: c.legacy, Flavor: c.flavor, DCGMExporter: c.dcgm, ScrapeJitter: time.Duration(*c.jitter), Logger: logger,
	}
	if c.names != history.NamesLegacy || *c.upgrade != 0 {
		opts.Names = history.Names{Mode: c.names, UpgradeAfter: time.Duration(*c.upgrade), UpgradeEvery: time.Duration(*c.every)}
	}
	nodes, err := loadFleet(c.scenarios)
	if err != nil {
		return err
	}
	if err := history.CheckFleet(nodes, c.seed); err != nil {
		return badInput(err)
	}
	if c.start != "" {
		if opts.Start, err = time.Parse(time.RFC3339, c.start); err != nil {
			return badInput(fmt.Errorf("--start: %w", err))
		}
	}
	if c.book != "" {
		if opts.Book, err = cost.Load(c.book); err != nil {
			return badInput(err)
		}
	}
	if opts.Duration <= 0 || opts.SampleInterval <= 0 || opts.ScrapeInterval < opts.SampleInterval {
		return badInput(fmt.Errorf("need --duration > 0 and --scrape-interval ≥ --sample-interval > 0"))
	}
	if opts.ScrapeJitter != 0 && (opts.ScrapeJitter < time.Millisecond || 2*opts.ScrapeJitter >= opts.ScrapeInterval) {
		return badInput(fmt.Errorf("--scrape-jitter %s: want 0, or at least 1ms and under half --scrape-interval", c.jitter))
	}
	if (opts.DCGMExporter != (history.DCGMExporterOptions{}) || opts.Names != history.Names{}) && opts.Flavor != history.FlavorDCGMExporter {
		return badInput(fmt.Errorf("--dcgm-exporter.* flags need --flavor=%s", history.FlavorDCGMExporter))
	}
	if opts.Names.Mode == history.NamesRolling && (opts.Names.UpgradeAfter <= 0 || opts.Names.UpgradeAfter >= opts.Duration) {
		return badInput(fmt.Errorf("--dcgm-exporter.names=rolling needs --dcgm-exporter.upgrade-after inside --duration %s", c.duration))
	}
	w := c.stdout
	if c.out != "-" {
		f, err := createOutput("--out", c.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	var summary *os.File
	if c.summary != "" {
		if summary, err = createOutput("--summary", c.summary); err != nil {
			return err
		}
		defer summary.Close()
	}
	began := time.Now()
	res, err := history.WriteFleet(ctx, w, opts, nodes)
	if err != nil {
		return err
	}
	if f, ok := w.(*os.File); ok && f != os.Stdout {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", c.out, err)
		}
	}
	logger.Info("simulated history written", "out", c.out, "from", res.Start, "to", res.End,
		"samples", res.Samples, "took", time.Since(began).Round(time.Millisecond))
	if summary != nil {
		return writeSummary(summary, res)
	}
	return nil
}

// loadScenario reads path, or returns the built-in scenario for "".
func loadScenario(path string) (*sim.Scenario, error) {
	if path == "" {
		return sim.Default(), nil
	}
	sc, err := sim.Load(path)
	if err != nil {
		return nil, badInput(err)
	}
	return sc, nil
}

// summary is the JSON form of a run's ledger totals (--summary), summed over
// exporter restarts and over series that ended and came back.
type summary struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Restarts int       `json:"restarts"` // exporter restarts the scenario made
	// Namespaces are the totals per namespace and state, sorted; namespace ""
	// is time no known holder had (unallocated, lost, unknown).
	Namespaces []summaryNamespace `json:"namespaces"`
	Series     []summaryTotal     `json:"series"` // per ledger series
}

type summaryNamespace struct {
	Namespace string  `json:"namespace"`
	State     string  `json:"state"`
	Seconds   float64 `json:"seconds"` // device-seconds
	EUR       float64 `json:"eur"`
}

type summaryTotal struct {
	GPU       string  `json:"gpu"`
	Device    string  `json:"device"`
	Namespace string  `json:"namespace"`
	Pod       string  `json:"pod"`
	Container string  `json:"container"`
	State     string  `json:"state"`
	Seconds   float64 `json:"seconds"`
	EUR       float64 `json:"eur"`
}

// newSummary sums res's totals per namespace and state.
func newSummary(res history.Result) summary {
	s := summary{Start: res.Start, End: res.End, Restarts: res.Restarts, Namespaces: []summaryNamespace{}, Series: []summaryTotal{}}
	index := map[[2]string]int{}
	for _, t := range res.Totals {
		state := t.State.String()
		s.Series = append(s.Series, summaryTotal{
			GPU: t.GPU, Device: t.Device, Namespace: t.Holder.Namespace, Pod: t.Holder.Pod,
			Container: t.Holder.Container, State: state, Seconds: t.Seconds, EUR: t.EUR,
		})
		key := [2]string{t.Holder.Namespace, state}
		i, ok := index[key]
		if !ok {
			i = len(s.Namespaces)
			index[key] = i
			s.Namespaces = append(s.Namespaces, summaryNamespace{Namespace: key[0], State: key[1]})
		}
		s.Namespaces[i].Seconds += t.Seconds
		s.Namespaces[i].EUR += t.EUR
	}
	slices.SortFunc(s.Namespaces, func(a, b summaryNamespace) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.State, b.State))
	})
	return s
}

// writeSummary writes res's summary as JSON into f and closes it.
func writeSummary(f *os.File, res history.Result) error {
	b, err := json.MarshalIndent(newSummary(res), "", "  ")
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
