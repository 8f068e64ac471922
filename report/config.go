package report

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/memlimit"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/source"
)

// ConfigError is a report that cannot start for its settings or files: a
// bad value, a URL that is not one, a file that is missing or does not
// parse, an output that cannot be created, a baseline that cannot be
// followed up. It is found before any query is sent (a baseline file of other
// clusters once the data names the period's); gputally exits 2 for it, 1 for every other failure (the engine, the
// network, an answer refused).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// badConfig wraps err, if any, as a *ConfigError.
func badConfig(err error) error {
	if err == nil {
		return nil
	}
	return &ConfigError{err}
}

// Config is a report run. DefaultConfig returns the defaults; the zero value
// of a field other than those documented as optional is invalid.
type Config struct {
	PrometheusURL string // base URL of the Prometheus-compatible API, with its path prefix (Run only)
	// HTTPConfigFile (optional) is an HTTP client config file in
	// prometheus/common's format: auth, TLS, proxy, headers such as
	// X-Scope-OrgID (Run only; see engine.LoadHTTPClient).
	HTTPConfigFile string
	Range          time.Duration // length of the period reported on, e.g. 7 × 24h
	// End is the end of the period; zero means now truncated to Step (Run) or
	// the last sample of the data (RunDemoStore).
	End time.Time
	// Step is the bucket the ledger counters are read in (increase over Step);
	// Range must be a multiple of it.
	Step time.Duration
	// Resolution is the step at which activity and framebuffer are averaged /
	// maximised before the percentiles are taken.
	Resolution time.Duration
	Format     string // FormatHTML, FormatMarkdown, FormatCSV or FormatJSON
	Out        string // file to write; "-" writes to stdout
	// TeamMapFile (optional) maps namespaces to teams (see team.ParseMap).
	TeamMapFile string
	// TeamLabel (optional) is a pod label key whose value names the team, read
	// from kube-state-metrics' kube_pod_labels; it wins over TeamMapFile.
	TeamLabel string
	// Headroom multiplies the p99 framebuffer before it is compared with a
	// MIG profile's memory, and busy shares before time-sliced packing; ≥ 1.
	Headroom float64
	// ReleaseBelow: a holding busy less than this share of the time it was
	// held is recommended for release (0–1).
	ReleaseBelow float64
	// LowDutyBelow: pods holding a whole GPU busy less than this share suit
	// time-slicing (0–1).
	LowDutyBelow float64
	// DrainAbove: a node whose device-hours were unallocated more than this
	// share can be drained (0–1).
	DrainAbove float64
	// Scheduler is whose queues the advice writes: "kueue", "volcano", or
	// "auto" (also ""): per cluster from the GPU pods' schedulerName
	// (advice.Schedulers).
	Scheduler string
	// MIGWeight splits a MIG GPU's cost over its instances in every MIG
	// figure; set it from the price book the exporters use (the zero value is
	// the built-in book's compute weight).
	MIGWeight cost.MIGWeight
	// ApplyDir (optional) is a directory the configuration to apply is also
	// written to, one file each (see WriteApply).
	ApplyDir string
	// AllowPartial renders a report marked partial when the range has gaps
	// without data, instead of failing.
	AllowPartial bool
	// WebhookURLFile (optional) holds a Slack/Mattermost incoming-webhook URL;
	// the Markdown report is POSTed to it as {"text": …} after the file is written.
	WebhookURLFile string
	// Timeout bounds each query request and the webhook POST.
	Timeout time.Duration
	// TotalTimeout bounds the whole run's queries, retries included (Run only).
	TotalTimeout time.Duration
	// MaxAnswerBytes bounds the size of one answer read (Run only); a larger
	// one is asked again in smaller requests, down to one step. 0: derived
	// from the process's memory limit (AnswerCap).
	MaxAnswerBytes int64
	// MaxPointsPerQuery bounds the steps one request asks for; longer ranges
	// are split into several requests.
	MaxPointsPerQuery int
	// MaxSamplesPerQuery bounds the samples (series × steps) one answer
	// should hold, so that the report's memory does not grow with the fleet:
	// requests are sized by the series of the previous answer. 0: no bound.
	MaxSamplesPerQuery int
	// QueriesInFlight bounds the requests the report has in flight at once
	// (≥ 1); the figures do not depend on it.
	QueriesInFlight int
	// DedupeLabels are the labels by which copies of one ledger series differ
	// when the engine delivers it twice (HA pairs, a second scrape job): each
	// is counted once. Empty: every series counts.
	DedupeLabels []string
	// ClusterLabel is the label that names a series' cluster when one engine
	// holds several (source.DefaultClusterLabel): a GPU is its cluster and
	// UUID, nodes are grouped per cluster, and the advice and its
	// configuration are per cluster. Empty: one cluster.
	ClusterLabel string
	// Progress (optional) receives a progress line; usually os.Stderr.
	Progress io.Writer
	// Now (optional) is the clock; nil means time.Now.
	Now func() time.Time
	// Source is where the figures come from: SourceLedger ("" too) or
	// SourceDCGMExporter (sources.go).
	Source string
	// Grid is the dcgm-exporter source's evaluation grid; 0: the scrape
	// interval it measures, per cluster. It must divide Step and Resolution.
	Grid time.Duration
	// DCGMNodeLabel (optional) is, for the dcgm-exporter source, the label
	// of the DCGM_* series that names their node, read before hostname,
	// Hostname, nodename, node and kubernetes_node.
	DCGMNodeLabel string
	// PriceBook (optional) prices the dcgm-exporter source's devices and
	// gives the rental prices and carbon intensities of the report's own or
	// rent and emission figures; nil: the built-in book. Its mig_weight
	// should be MIGWeight's.
	PriceBook *cost.Book
	// Baseline (optional) is an earlier report's JSON, or a directory of kept
	// reports, to follow up (followup.Open); BaselineKeep (optional, a
	// directory only) prunes it to that many reports once this one is written.
	Baseline     string
	BaselineKeep int
}

