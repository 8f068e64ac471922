package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/dcgmnames"
)

// scrapeErrorLogEvery is the least time between two log lines about failed scrapes.
const scrapeErrorLogEvery = 10 * time.Second

// exporterCommand serves /metrics for the GPUs of this node.
type exporterCommand struct {
	web            *web.FlagConfig
	metricsPath    string
	maxRequests    int
	scrapeTimeout  time.Duration
	hostname       string
	legacyHostname bool
	dcgmNames      string
	interval       time.Duration
	retention      time.Duration
	priceBook      string
	cluster        string
	backend        backendFlags
	attribution    attributionFlags

	reload <-chan os.Signal // SIGHUP, subscribed to by main before anything else
}

// newExporterCommand registers the exporter's flags. It reloads the price book
// at each value received on reload (nil: only on POST /-/reload).
func newExporterCommand(app *kingpin.Application, reload <-chan os.Signal) *exporterCommand {
	c := &exporterCommand{reload: reload}
	cmd := app.Command("exporter", "Sample the GPUs of this node and serve Prometheus metrics.").Default()
	c.web = kingpinflag.AddFlags(cmd, ":9400")
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&c.metricsPath)
	cmd.Flag("web.max-requests", "Maximum number of concurrent scrapes, more are answered 503; 0 means no limit. Each costs about 2 MiB of memory (docs/reliability.md).").Default("10").IntVar(&c.maxRequests)
	cmd.Flag("web.scrape-timeout", "Time after which a scrape is answered 503.").Default("10s").DurationVar(&c.scrapeTimeout)
	cmd.Flag("hostname", "Node name for the hostname label.").Envar("NODE_NAME").StringVar(&c.hostname)
	legacyHostnameFlag(cmd).BoolVar(&c.legacyHostname)
	cmd.Flag(dcgmNamesFlag, "Names of the DCGM_* series: 4.10 (dcgm-exporter 4.9 and later: DCGM 4.7's names in base units — ratios, bytes, joules, hertz, seconds — the label DCGM_FI_SYSTEM_DRIVER_VERSION, and DCGM_FI_DEV_FB_CAPACITY_BYTES) or 4.8 (the names, units and label DCGM_FI_DRIVER_VERSION of dcgm-exporter up to 4.8, for dashboards and rules that still read them; docs/metrics.md lists both).").
		Default(dcgmnames.CurrentFlag).EnumVar(&c.dcgmNames, dcgmnames.CurrentFlag, dcgmnames.LegacyFlag)
	cmd.Flag("collector.interval", "Interval between two samples of the GPUs. One sample is charged for at most twice this; the rest of a backend outage is cost state unknown.").Default("1s").DurationVar(&c.interval)
	cmd.Flag("collector.ended-series-retention", "How long the cost series of an ended pod (or removed MIG instance) stay exported with their final values before they disappear; keep it above two scrape intervals.").
		Default(cost.DefaultRetention.String()).DurationVar(&c.retention)
	cmd.Flag("cost.price-book", "Price book YAML; empty: the built-in book (docs/cost.md). Reloaded on SIGHUP and POST /-/reload.").StringVar(&c.priceBook)
	cmd.Flag("cost.cluster", "The cluster this node is in, as the report's cluster label names it: selects the price book's carbon.clusters intensity for gputally_grid_carbon_intensity_grams_per_joule; empty: carbon.gco2e_per_kwh.").StringVar(&c.cluster)
	c.backend.register(cmd)
	c.attribution.register(cmd)
	return c
}

