//go:build e2e

// Package e2e holds end-to-end tests: the real gputally binary against a real
// Prometheus on loopback.
package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dashboards"
)

// TestRulesAndDashboardsAgainstPrometheus scrapes `gputally exporter
// --backend=sim` (whose default scenario has pods holding GPUs they leave idle)
// every second with a real Prometheus that loads the generated rules, then
// checks that every dashboard query and every recording rule of the file
// returns series and that GPUAllocatedButIdle fires.
func TestRulesAndDashboardsAgainstPrometheus(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	ctx := context.Background()

	exporterAddr := promFreeAddr(t)
	promStartProcess(t, gputally, "exporter", "--backend=sim", "--web.listen-address="+exporterAddr)
	promEventually(t, 30*time.Second, 200*time.Millisecond, "exporter serves the ledger", func() (bool, string) {
		body, err := promGet(ctx, "http://"+exporterAddr, "/metrics")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(body), "gputally_cost_eur_total{"), "no gputally_cost_eur_total yet"
	})

	opts := alerts.DefaultOptions()
	// rate() divides by the whole window, so the window must not be longer
	// than the data the test has for the EUR per hour to come out right.
	opts.IdleWindow = 10 * time.Second
	opts.IdleFor = 3 * time.Second
	// Month to date and the forecast need one step of the budget group.
	opts.BudgetStep = 5 * time.Second
	rules, err := alerts.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	built, err := alerts.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for _, g := range built.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
			}
		}
	}
	rulesPath := filepath.Join(dir, "rules.yaml")
	configPath := filepath.Join(dir, "prometheus.yml")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
`, rulesPath, opts.ExporterJob, exporterAddr)
	for path, content := range map[string][]byte{rulesPath: rules, configPath: []byte(config)} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	promAddr := promFreeAddr(t)
	prom := "http://" + promAddr
	promStartProcess(t, prometheus,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr,
		"--log.level=warn",
	)
	promEventually(t, 60*time.Second, 250*time.Millisecond, "prometheus ready", func() (bool, string) {
		_, err := promGet(ctx, prom, "/-/ready")
		return err == nil, fmt.Sprint(err)
	})
	promEventually(t, 60*time.Second, 500*time.Millisecond, "a few scrapes of the exporter", func() (bool, string) {
		n, err := promInstant(ctx, prom, fmt.Sprintf(`count_over_time(up{job=%q}[1m]) >= 5 and up == 1`, opts.ExporterJob))
		return err == nil && n == 1, fmt.Sprintf("%d series, %v", n, err)
	})

	t.Run("recording rules", func(t *testing.T) {
		// Every rule the file holds: without a team map, team label or
		// budgets, their constants are not written.
		promAllReturnSeries(t, ctx, prom, slices.Sorted(maps.Keys(records)))
	})

	t.Run("dashboard queries", func(t *testing.T) {
		ds, err := dashboards.All(opts.Names)
		if err != nil {
			t.Fatal(err)
		}
		var queries []string
		for _, q := range dashboards.Queries(ds) {
			queries = append(queries, dashboards.ExpandVariables(q.Expr, "1m"))
		}
		promAllReturnSeries(t, ctx, prom, queries)
	})

	t.Run("idle alert fires", func(t *testing.T) {
		var firing promAlert
		promEventually(t, 90*time.Second, time.Second, "GPUAllocatedButIdle firing", func() (bool, string) {
			as, err := promAlerts(ctx, prom)
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, a := range as {
				seen = append(seen, a.Labels["alertname"]+"/"+a.State)
				if a.Labels["alertname"] == "GPUAllocatedButIdle" && a.State == "firing" {
					firing = a
					return true, ""
				}
			}
			return false, fmt.Sprintf("alerts %v", seen)
		})
		if firing.Labels["pod"] == "" || firing.Labels["namespace"] == "" {
			t.Errorf("GPUAllocatedButIdle fired without its holder: labels %v", firing.Labels)
		}
		if firing.Labels["severity"] == "" {
			t.Errorf("GPUAllocatedButIdle without severity: labels %v", firing.Labels)
		}
		if d := firing.Annotations["description"]; !strings.Contains(d, "EUR per hour") || strings.Contains(d, "costs 0.00 EUR") {
			t.Errorf("description %q does not state the idle EUR per hour", d)
		}
		// The alert's value is the holder's idle EUR per hour: at most what
		// its whole GPU costs per hour, and not a vanishing part of it.
		eurPerHour, err := strconv.ParseFloat(firing.Value, 64)
		if err != nil {
			t.Fatalf("alert value %q: %v", firing.Value, err)
		}
		gpuPerHour, err := promScalar(ctx, prom, fmt.Sprintf(`sum(gputally_gpu_hourly_cost_eur{UUID=%q})`, firing.Labels["UUID"]))
		if err != nil {
			t.Fatal(err)
		}
		if eurPerHour <= 0.05*gpuPerHour || eurPerHour > 1.1*gpuPerHour {
			t.Errorf("idle cost %.4f EUR/h for a GPU that costs %.4f EUR/h", eurPerHour, gpuPerHour)
		}
	})
}

// promAllReturnSeries polls until every query returns at least one series, and
// fails with the queries that never did.
func promAllReturnSeries(t *testing.T, ctx context.Context, prom string, queries []string) {
	t.Helper()
	if len(queries) == 0 {
		t.Fatal("no queries")
	}
	pending := map[string]string{}
	for _, q := range queries {
		pending[q] = "not run"
	}
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(pending) > 0 {
		for q := range pending {
			n, err := promInstant(ctx, prom, q)
			switch {
			case err != nil:
				pending[q] = err.Error()
			case n == 0:
				pending[q] = "no series"
			default:
				delete(pending, q)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	var failed []string
	for q, why := range pending {
		failed = append(failed, fmt.Sprintf("%s\n    → %s", q, why))
	}
	sort.Strings(failed)
	for _, f := range failed {
		t.Errorf("query returned no series within 60s: %s", f)
	}
}
