package report

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
)

// Flags are the `gpuledger report` command-line flags. AddFlags registers them;
// after parsing, Config returns the run they describe.
type Flags struct {
	cfg         Config
	rng         promDuration
	step        promDuration
	resolution  promDuration
	timeout     promDuration
	end         string
	Demo        bool   // --demo: report on a simulated week through the embedded engine
	DemoHistory string // --demo.history: OpenMetrics history for --demo; empty: simulate one
}

// promDuration is a kingpin value in Prometheus' duration syntax ("7d", "90m").
type promDuration struct{ d *time.Duration }

func (p promDuration) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return err
	}
	*p.d = time.Duration(d)
	return nil
}

func (p promDuration) String() string { return model.Duration(*p.d).String() }

// AddFlags registers the report's flags on cmd, with DefaultConfig's defaults.
func AddFlags(cmd *kingpin.CmdClause) *Flags {
	f := &Flags{cfg: DefaultConfig()}
	c := &f.cfg
	f.rng, f.step, f.resolution, f.timeout = promDuration{&c.Range}, promDuration{&c.Step}, promDuration{&c.Resolution}, promDuration{&c.Timeout}
	cmd.Flag("prometheus.url", "Base URL of the Prometheus-compatible API to query (Prometheus, Thanos, Mimir, VictoriaMetrics).").StringVar(&c.PrometheusURL)
	cmd.Flag("range", "Length of the period to report on.").Default(f.rng.String()).SetValue(f.rng)
	cmd.Flag("end", "End of the period (RFC 3339); default: now, truncated to --step.").StringVar(&f.end)
	cmd.Flag("step", "Bucket the ledger counters are read in; --range must be a multiple of it.").Default(f.step.String()).SetValue(f.step)
	cmd.Flag("resolution", "Step at which activity and framebuffer are averaged / maximised before percentiles.").Default(f.resolution.String()).SetValue(f.resolution)
	cmd.Flag("format", "Output format.").Default(c.Format).EnumVar(&c.Format, FormatHTML, FormatMarkdown, FormatCSV, FormatJSON)
	cmd.Flag("out", `File to write the report to; "-" for standard output.`).Required().StringVar(&c.Out)
	cmd.Flag("team.map-file", "YAML file mapping teams to namespaces (teams: {team: [namespace, …]}).").StringVar(&c.TeamMapFile)
	cmd.Flag("team.label", "Pod label naming the team, read from kube-state-metrics' kube_pod_labels; wins over --team.map-file.").StringVar(&c.TeamLabel)
	cmd.Flag("recommend.headroom", "Factor on p99 framebuffer and busy share when sizing MIG profiles and time-slicing.").Default(fmt.Sprint(c.Headroom)).Float64Var(&c.Headroom)
	cmd.Flag("recommend.release-below", "Busy share below which a held GPU is recommended for release.").Default(fmt.Sprint(c.ReleaseBelow)).Float64Var(&c.ReleaseBelow)
	cmd.Flag("recommend.low-duty-below", "Busy share below which pods on whole GPUs are recommended for time-slicing.").Default(fmt.Sprint(c.LowDutyBelow)).Float64Var(&c.LowDutyBelow)
	cmd.Flag("recommend.drain-above", "Unallocated share above which a node is recommended for draining.").Default(fmt.Sprint(c.DrainAbove)).Float64Var(&c.DrainAbove)
	cmd.Flag("partial", "Write a report marked partial when the range has gaps without data, instead of failing.").BoolVar(&c.AllowPartial)
	cmd.Flag("webhook.url-file", "File holding a Slack/Mattermost incoming-webhook URL; the Markdown report is POSTed to it as {\"text\": …}.").StringVar(&c.WebhookURLFile)
	cmd.Flag("query.timeout", "Timeout of each query request and of the webhook POST.").Default(f.timeout.String()).SetValue(f.timeout)
	cmd.Flag("query.max-points", "Most steps one query request asks for; longer ranges are split.").Default(fmt.Sprint(c.MaxPointsPerQuery)).IntVar(&c.MaxPointsPerQuery)
	cmd.Flag("demo", "Report on a simulated week through an embedded PromQL engine, without Prometheus.").BoolVar(&f.Demo)
	cmd.Flag("demo.history", "OpenMetrics history for --demo (as `gpuledger simulate history` writes); empty: simulate the built-in scenario.").StringVar(&f.DemoHistory)
	return f
}

// Config returns the parsed run, validated except for --prometheus.url (Run
// and --demo check that).
func (f *Flags) Config() (Config, error) {
	c := f.cfg
	if f.end != "" {
		t, err := time.Parse(time.RFC3339, f.end)
		if err != nil {
			return Config{}, fmt.Errorf("--end: %w", err)
		}
		c.End = t
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
