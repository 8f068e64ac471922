package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dashboards"
	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/team"
)

// generateDashboardsCommand writes the Grafana dashboards as JSON.
type generateDashboardsCommand struct {
	dir            string
	legacyHostname bool
	names          string
}

// generateRulesCommand writes the Prometheus alert and recording rules.
type generateRulesCommand struct {
	out            string
	legacyHostname bool
	names          string
	runbookBaseURL string
	teamMap        string
	teamLabel      string
	budgets        string
}

func newGenerateCommands(app *kingpin.Application) (*generateDashboardsCommand, *generateRulesCommand) {
	gen := app.Command("generate", "Write the dashboards or the Prometheus rules.")
	d, r := &generateDashboardsCommand{}, &generateRulesCommand{}
	dc := gen.Command("dashboards", "Write every Grafana dashboard as <name>.json.")
	dc.Flag("out", "Directory to write to.").Required().StringVar(&d.dir)
	legacyHostnameFlag(dc).BoolVar(&d.legacyHostname)
	readsFlag(dc).StringVar(&d.names)
	rc := gen.Command("rules", "Write the alert and recording rules file (the thresholds of docs and the Helm chart).")
	rc.Flag("out", "File to write; - for standard output.").Default("-").StringVar(&r.out)
	legacyHostnameFlag(rc).BoolVar(&r.legacyHostname)
	readsFlag(rc).StringVar(&r.names)
	rc.Flag("runbook.base-url", "Where the runbooks are: every alert's runbook_url is <URL>/<AlertName>.md.").Default(alerts.DefaultRunbookBaseURL).StringVar(&r.runbookBaseURL)
	rc.Flag("team-map", "YAML file mapping namespaces to teams, as report's --team-map: alerts about a pod carry its team.").StringVar(&r.teamMap)
	rc.Flag("team-label", "Pod label naming the team, read from kube-state-metrics' kube_pod_labels, as report's --team-label; it wins over --team-map.").StringVar(&r.teamLabel)
	rc.Flag("budgets.file", "YAML file of monthly GPU budgets (EUR) and idle-cost limits (EUR per day) per team and namespace (docs/alerts.md).").StringVar(&r.budgets)
	return d, r
}

// readsFlag declares generate's --collector.dcgm-exporter-names: the DCGM_*
// names the dashboards and rules read.
func readsFlag(cmd *kingpin.CmdClause) *kingpin.FlagClause {
	return cmd.Flag(dcgmNamesFlag, "DCGM_* names the exporters write, as the exporter's flag: 4.10 (dcgm-exporter 4.9 and later, gputally's default), 4.8, or transition (both: the new names where a device has them, else the old, so that one dashboard spans an upgrade). Values are in base units either way.").
		Default(dcgmnames.CurrentFlag)
}

// parseReads parses readsFlag's value.
func parseReads(s string) (dcgmnames.Reads, error) {
	names, err := dcgmnames.ParseReads(s)
	if err != nil {
		return 0, badInput(fmt.Errorf("--%s: %w", dcgmNamesFlag, err))
	}
	return names, nil
}

func (c *generateDashboardsCommand) run(_ context.Context, logger *slog.Logger) error {
	names, err := parseReads(c.names)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return badInput(fmt.Errorf("--out: %w", err))
	}
	if err := dashboards.WriteJSON(c.dir, c.legacyHostname, names); err != nil {
		return err
	}
	logger.Info("dashboards written", "dir", c.dir)
	return nil
}

func (c *generateRulesCommand) run(context.Context, *slog.Logger) error {
	var err error
	opts := alerts.DefaultOptions()
	opts.LegacyHostnameLabel = c.legacyHostname
	if opts.Names, err = parseReads(c.names); err != nil {
		return err
	}
	opts.RunbookBaseURL = c.runbookBaseURL
	opts.TeamLabel = c.teamLabel
	if c.teamMap != "" {
		if opts.Teams, err = team.LoadMap(c.teamMap); err != nil {
			return badInput(fmt.Errorf("--team-map: %w", err))
		}
	}
	if c.budgets != "" {
		if opts.Budgets, err = alerts.LoadBudgets(c.budgets); err != nil {
			return badInput(fmt.Errorf("--budgets.file: %w", err))
		}
	}
	b, err := alerts.Generate(opts)
	if err != nil {
		return badInput(err)
	}
	if c.out == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	f, err := createOutput("--out", c.out)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write rules: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write rules: %w", err)
	}
	return nil
}