func (c *exporterCommand) run(ctx context.Context, logger *slog.Logger) error {
	if c.interval <= 0 {
		return badInput(fmt.Errorf("--collector.interval must be positive, got %s", c.interval))
	}
	if c.retention <= 0 {
		return badInput(fmt.Errorf("--collector.ended-series-retention must be positive, got %s", c.retention))
	}
	if err := c.attribution.validate(); err != nil {
		return err
	}
	if err := c.checkWebFlags(); err != nil {
		return badInput(err)
	}
	names, err := dcgmnames.ParseNaming(c.dcgmNames)
	if err != nil {
		return badInput(fmt.Errorf("--%s: %w", dcgmNamesFlag, err))
	}
	backend, err := c.backend.open(ctx, c.interval, logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := backend.Close(); err != nil {
			logger.Warn("close backend", "err", err)
		}
	}()
	inv, err := backend.Inventory(ctx)
	if err != nil {
		return fmt.Errorf("read the GPUs: %w", err)
	}
	book, err := newPriceBook(c.priceBook, c.cluster, inv, logger)
	if err != nil {
		return err
	}
	if simulated, ok := backend.(*sim.Backend); ok {
		if c.hostname == "" {
			c.hostname = simulated.Hostname()
		}
		if events := simulated.HistoryOnlyEvents(); events != "" {
			logger.Warn("the scenario's exporter stops and restarts and missing scrapes apply to simulate history and report --demo only; this exporter keeps running and serves every scrape", "events", events)
		}
		if c.attribution.enabled {
			// The simulated node's pods go through the real client path.
			kubelet, err := sim.StartKubelet(simulated)
			if err != nil {
				return err
			}
			defer kubelet.Stop()
			c.attribution.processAccounting = true
			c.attribution.socket, c.attribution.procfs, c.attribution.podLogsDir = kubelet.Socket, kubelet.ProcRoot, kubelet.PodLogsDir
		}
	}
	if c.hostname == "" {
		if c.hostname, err = os.Hostname(); err != nil {
			return fmt.Errorf("find the host name (set --hostname): %w", err)
		}
	}
	if err := checkHostname(c.hostname); err != nil {
		return badInput(err)
	}
	opts := collector.SamplerOptions{Interval: c.interval, Logger: logger, Ledger: cost.NewLedger(book.store, cost.WithRetention(c.retention))}
	var slices attribution.SliceSource
	if c.attribution.enabled {
		if slices, err = c.attribution.dra.sliceSource(backend, c.hostname, logger); err != nil {
			return err
		}
	}
	client, err := c.attribution.newClient(logger, slices)
	if err != nil {
		return err
	}
	if client != nil {
		defer client.Close()
	}
	// The background loops use the backend and the kubelet connection: stop them
	// and wait for them before the deferred Closes above release those.
	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	defer func() {
		cancel()
		loops.Wait()
	}()
	if client != nil {
		opts.Holders = client
		client.SetDevices(collector.AttributionDevices(inv))
		client.SetMIGLayout(collector.MIGLayout(inv))
		if w, ok := slices.(*attribution.SliceWatcher); ok {
			loops.Go(func() { w.Run(ctx) })
		}
		loops.Go(func() { client.Run(ctx) })
		if c.attribution.processAccounting {
			opts.Processes = collector.NewPodProcesses(attribution.NewProcessResolver(attribution.ProcessConfig{
				ProcRoot: c.attribution.procfs, PodLogsDir: c.attribution.podLogsDir,
				RescanInterval: c.attribution.interval, Logger: logger,
			}))
		}
	}
	logger.Info("starting gputally exporter", "version", version.Info(), "backend", backend.Name(),
		"gpus", len(inv.GPUs), "interval", c.interval, "attribution", client != nil)

	sampler := collector.NewSampler(backend, opts)
	authFailed := newAuthFailures(logger, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collector.NewCollector(sampler, collector.Node{Hostname: c.hostname, LegacyHostnameLabel: c.legacyHostname, Names: names}, nil),
		authFailed.total,
		versioncollector.NewCollector("gputally"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(book.collectors()...)
	if client != nil {
		reg.MustRegister(attribution.NewDRACollector(client, slices))
	}
	mux := c.routes(reg, sampler, book, logger)

	loops.Go(func() { sampler.Run(ctx) })
	// Not in loops: shutdown never waits on a reload (reads are capped and
	// regular files only, but a stuck file system is not ours to wait for).
	go book.reloadOn(ctx, c.reload)
	listeners, err := listenWeb(c.web, logger)
	if err != nil {
		return err
	}
	servers := serveWeb(listeners, mux, c.scrapeTimeout, c.web, logger, authFailed)
	select {
	case err := <-servers.errc:
		servers.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := servers.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// legacyHostnameFlag declares --collector.legacy-hostname-label, shared by the
// exporter and the simulation (which writes what the exporter would).
func legacyHostnameFlag(cmd *kingpin.CmdClause) *kingpin.FlagClause {
	return cmd.Flag("collector.legacy-hostname-label",
		"Spell the node label `Hostname`, as dcgm-exporter did up to 4.8.2, instead of `hostname`, for dashboards and rules that still query the old spelling.")
}

// dcgmNamesFlag names the DCGM_* series' naming: the exporter's, and what
// generate's dashboards and rules read.
const dcgmNamesFlag = "collector.dcgm-exporter-names"

// checkWebFlags validates the HTTP server's flags and a --hostname given as a
// flag, before anything starts.
func (c *exporterCommand) checkWebFlags() error {
	if err := checkMetricsPath(c.metricsPath); err != nil {
		return err
	}
	if c.hostname != "" {
		if err := checkHostname(c.hostname); err != nil {
			return err
		}
	}
	if c.maxRequests < 0 {
		return fmt.Errorf("--web.max-requests must be 0 (no limit) or positive, got %d", c.maxRequests)
	}
	if c.scrapeTimeout < 0 {
		return fmt.Errorf("--web.scrape-timeout must be 0 (no limit) or positive, got %s", c.scrapeTimeout)
	}
	return checkWebConfig(*c.web.WebConfigFile)
}

// routes builds the HTTP handlers: metrics, health, readiness and the landing page.
func (c *exporterCommand) routes(reg *prometheus.Registry, sampler *collector.Sampler, book *priceBook, logger *slog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(c.metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A scrape that fails (one that timed out: every metric family's write
		// fails) logs once, and at most once per scrapeErrorLogEvery.
		ErrorLog:            newLimitedLog(logger, slog.LevelError, "scrape failed", scrapeErrorLogEvery, nil),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: c.maxRequests,
		Timeout:             c.scrapeTimeout,
		Registry:            reg,
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !sampler.Ready() {
			http.Error(w, "Not ready: no sample yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	})
	mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, _ *http.Request) {
		if err := book.reload(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Reloaded")
	})
	// Any other method: 405, not the landing page's 404.
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method not allowed: use POST", http.StatusMethodNotAllowed)
	})
	if c.metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "gputally",
			Description: "GPU metrics exporter and cost ledger",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: c.metricsPath, Text: "Metrics"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness"},
			},
		})
		if err == nil {
			mux.Handle("/", landing)
		} else {
			logger.Warn("landing page disabled", "err", err)
		}
	}
	return mux
}