// DefaultQueriesInFlight is the default of Config.QueriesInFlight: gentle on
// an engine that others query too.
const DefaultQueriesInFlight = 2

// MaxPointsPerSeries is the most points per series a range query may ask
// of Prometheus, Thanos, Cortex and Mimir: 11,000.
const MaxPointsPerSeries = 11_000

// AnswerCap is the most bytes one answer is read to: maxAnswerBytes when
// set (> 0), else a quarter of the memory limit (GOMEMLIMIT, else the
// cgroup's; 0: none) shared by the answers in flight (inFlight, ≥ 1), at most
// engine.DefaultMaxAnswerBytes, which is also the cap without a limit. An
// answer read to its cap holds about 0.9 bytes per byte of its text
// (BenchmarkDecodeAnswer), so the answers in flight take at most about a
// quarter of the limit, and the rest is left to what the report keeps.
func AnswerCap(maxAnswerBytes int64, limit memlimit.Limit, inFlight int) int64 {
	if maxAnswerBytes > 0 {
		return maxAnswerBytes
	}
	if limit.Bytes <= 0 {
		return engine.DefaultMaxAnswerBytes
	}
	return min(limit.Bytes/answersShare/int64(max(1, inFlight)), engine.DefaultMaxAnswerBytes)
}

// answersShare is the part of the memory limit the answers in flight may
// hold together: a quarter (1/answersShare).
const answersShare = 4

