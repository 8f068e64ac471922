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
	"github.com/gputally/gputally/team"
)

// TestRulesAndDashboardsAgainstPrometheus scrapes `gputally exporter
// --backend=sim` (whose default scenario has pods holding GPUs they leave idle),
// a second one on the simulated HAMi node (testdata/scenarios/fractional:
// the shares' series) and a kube-state-metrics of a pod waiting for GPUs
// (testdata/kube-state-metrics-waiting.prom) every second with a real
// Prometheus that loads the generated rules, then checks that every dashboard
// query and every recording rule of the file returns series, that
// GPUAllocatedButIdle fires, and that the waiting pod is fragmented and
// fires GPUPodsWaitingWhileIdle with its team, runbook and EUR.
func TestRulesAndDashboardsAgainstPrometheus(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	ctx := context.Background()

	exporterAddr, hamiAddr := promFreeAddr(t), promFreeAddr(t)
	promStartProcess(t, gputally, "exporter", "--backend=sim", "--web.listen-address="+exporterAddr)
	// The HAMi node's pods come from the simulated node itself (no
	// --attribution.pods.enabled): its shares are held from the first sample.
	promStartProcess(t, gputally, "exporter", "--backend=sim", "--web.listen-address="+hamiAddr,
		"--sim.scenario="+filepath.Join("..", "..", "testdata", "scenarios", "fractional", "hami-node.yaml"))
	for _, addr := range []string{exporterAddr, hamiAddr} {
		promEventually(t, 30*time.Second, 200*time.Millisecond, "exporter serves the ledger", func() (bool, string) {
			body, err := promGet(ctx, "http://"+addr, "/metrics")
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(string(body), "gputally_cost_eur_total{"), "no gputally_cost_eur_total yet"
		})
	}

	ksmText, err := os.ReadFile(filepath.Join("testdata", "kube-state-metrics-waiting.prom"))
	if err != nil {
		t.Fatal(err)
	}
	ksm := serveText(t, string(ksmText))

	opts := alerts.DefaultOptions()
	// rate() divides by the whole window, so the window must not be longer
	// than the data the test has for the EUR per hour to come out right.
	opts.IdleWindow = 10 * time.Second
	opts.IdleFor = 3 * time.Second
	// The waiting pod was created long before the test: it has waited longer
	// than any threshold from the first scrape.
	opts.WaitFor = 3 * time.Second
	if opts.Teams, err = team.ParseMap([]byte("teams:\n  ml-research: [research]\n")); err != nil {
		t.Fatal(err)
	}
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
      - targets: [%q, %q]
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%q]
`, rulesPath, opts.ExporterJob, exporterAddr, hamiAddr, ksm)
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
	promEventually(t, 60*time.Second, 500*time.Millisecond, "a few scrapes of the exporters", func() (bool, string) {
		n, err := promInstant(ctx, prom, fmt.Sprintf(`count_over_time(up{job=%q}[1m]) >= 5 and up == 1`, opts.ExporterJob))
		return err == nil && n == 2, fmt.Sprintf("%d series, %v", n, err)
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

	// kube-state-metrics' nodes offer 4 GPUs each with 2 bound: 4 free in
	// all, 2 on either — research/train-4's 4 are fragmented.
	t.Run("waiting rules", func(t *testing.T) {
		for q, want := range map[string]float64{
			fmt.Sprintf(`sum(%s{namespace="research", pod="train-4"})`, alerts.RulePodWaitingGPUs):     4,
			fmt.Sprintf(`sum(%s{namespace="research", pod="train-4"})`, alerts.RuleFragmentedGPUs):     4,
			fmt.Sprintf(`sum(%s{node=~"ksm-node-.", resource="nvidia_com_gpu"})`, alerts.RuleFreeGPUs): 4,
			fmt.Sprintf(`max(%s{node=~"ksm-node-.", resource="nvidia_com_gpu"})`, alerts.RuleFreeGPUs): 2,
		} {
			if got, err := promScalar(ctx, prom, q); err != nil || got != want {
				t.Errorf("%s = %g (%v), want %g", q, got, err, want)
			}
		}
	})

	t.Run("waiting alert fires", func(t *testing.T) {
		var firing promAlert
		promEventually(t, 90*time.Second, time.Second, "GPUPodsWaitingWhileIdle firing", func() (bool, string) {
			as, err := promAlerts(ctx, prom)
			if err != nil {
				return false, err.Error()
			}
			for _, a := range as {
				if a.Labels["alertname"] == "GPUPodsWaitingWhileIdle" && a.State == "firing" {
					firing = a
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d alerts, GPUPodsWaitingWhileIdle not firing", len(as))
		})
		l := firing.Labels
		if l["namespace"] != "research" || l["pod"] != "train-4" || l["resource"] != "nvidia_com_gpu" || l["team"] != "ml-research" {
			t.Errorf("GPUPodsWaitingWhileIdle labels %v, want research/train-4, nvidia_com_gpu, team ml-research", l)
		}
		if !strings.HasSuffix(firing.Annotations["runbook_url"], "/docs/runbooks/GPUPodsWaitingWhileIdle.md") || !strings.Contains(firing.Annotations["summary"], "EUR per hour") {
			t.Errorf("GPUPodsWaitingWhileIdle annotations %v, want its runbook and EUR per hour", firing.Annotations)
		}
		// Its value is the idle EUR per hour of the resource: above 0, at most
		// what all GPUs of the resource cost per hour.
		eurPerHour, err := strconv.ParseFloat(firing.Value, 64)
		if err != nil {
			t.Fatalf("alert value %q: %v", firing.Value, err)
		}
		all, err := promScalar(ctx, prom, `sum(gputally_gpu_hourly_cost_eur)`)
		if err != nil {
			t.Fatal(err)
		}
		if !(eurPerHour > 0) || eurPerHour > 1.1*all {
			t.Errorf("idle EUR per hour %g while pods waited, all GPUs cost %g", eurPerHour, all)
		}
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
