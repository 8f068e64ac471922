//go:build e2e

package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// reportSummary is what `gputally simulate history --summary` writes: the
// ledger's own totals at the end of the simulated period, per namespace and
// state and per series.
type reportSummary struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Namespaces []struct {
		Namespace string  `json:"namespace"`
		State     string  `json:"state"`
		Seconds   float64 `json:"seconds"`
		EUR       float64 `json:"eur"`
	} `json:"namespaces"`
	Series []struct {
		GPU       string  `json:"gpu"`
		Device    string  `json:"device"` // the GPU's UUID, or its MIG instance's
		Namespace string  `json:"namespace"`
		Pod       string  `json:"pod"`
		Container string  `json:"container"`
		State     string  `json:"state"`
		Seconds   float64 `json:"seconds"`
		EUR       float64 `json:"eur"`
	} `json:"series"`
}

// totalEUR is the EUR of every series of the summary.
func (s reportSummary) totalEUR() float64 {
	var eur float64
	for _, r := range s.Series {
		eur += r.EUR
	}
	return eur
}

// reportJSON is the part of `gputally report --format=json` the test reads.
type reportJSON struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Partial bool      `json:"partial"`
	Fleet   struct {
		Totals struct {
			GPUHours       float64 `json:"gpu_hours"`
			CostEUR        float64 `json:"cost_eur"`
			IdleEUR        float64 `json:"idle_eur"`
			UnallocatedEUR float64 `json:"unallocated_eur"`
		} `json:"totals"`
	} `json:"fleet"`
	Holdings []struct {
		Namespace string `json:"namespace"`
		Pod       string `json:"pod"`
		Usage     struct {
			P95Activity float64 `json:"p95_activity"`
			P99FBMiB    float64 `json:"p99_fb_mib"`
		} `json:"usage"`
	} `json:"holdings"`
	Recommendations []struct {
		Kind        string   `json:"kind"`
		Target      string   `json:"target"`
		Profile     string   `json:"mig_profile"`
		Replicas    int      `json:"replicas"`
		Holdings    []string `json:"holdings"`
		FreedGPUs   []string `json:"freed_gpus"`
		Freed       float64  `json:"freed_eur_per_month"`
		Reclaimable float64  `json:"reclaimable_eur_per_month"`
	} `json:"recommendations"`
	FreedEURPerMonth float64  `json:"freed_eur_per_month"`
	Warnings         []string `json:"warnings"`
	Apply            struct {
		MIGParted   string `json:"mig_parted"`
		TimeSlicing string `json:"time_slicing"`
		Kueue       string `json:"kueue"`
	} `json:"apply"`
}

func within1pct(got, want float64) bool { return math.Abs(got-want) <= 0.01*math.Abs(want) }

