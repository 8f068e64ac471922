//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dayOneNode is one H100 held by a notebook that does nothing: its release
// frees the GPU.
const dayOneNode = `seed: 2911
node: {hostname: gpu-node-e}
gpus:
  - model: NVIDIA H100 80GB HBM3
workloads:
  - {name: notebook, pattern: idle, fb_mib: 16000}
pods:
  - {namespace: dev, pod: notebook-0, container: jupyter, resource: nvidia.com/gpu, device: {gpu: 0}, workload: notebook}
`

// dayOneFlatBook prices the GPU at a flat 2.00 EUR/h.
const dayOneFlatBook = `currency: EUR
models:
  - {match: ".*", hourly_eur: 2.00}
`

// TestDayOneAgainstPrometheus runs the README's day-one command,
// `report --source=dcgm-exporter --range=30d`, against a real Prometheus
// with its default retention (15 days) over 17 days of a history shaped as
// clusters have it: dcgm-exporter scraped every minute, one scrape in 20
// stored 4–40 ms late. Backfilled in day-long blocks, Prometheus drops at
// start the blocks that end more than 15 days before the newest one (the
// last scrape, at 17 d, alone in its block): the first two days, so the
// engine holds the last 15, half the range. The report exits 0 without
// --allow-partial; it covers the history there is — from the first kept
// scrape's grid step, 1 min before day 2 — 360 of the 720 hours asked for,
// and says so; its grid is the minute it measures, no time unknown for the
// late scrapes; and the idle notebook's release frees 2.00 EUR/h × 730.5 h
// = 1461.00 EUR a month, scaled by the hours covered, not by the 30 days
// asked for (730.53).
func TestDayOneAgainstPrometheus(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	scenario, book := filepath.Join(dir, "node.yaml"), filepath.Join(dir, "book.yaml")
	for path, text := range map[string]string{scenario: dayOneNode, book: dayOneFlatBook} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(17 * 24 * time.Hour)
	om := filepath.Join(dir, "history.om")
	runTool(t, gputally, "simulate", "history", "--scenario", scenario, "--duration", "17d", "--start", start.Format(time.RFC3339),
		"--sample-interval=1m", "--scrape-interval=1m", "--scrape-jitter=40ms", "--flavor", "dcgm-exporter", "--out", om)
	base := promBackfilledKept(t, promtool, prometheus, dir, "24h", "", filterOpenMetrics(t, om, dcgmFamilies))

	out := filepath.Join(dir, "report.json")
	runTool(t, gputally, "report", "--source=dcgm-exporter", "--prometheus.url="+base, "--range=30d", "--end="+end.Format(time.RFC3339),
		"--cost.price-book="+book, "--format=json", "--out="+out, "--query.timeout=10m")
	var r struct {
		Start    time.Time `json:"start"`
		Partial  bool      `json:"partial"`
		Sampling string    `json:"sampling"`
		Warnings []string  `json:"warnings"`
		Coverage struct {
			UnknownHours float64 `json:"unknown_hours"`
			MissingHours float64 `json:"missing_hours"`
		} `json:"coverage"`
		Recommendations []struct {
			Kind    string  `json:"kind"`
			Target  string  `json:"target"`
			Freed   float64 `json:"freed_eur_per_month"`
			Figures string  `json:"figures"`
		} `json:"recommendations"`
	}
	readJSON(t, out, &r)
	from := start.Add(48*time.Hour - time.Minute)
	if !r.Start.Equal(from) || r.Partial || r.Coverage.UnknownHours != 0 || r.Coverage.MissingHours != 0 {
		t.Errorf("report from %s, partial %v, %g h unknown, %g h missing; want from %s, complete", r.Start, r.Partial, r.Coverage.UnknownHours, r.Coverage.MissingHours, from)
	}
	said := false
	for _, w := range r.Warnings {
		said = said || strings.Contains(w, "no data before "+from.Format(time.RFC3339)) && strings.Contains(w, "360.0 of the 720.0 hours asked for")
	}
	if !said {
		t.Errorf("warnings %q, want one saying from when the history is", r.Warnings)
	}
	if !strings.Contains(r.Sampling, "a 1m0s grid (dcgm-exporter scraped every 1m0s") {
		t.Errorf("sampling %q, want the 1m0s grid measured", r.Sampling)
	}
	if len(r.Recommendations) != 1 || r.Recommendations[0].Kind != "release" || r.Recommendations[0].Target != "dev/notebook-0/jupyter" ||
		relDiff(r.Recommendations[0].Freed, 2*730.5) > 1e-9 || r.Recommendations[0].Figures != "sampled" {
		t.Errorf("recommendations %+v, want the notebook's release freeing 1461.00 EUR/month on sampled figures", r.Recommendations)
	}
}
