package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/source"
)

// reportGCPercent is the garbage collector's growth target (%) while the
// report runs, unless GOGC says otherwise; a GOMEMLIMIT (the chart's) bounds
// the heap further, and the peaks measured without one hold under it. The report's live heap
// is what it keeps to the end — the dataset, per holding the 5-minute
// activity and framebuffer values, and for --demo the store — and the default
// 100 % lets garbage grow to its size again: 50 % holds the peak nearer the
// data (docs/performance.md, "Memory and the range").
const reportGCPercent = 50

// reportCommand writes the weekly utilization and cost report.
type reportCommand struct {
	cfg           report.Config
	rangeFlag     *promDuration
	stepFlag      *promDuration
	resolution    *promDuration
	timeout       *promDuration
	totalTimeout  *promDuration
	end           string
	demo          bool
	demoScenarios []string
	demoScrape    *promDuration
	priceBook     string
	dedupe        string
	grid          *promDuration
}

func newReportCommand(app *kingpin.Application) *reportCommand {
	c := &reportCommand{cfg: report.DefaultConfig()}
	cmd := app.Command("report", "Write the utilization and cost report with right-sizing advice.")
	cmd.Flag("prometheus.url", "Base URL of a Prometheus-compatible API, with its path prefix (Prometheus, Thanos, Mimir: …/prometheus, VictoriaMetrics cluster: …/select/<tenant>/prometheus).").StringVar(&c.cfg.PrometheusURL)
	cmd.Flag("prometheus.http-config.file", "HTTP client config file (prometheus/common format, as promtool's --http.config.file): basic auth, bearer token, TLS, proxy, headers such as X-Scope-OrgID.").StringVar(&c.cfg.HTTPConfigFile)
	c.rangeFlag = durationFlag(cmd.Flag("range", "Length of the period reported on."), "7d")
	c.stepFlag = durationFlag(cmd.Flag("step", "Bucket the ledger counters are read in; --range must be a multiple."), "1h")
	c.resolution = durationFlag(cmd.Flag("resolution", "Step at which activity and framebuffer are sampled for percentiles."), "5m")
	cmd.Flag("end", "End of the period (RFC 3339); default: now.").StringVar(&c.end)
	cmd.Flag("format", "Output format.").Default(report.FormatHTML).EnumVar(&c.cfg.Format,
		report.FormatHTML, report.FormatMarkdown, report.FormatCSV, report.FormatJSON)
	cmd.Flag("out", "File to write; - for standard output.").Required().StringVar(&c.cfg.Out)
	cmd.Flag("team-map", "YAML file mapping namespaces to teams.").StringVar(&c.cfg.TeamMapFile)
	cmd.Flag("team-label", "Pod label naming the team, read from kube-state-metrics' kube_pod_labels.").StringVar(&c.cfg.TeamLabel)
	cmd.Flag("headroom", "Factor on p99 framebuffer and busy share when sizing MIG profiles.").Default("1.2").Float64Var(&c.cfg.Headroom)
	cmd.Flag("release-below", "Recommend releasing holdings busy less than this share of the time.").Default("0.05").Float64Var(&c.cfg.ReleaseBelow)
	cmd.Flag("low-duty-below", "Recommend time-slicing for pods busy less than this share.").Default("0.3").Float64Var(&c.cfg.LowDutyBelow)
	cmd.Flag("drain-above", "Recommend draining nodes unallocated more than this share.").Default("0.95").Float64Var(&c.cfg.DrainAbove)
	cmd.Flag("scheduler", "Whose queues the configuration to apply holds: kueue (Kueue v1beta2), volcano (Volcano queues for the capacity plugin), or auto: per cluster, volcano when its GPU pods name volcano as their scheduler (kube-state-metrics' kube_pod_scheduler), else kueue.").
		Default(advice.SchedulerAuto).EnumVar(&c.cfg.Scheduler, advice.Schedulers...)
	cmd.Flag("allow-partial", "Write a report marked partial when more than 1 % of the device-hours are missing or unknown, instead of failing.").BoolVar(&c.cfg.AllowPartial)
	cmd.Flag("webhook.url-file", "File holding a Slack/Mattermost incoming-webhook URL; the Markdown report is POSTed to it.").StringVar(&c.cfg.WebhookURLFile)
	c.timeout = durationFlag(cmd.Flag("query.timeout", "Limit of each query and of the webhook POST."), "2m")
	c.totalTimeout = durationFlag(cmd.Flag("query.total-timeout", "Limit of all the report's queries together, retries included; 0: none."), "1h")
	cmd.Flag("query.max-answer-bytes", fmt.Sprintf("Largest answer read, in bytes; a larger one is asked again in smaller requests, down to one step, and one step over it is an error. 0: a quarter of the memory limit (GOMEMLIMIT, else the cgroup's memory.max) divided by --query.concurrency, at most %d (256 MiB), which is also the cap without a limit.", engine.DefaultMaxAnswerBytes)).
		Default("0").Int64Var(&c.cfg.MaxAnswerBytes)
	cmd.Flag("query.max-points", "Most steps one range query asks for; longer ranges are split.").Default("1000").IntVar(&c.cfg.MaxPointsPerQuery)
	cmd.Flag("query.max-samples", "About the most samples (series × steps) one range query's answer holds; requests are sized by the series of the previous answer; 0: no bound.").Default("1000000").IntVar(&c.cfg.MaxSamplesPerQuery)
	cmd.Flag("query.concurrency", "Most requests the report has in flight at once; the figures do not depend on it.").Default(strconv.Itoa(report.DefaultQueriesInFlight)).IntVar(&c.cfg.QueriesInFlight)
	cmd.Flag("report.dedupe-labels", "Labels by which copies of one series differ when the engine delivers it twice — an HA pair without deduplication (prometheus_replica, replica, __replica__), a second scrape job (job) — for the ledger's and dcgm-exporter's series alike; each is counted once. Comma-separated; empty: count every series.").
		Default(strings.Join(source.DefaultDedupeLabels, ",")).StringVar(&c.dedupe)
	cmd.Flag("report.cluster-label", "Label naming a series' cluster when one engine holds several (the usual external label): a GPU is its cluster and UUID, nodes are grouped per cluster, advice and --apply-dir are per cluster; empty: one cluster.").
		Default(source.DefaultClusterLabel).StringVar(&c.cfg.ClusterLabel)
	cmd.Flag("demo", "Report on a simulated week through an embedded PromQL engine instead of a Prometheus.").BoolVar(&c.demo)
	cmd.Flag("demo.scenario", "Scenario of a simulated node for --demo, or a directory of them (a fleet); repeat for several nodes; none: the built-in scenario.").StringsVar(&c.demoScenarios)
	cmd.Flag("cost.price-book", "Price book the exporters use (its mig_weight splits MIG costs in the advice; --demo also prices the simulation with it); empty: the built-in book.").StringVar(&c.priceBook)
	cmd.Flag("apply-dir", "Also write the configuration to apply (mig-parted, device plugin, Kueue, node labels) as files into this directory.").StringVar(&c.cfg.ApplyDir)
	cmd.Flag("source", "Where the figures come from: ledger (gputally's counters, exact) or dcgm-exporter (the dcgm-exporter and kube-state-metrics series a cluster already has, sampled on --grid).").
		Default(report.SourceLedger).EnumVar(&c.cfg.Source, report.SourceLedger, report.SourceDCGMExporter)
	cmd.Flag("dcgm-exporter.node-label", "With --source=dcgm-exporter: the label of the DCGM_* series that names their node, read before hostname, Hostname, nodename, node and kubernetes_node (whose value, when it names a dcgm-exporter pod, is never taken for a node).").StringVar(&c.cfg.DCGMNodeLabel)
	c.grid = durationFlag(cmd.Flag("grid", "Evaluation grid of --source=dcgm-exporter: one state per device per grid point, dividing --step and --resolution; 0: the scrape interval it measures, per cluster (each point reads the last sample in the interval and a tenth before it)."), "0s")
	cmd.Flag("baseline", "An earlier report's JSON to follow up: each of its recommendations applied or not, decided from this period's data, with the EUR it freed, and the fleet and teams before and after; or a directory of kept reports (the CronJob's volume), whose newest earlier report of the same range and clusters is followed up.").
		PlaceHolder("FILE|DIR").StringVar(&c.cfg.Baseline)
	cmd.Flag("baseline.keep", "With --baseline=DIR: once the report is written, keep the newest N reports' JSON in DIR, each with its other formats (the files of the same name); 0: keep all.").
		Default("0").IntVar(&c.cfg.BaselineKeep)
	c.demoScrape = durationFlag(cmd.Flag("demo.scrape-interval", "Scrape interval of the simulated history for --demo."), "60s")
	return c
}