// TestReportAgainstBackfilledPrometheus simulates a week of the report
// scenario, backfills a real Prometheus with promtool, runs `gputally report`
// against it on loopback and checks the report against the simulation's own
// ledger: totals within 1 %, and the recommendations the scenario was built to
// need, with their EUR per month; and a range longer than the data
// reported as the history there is.
func TestReportAgainstBackfilledPrometheus(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	history, summaryPath := filepath.Join(dir, "history.om"), filepath.Join(dir, "summary.json")
	runTool(t, gputally, "simulate", "history", "--scenario", filepath.Join("testdata", "report-scenario.yaml"),
		"--duration", "7d", "--scrape-interval", "30s", "--start", "2026-01-05T00:00:00Z", "--out", history, "--summary", summaryPath)
	var sum reportSummary
	readJSON(t, summaryPath, &sum)
	base := promBackfilled(t, promtool, prometheus, history, dir)
	if err := os.Remove(history); err != nil { // 2 GB of text, now in the blocks
		t.Fatal(err)
	}

	out := filepath.Join(dir, "report.json")
	runTool(t, gputally, "report", "--prometheus.url="+base, "--range=7d", "--end="+sum.End.Format(time.RFC3339),
		"--format=json", "--out="+out)
	var r reportJSON
	readJSON(t, out, &r)
	if r.Partial || !r.Start.Equal(sum.Start) || !r.End.Equal(sum.End) {
		t.Errorf("report over %s – %s (partial %v), want %s – %s, complete", r.Start, r.End, r.Partial, sum.Start, sum.End)
	}

	// Totals against the ledger.
	var seconds, eur, idle, unalloc float64
	by := map[string]float64{} // EUR by namespace/pod/state
	for _, s := range sum.Series {
		seconds += s.Seconds
		eur += s.EUR
		switch s.State {
		case "idle":
			idle += s.EUR
		case "unallocated":
			unalloc += s.EUR
		}
		by[s.Namespace+"/"+s.Pod+"/"+s.State] += s.EUR
		by[s.Namespace+"/"+s.Pod] += s.EUR
		by[s.Namespace] += s.EUR
	}
	f := r.Fleet.Totals
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"device-hours", f.GPUHours, seconds / 3600},
		{"cost EUR", f.CostEUR, eur},
		{"idle EUR", f.IdleEUR, idle},
		{"unallocated EUR", f.UnallocatedEUR, unalloc},
	} {
		if !within1pct(c.got, c.want) {
			t.Errorf("report %s %.3f, ledger %.3f: more than 1 %% apart", c.name, c.got, c.want)
		}
	}

	// The recommendations the scenario needs, with the EUR the ledger implies
	// (docs/report.md: a month is 730.5 h; the range is 168).
	const month = 730.5 / 168
	find := func(kind, target string) (int, bool) {
		for i, rec := range r.Recommendations {
			if rec.Kind == kind && rec.Target == target {
				return i, true
			}
		}
		return 0, false
	}
	// idle-0 alone held GPU 4 all week: releasing it frees the GPU's cost.
	if i, ok := find("release", "research/idle-0/main"); !ok {
		t.Errorf("no release recommendation for research/idle-0: %+v", r.Recommendations)
	} else if rec, want := r.Recommendations[i], by["research/idle-0"]*month; !within1pct(rec.Freed, want) || len(rec.FreedGPUs) != 1 {
		t.Errorf("release research/idle-0 frees %v, %.2f EUR/month, want its GPU, %.2f (its cost × 730.5/168)", rec.FreedGPUs, rec.Freed, want)
	}
	// Three low-duty notebooks on three GPUs share one with 3 replicas: the two
	// cheapest of their GPUs are freed.
	if i, ok := find("time-slicing", "dev"); !ok {
		t.Errorf("no time-slicing recommendation for namespace dev: %+v", r.Recommendations)
	} else {
		costs := []float64{by["dev/dev-a"], by["dev/dev-b"], by["dev/dev-c"]}
		slices.Sort(costs)
		if rec, want := r.Recommendations[i], (costs[0]+costs[1])*month; rec.Replicas != 3 || len(rec.Holdings) != 3 || !within1pct(rec.Freed, want) {
			t.Errorf("time-slicing dev: %d replicas for %v freeing %.2f EUR/month, want 3 for dev-a, dev-b, dev-c freeing %.2f", rec.Replicas, rec.Holdings, rec.Freed, want)
		}
	}
	if !strings.Contains(r.Apply.TimeSlicing, "replicas: 3") || !strings.Contains(r.Apply.Kueue, "name: dev") {
		t.Errorf("configuration to apply lacks the time-slicing replicas or the dev ClusterQueue:\n%s\n%s", r.Apply.TimeSlicing, r.Apply.Kueue)
	}
	// web-0 peaks below 6 GB: 1g.10gb fits its memory. Alone it frees no GPU;
	// 6/7 of its GPU is reclaimable.
	t.Run("mig 1g.10gb for web-0", func(t *testing.T) {
		i, ok := find("mig", "H100-80GB")
		if !ok {
			t.Fatalf("no MIG recommendation for the H100s: %+v", r.Recommendations)
		}
		rec, want := r.Recommendations[i], by["inference/web-0"]*6/7*month
		if rec.Profile != "1g.10gb ×1" || !slices.Equal(rec.Holdings, []string{"inference/web-0/main"}) || rec.Freed != 0 || !within1pct(rec.Reclaimable, want) {
			t.Errorf("web-0: %s for %v freeing %.2f, reclaimable %.2f EUR/month; want 1g.10gb ×1, 0 freed, %.2f reclaimable", rec.Profile, rec.Holdings, rec.Freed, rec.Reclaimable, want)
		}
		if !strings.Contains(r.Apply.MIGParted, "1g.10gb: 1") || strings.Contains(r.Apply.MIGParted, "devices: all") {
			t.Errorf("mig-parted config lacks the 1g.10gb instance or touches all GPUs:\n%s", r.Apply.MIGParted)
		}
	})
	freed := 0.0
	for _, rec := range r.Recommendations {
		freed += rec.Freed
	}
	if !within1pct(r.FreedEURPerMonth, freed) {
		t.Errorf("headline %.2f EUR/month freed, recommendations free %.2f", r.FreedEURPerMonth, freed)
	}

	// The same report as Markdown and HTML, and a range reaching before the
	// data (8 days over the 7 there are): not a gap but the history there
	// is — exit 0, complete, from the history's start, saying so — and its
	// per-month figures scaled by the 168 hours covered: the 7-day
	// report's headline.
	for _, format := range []string{"md", "html"} {
		runTool(t, gputally, "report", "--prometheus.url="+base, "--range=7d", "--end="+sum.End.Format(time.RFC3339),
			"--format="+format, "--out="+filepath.Join(dir, "report."+format))
	}
	early := filepath.Join(dir, "early.json")
	runTool(t, gputally, "report", "--prometheus.url="+base, "--range=8d", "--end="+sum.End.Format(time.RFC3339),
		"--format=json", "--out="+early)
	var e reportJSON
	readJSON(t, early, &e)
	said := slices.ContainsFunc(e.Warnings, func(w string) bool {
		return strings.Contains(w, "no data before "+sum.Start.Format(time.RFC3339)) && strings.Contains(w, "168.0 of the 192.0 hours asked for")
	})
	if e.Partial || !e.Start.Equal(sum.Start) || !said || math.Abs(e.FreedEURPerMonth-r.FreedEURPerMonth) > 1e-6*r.FreedEURPerMonth {
		t.Errorf("8-day report from %s (partial %v, warnings %q), %.2f EUR/month freed; want from %s, complete, saying so, %.2f",
			e.Start, e.Partial, e.Warnings, e.FreedEURPerMonth, sum.Start, r.FreedEURPerMonth)
	}
}