// DefaultConfig returns the defaults: a 7-day range in 1h steps, 5m
// resolution, HTML, headroom 1.2, release below 5 % busy, time-slicing below
// 30 % busy, drain above 95 % unallocated, 2m timeout, 1000 points and about
// 1,000,000 samples per request, two requests in flight.
func DefaultConfig() Config {
	return Config{
		Range:              7 * 24 * time.Hour,
		Step:               time.Hour,
		Resolution:         5 * time.Minute,
		Format:             FormatHTML,
		Headroom:           1.2,
		ReleaseBelow:       0.05,
		LowDutyBelow:       0.3,
		DrainAbove:         0.95,
		Scheduler:          advice.SchedulerAuto,
		Timeout:            2 * time.Minute,
		TotalTimeout:       time.Hour,
		MaxPointsPerQuery:  1000,
		MaxSamplesPerQuery: 1_000_000,
		QueriesInFlight:    DefaultQueriesInFlight,
		DedupeLabels:       source.DefaultDedupeLabels,
		ClusterLabel:       source.DefaultClusterLabel,
	}
}

// Validate checks the settings other than PrometheusURL.
func (c *Config) Validate() error {
	switch {
	case c.Step <= 0 || c.Resolution <= 0:
		return fmt.Errorf("step %s and resolution %s must be positive", c.Step, c.Resolution)
	case c.Range <= 0 || c.Range%c.Step != 0:
		return fmt.Errorf("range %s must be a positive multiple of the step %s", c.Range, c.Step)
	case c.Resolution > c.Step || c.Step%c.Resolution != 0 || c.Resolution < 2*time.Second:
		return fmt.Errorf("resolution %s must be at least 2s and divide the step %s", c.Resolution, c.Step)
	case c.Format != FormatHTML && c.Format != FormatMarkdown && c.Format != FormatCSV && c.Format != FormatJSON:
		return fmt.Errorf("format %q: want html, md, csv or json", c.Format)
	case c.Out == "":
		return errors.New("no output file: set --out (\"-\" for stdout)")
	case c.Headroom < 1:
		return fmt.Errorf("headroom %g must be at least 1", c.Headroom)
	case !(c.ReleaseBelow >= 0 && c.ReleaseBelow <= 1 && c.LowDutyBelow >= 0 && c.LowDutyBelow <= 1 && c.DrainAbove >= 0 && c.DrainAbove <= 1):
		return errors.New("release, low-duty and drain thresholds must be shares between 0 and 1")
	case c.Timeout <= 0:
		return fmt.Errorf("timeout %s must be positive", c.Timeout)
	case c.TotalTimeout < 0 || c.MaxAnswerBytes < 0:
		return fmt.Errorf("total timeout %s and max answer bytes %d must not be negative", c.TotalTimeout, c.MaxAnswerBytes)
	case c.MaxPointsPerQuery < 2 || c.MaxPointsPerQuery > MaxPointsPerSeries:
		return fmt.Errorf("max points per query %d must be between 2 and %d (the engines' limit per series)", c.MaxPointsPerQuery, MaxPointsPerSeries)
	case c.MaxSamplesPerQuery < 0:
		return fmt.Errorf("max samples per query %d must not be negative", c.MaxSamplesPerQuery)
	case c.ClusterLabel != "" && !pmodel.LegacyValidation.IsValidLabelName(c.ClusterLabel):
		return fmt.Errorf("cluster label %q is not a label name", c.ClusterLabel)
	case c.ClusterLabel != "" && slices.Contains(c.DedupeLabels, c.ClusterLabel):
		return fmt.Errorf("cluster label %q is also a dedupe label: copies that differ in it would be counted once, and the clusters merged", c.ClusterLabel)
	case c.Scheduler != "" && !slices.Contains(advice.Schedulers, c.Scheduler):
		return fmt.Errorf("scheduler %q: want one of %s", c.Scheduler, strings.Join(advice.Schedulers, ", "))
	case c.QueriesInFlight < 1:
		return fmt.Errorf("queries in flight %d must be at least 1", c.QueriesInFlight)
	}
	return errors.Join(c.validateSource(), c.validateBaseline())
}

// priceBook returns the report's price book: PriceBook, or the built-in one.
func (c *Config) priceBook() *cost.Book {
	if c.PriceBook != nil {
		return c.PriceBook
	}
	return cost.Default()
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
