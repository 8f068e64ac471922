package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dashboards"
)

// generateDashboardsCommand writes the Grafana dashboards as JSON.
type generateDashboardsCommand struct {
	dir            string
	legacyHostname bool
}

// generateRulesCommand writes the Prometheus alert and recording rules.
type generateRulesCommand struct {
	out            string
	legacyHostname bool
}

func newGenerateCommands(app *kingpin.Application) (*generateDashboardsCommand, *generateRulesCommand) {
	gen := app.Command("generate", "Write the dashboards or the Prometheus rules.")
	d, r := &generateDashboardsCommand{}, &generateRulesCommand{}
	dc := gen.Command("dashboards", "Write every Grafana dashboard as <name>.json.")
	dc.Flag("out", "Directory to write to.").Required().StringVar(&d.dir)
	legacyHostnameFlag(dc).BoolVar(&d.legacyHostname)
	rc := gen.Command("rules", "Write the alert and recording rules file (the thresholds of docs and the Helm chart).")
	rc.Flag("out", "File to write; - for standard output.").Default("-").StringVar(&r.out)
	legacyHostnameFlag(rc).BoolVar(&r.legacyHostname)
	return d, r
}

func (c *generateDashboardsCommand) run(_ context.Context, logger *slog.Logger) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return badInput(fmt.Errorf("--out: %w", err))
	}
	if err := dashboards.WriteJSON(c.dir, c.legacyHostname); err != nil {
		return err
	}
	logger.Info("dashboards written", "dir", c.dir)
	return nil
}

func (c *generateRulesCommand) run(context.Context, *slog.Logger) error {
	opts := alerts.DefaultOptions()
	opts.LegacyHostnameLabel = c.legacyHostname
	b, err := alerts.Generate(opts)
	if err != nil {
		return err
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
