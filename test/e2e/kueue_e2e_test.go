//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kueueMixScenario is the report's job mix for Kueue quotas (its comment
// has the hand computation).
var kueueMixScenario = filepath.Join("..", "..", "report", "testdata", "scenarios", "kueue-mix.yaml")

// TestKueueQuotaAgainstPrometheusAndVictoriaMetrics simulates two hours of
// the job mix at 30 s scrapes, backfills it into a real Prometheus and
// imports it into a real VictoriaMetrics, and checks that the report on each
// reads the 30 s scrape interval and gives the quotas of the devices busy at
// the same time: team ml (train + tune) at most 2 at once, ⌈2 × 1.2⌉ = 3;
// team ci 1 at once, ⌈1.2⌉ = 2 (per step bucket they were 6 and 9).
func TestKueueQuotaAgainstPrometheusAndVictoriaMetrics(t *testing.T) {
	needScenario(t, kueueMixScenario)
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	victoria := promLookPath(t, "victoria-metrics")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	history := filepath.Join(dir, "history.om")
	runTool(t, gputally, "simulate", "history", "--scenario", kueueMixScenario, "--duration", "2h",
		"--scrape-interval", "30s", "--start", "2026-03-02T00:00:00Z", "--out", history)
	teams := filepath.Join(dir, "teams.yaml")
	if err := os.WriteFile(teams, []byte("teams:\n  ml: [train, tune]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	quotas := func(t *testing.T, base, name string) (map[string]int, string) {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		runTool(t, gputally, "report", "--prometheus.url="+base, "--range=2h", "--end=2026-03-02T02:00:00Z", "--team-map="+teams,
			"--allow-partial", "--format=json", "--out="+out)
		var r struct {
			Apply struct {
				Kueue string `json:"kueue"`
			} `json:"apply"`
		}
		readJSON(t, out, &r)
		q := map[string]int{}
		dec := yaml.NewDecoder(strings.NewReader(r.Apply.Kueue))
		for {
			var o struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
				Spec struct {
					ResourceGroups []struct {
						Flavors []struct {
							Resources []struct {
								Name         string `yaml:"name"`
								NominalQuota int    `yaml:"nominalQuota"`
							} `yaml:"resources"`
						} `yaml:"flavors"`
					} `yaml:"resourceGroups"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&o); err != nil {
				break
			}
			for _, g := range o.Spec.ResourceGroups {
				for _, f := range g.Flavors {
					for _, res := range f.Resources {
						q[o.Metadata.Name+" "+res.Name] = res.NominalQuota
					}
				}
			}
		}
		return q, r.Apply.Kueue
	}
	check := func(t *testing.T, engine string, q map[string]int, text string) {
		t.Helper()
		if q["ml nvidia.com/gpu"] != 3 || q["ci nvidia.com/gpu"] != 2 || !strings.Contains(text, "(in one 30s scrape interval)") {
			t.Errorf("%s: quotas %v, want ml 3 and ci 2 read per 30s scrape interval:\n%s", engine, q, text)
		}
	}
	prom := promBackfilled(t, promtool, prometheus, history, dir)
	q, text := quotas(t, prom, "prometheus")
	check(t, "Prometheus", q, text)
	vm := vmStarted(t, victoria, dir)
	vmImport(t, vm, history)
	q, text = quotas(t, vm, "victoria-metrics")
	check(t, "VictoriaMetrics", q, text)
}