func (c *reportCommand) run(ctx context.Context, logger *slog.Logger) error {
	c.cfg.Range, c.cfg.Step = time.Duration(*c.rangeFlag), time.Duration(*c.stepFlag)
	c.cfg.Resolution, c.cfg.Timeout = time.Duration(*c.resolution), time.Duration(*c.timeout)
	c.cfg.TotalTimeout = time.Duration(*c.totalTimeout)
	c.cfg.Grid = time.Duration(*c.grid)
	c.cfg.DedupeLabels = nil
	for l := range strings.SplitSeq(c.dedupe, ",") {
		if l = strings.TrimSpace(l); l != "" {
			if !pmodel.LegacyValidation.IsValidLabelName(l) { // unquoted in the queries' without (…)
				return badInput(fmt.Errorf("--report.dedupe-labels: %q is not a label name", l))
			}
			c.cfg.DedupeLabels = append(c.cfg.DedupeLabels, l)
		}
	}
	c.cfg.Progress = os.Stderr
	if c.end != "" {
		end, err := time.Parse(time.RFC3339, c.end)
		if err != nil {
			return badInput(fmt.Errorf("--end: %w", err))
		}
		c.cfg.End = end
	}
	if err := c.cfg.Validate(); err != nil {
		return badInput(err)
	}
	book := cost.Default()
	if c.priceBook != "" {
		var err error
		if book, err = cost.Load(c.priceBook); err != nil {
			return badInput(err)
		}
	}
	c.cfg.MIGWeight, c.cfg.PriceBook = book.MIGWeight, book
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(reportGCPercent))
	}
	if !c.demo {
		if c.cfg.PrometheusURL == "" {
			return badInput(fmt.Errorf("set --prometheus.url, or --demo for a simulated week"))
		}
		return reportExit(report.Run(ctx, c.cfg, logger))
	}
	nodes, err := loadFleet(c.demoScenarios)
	if err != nil {
		return err
	}
	if err := history.CheckFleet(nodes, 0); err != nil {
		return badInput(err)
	}
	return reportExit(runDemo(ctx, c.cfg, nodes, book, time.Duration(*c.demoScrape), logger))
}

// reportExit marks the report's *ConfigError (bad settings or files, found
// before any query) as bad input: exit 2; every other failure exits 1.
func reportExit(err error) error {
	if errors.As(err, new(*report.ConfigError)) {
		return badInput(err)
	}
	return err
}
