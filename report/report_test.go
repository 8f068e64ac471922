package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/render"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var testEnd = time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)

func testConfig() Config {
	c := DefaultConfig()
	c.End = testEnd
	c.Out = "-"
	c.Now = func() time.Time { return testEnd }
	return c
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestRecommendationsHandComputed checks the recommendation math on the test
// fleet (fake_test.go), every H100 at 1.50 EUR/h and the A100 at 2.50 EUR/h over
// 168 hours, so each H100 costs 252 EUR and the A100 420 EUR; a month is
// 730.5 h, 730.5/168 of the range (docs/report.md).
func TestRecommendationsHandComputed(t *testing.T) {
	r, err := generateFrom(context.Background(), testConfig(), fleetQuerier(testFleet(), time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	const month = 730.5 / 168
	want := []struct {
		kind, target, profile string
		replicas              int
		freed, reclaimable    float64
	}{
		// dev-a/b/c: 3 GPUs of 252 EUR → 1 GPU with 3 replicas: 2 GPUs free.
		{"time-slicing", "dev", "", 3, 2 * 252 * month, 0},
		// node-spare: its A100 unallocated all week, 420 EUR.
		{"drain", "node-spare", "", 0, 420 * month, 0},
		// forgotten: alone on its GPU, 252 EUR, all idle: the GPU becomes free.
		{"release", "research/forgotten/main", "", 0, 252 * month, 0},
		// web-0: 6144 MiB × 1.2 = 7373 MiB ≤ 9984 MiB, 10 % ≤ 1/7: 1g.10gb. Alone it
		// frees no GPU; 6/7 of its GPU is capacity for other work.
		{"mig", "H100-80GB", "1g.10gb ×1", 0, 0, 252 * 6.0 / 7 * month},
	}
	if len(r.Recommendations) != len(want) {
		t.Fatalf("got %d recommendations, want %d: %+v", len(r.Recommendations), len(want), r.Recommendations)
	}
	freed, reclaimable := 0.0, 0.0
	for i, w := range want {
		g := r.Recommendations[i]
		if g.Kind != w.kind || g.Target != w.target || g.Profile != w.profile || g.Replicas != w.replicas ||
			!near(g.FreedEURPerMonth, w.freed) || !near(g.ReclaimableEURPerMonth, w.reclaimable) {
			t.Errorf("recommendation %d = %s %s %s ×%d freed %.4f reclaimable %.4f EUR, want %s %s %s ×%d freed %.4f reclaimable %.4f EUR",
				i, g.Kind, g.Target, g.Profile, g.Replicas, g.FreedEURPerMonth, g.ReclaimableEURPerMonth,
				w.kind, w.target, w.profile, w.replicas, w.freed, w.reclaimable)
		}
		freed += w.freed
		reclaimable += w.reclaimable
	}
	if !near(r.FreedEURPerMonth, freed) || !near(r.ReclaimableEURPerMonth, reclaimable) || r.HoursPerMonth != 730.5 {
		t.Errorf("headline freed %.4f reclaimable %.4f per %g h, want %.4f and %.4f per 730.5 h",
			r.FreedEURPerMonth, r.ReclaimableEURPerMonth, r.HoursPerMonth, freed, reclaimable)
	}
	f := r.Fleet.Totals
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"gpu hours", f.GPUHours, 7 * 168},
		{"cost", f.CostEUR, 6*252 + 420},
		{"idle EUR", f.IdleEUR, 3*0.9*252 + 252},
		{"unallocated EUR", f.UnallocatedEUR, 420},
		{"busy share", f.BusyShare, (168 + 3*16.8 + 168) / (6 * 168)},
	} {
		if !near(c.got, c.want) {
			t.Errorf("fleet %s = %.4f, want %.4f", c.name, c.got, c.want)
		}
	}
	if r.GPUs != 7 || r.Partial {
		t.Errorf("GPUs %d partial %v, want 7 and false", r.GPUs, r.Partial)
	}
	if len(r.Packing) != 1 || r.Packing[0].GPUsAfter != 1 || r.Packing[0].Layouts[0][0] != "1g.10gb" {
		t.Errorf("packing %+v, want one H100 with 1g.10gb", r.Packing)
	}
	// dev kept 3 GPUs busy at once: 3 × 1.2 → 4. research kept none busy: the
	// floor of 1, and a comment that says so.
	for _, s := range []string{"mig-devices:\n        1g.10gb: 1", "replicas: 3", "name: dev\n", "nominalQuota: 4",
		"#   nvidia.com/gpu: no device was busy or waited for in any interval; 1 is a floor so its jobs can still be admitted\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: research\n"} {
		if !strings.Contains(r.Apply.MIGParted+r.Apply.TimeSlicing+r.Apply.Kueue, s) {
			t.Errorf("configuration to apply lacks %q:\n%s\n%s\n%s", s, r.Apply.MIGParted, r.Apply.TimeSlicing, r.Apply.Kueue)
		}
	}
	if r.Fleet.Previous == nil || !near(r.Fleet.Previous.CostEUR, f.CostEUR) {
		t.Errorf("previous period %+v, want the same totals as this one", r.Fleet.Previous)
	}
}

func TestGroupsAndTeams(t *testing.T) {
	dir := t.TempDir()
	teams := filepath.Join(dir, "teams.yaml")
	if err := os.WriteFile(teams, []byte("teams:\n  ml: [inference, training]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.TeamMapFile = teams
	cfg.TeamLabel = "team"
	fleet := fleetQuerier(testFleet(), time.Hour)
	// kube-state-metrics puts dev-a in team "explorers"; the label wins over the map.
	fleet.series = append(fleet.series, fakeSeries{"kube_pod_labels", map[string]string{"namespace": "dev", "pod": "dev-a", "label_team": "explorers"},
		func(time.Time) float64 { return 1 }})
	r, err := generateFrom(context.Background(), cfg, fleet, discard())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, g := range r.Teams {
		got[g.Name] = g.Totals.HeldHours
	}
	want := map[string]float64{"ml": 336, "dev": 336, "explorers": 168, "research": 168}
	if len(got) != len(want) {
		t.Errorf("teams %v, want %v", got, want)
	}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("team %s held %.2f h, want %.2f", k, got[k], v)
		}
	}
	for _, g := range r.Models {
		if strings.Contains(g.Name, "H100") && (!near(g.Usage.PeakFBMiB, 70000) || !near(g.Usage.P95Activity, 0.95)) {
			t.Errorf("H100 usage %+v, want peak 70000 MiB, p95 95 %%", g.Usage)
		}
	}
	// A team's ClusterQueue admits its own namespaces only.
	ml := "metadata:\n  name: ml\nspec:\n  cohortName: gputally\n  namespaceSelector:\n    matchExpressions:\n      - key: kubernetes.io/metadata.name\n        operator: In\n        values:\n          - inference\n          - training\n"
	if !strings.Contains(r.Apply.Kueue, ml) {
		t.Errorf("Kueue config lacks the ml queue limited to inference and training:\n%s", r.Apply.Kueue)
	}
	// Namespace dev holds pods of teams dev and explorers: a LocalQueue for each.
	applyspec.CheckKueue(t, r.Apply.Kueue)
	for _, lq := range []string{"name: gputally-dev\n  namespace: dev\nspec:\n  clusterQueue: dev\n", "name: gputally-explorers\n  namespace: dev\nspec:\n  clusterQueue: explorers\n"} {
		if !strings.Contains(r.Apply.Kueue, lq) {
			t.Errorf("Kueue config lacks LocalQueue\n%s\nin:\n%s", lq, r.Apply.Kueue)
		}
	}
}

func TestBadInput(t *testing.T) {
	start := testEnd.Add(-7 * 24 * time.Hour)
	// Every GPU's data stops at 120 h: the last 48 h of the range missing.
	gappy := testFleet()
	for i := range gappy {
		gappy[i].to = start.Add(120 * time.Hour)
	}
	for _, tc := range []struct {
		name    string
		q       *fakeQuerier
		partial bool
		wantErr string
	}{
		{"no data", &fakeQuerier{}, false, "no GPU data"},
		{"query error", &fakeQuerier{err: errors.New("bad_data: parse error")}, false, "gputally_gpu_seconds_total: bad_data: parse error"},
		{"gaps", fleetQuerier(gappy, time.Hour), false, "gaps: node-a GPU 0 (GPU-0) 2026-01-10T00:00:00Z – 2026-01-12T00:00:00Z (48.0 h missing)"},
		{"gaps allowed", fleetQuerier(gappy, time.Hour), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.AllowPartial = tc.partial
			r, err := generateFrom(context.Background(), cfg, tc.q, discard())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !r.Partial || len(r.Warnings) == 0 {
				t.Errorf("partial %v warnings %v, want a report marked partial", r.Partial, r.Warnings)
			}
			var md bytes.Buffer
			if err := render.Render(&md, r, FormatMarkdown); err != nil || !strings.Contains(md.String(), "PARTIAL REPORT") {
				t.Errorf("markdown of a partial report does not say so (err %v)", err)
			}
		})
	}
}

// TestBoundedRequests checks that no request asks for more than
// MaxPointsPerQuery steps and that the split covers the range exactly once.
func TestBoundedRequests(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPointsPerQuery = 50
	rec := &rangeRecorder{Querier: fleetQuerier(testFleet(), time.Hour)}
	var progress bytes.Buffer
	cfg.Progress = &progress
	if _, err := generateFrom(context.Background(), cfg, rec, discard()); err != nil {
		t.Fatal(err)
	}
	points := map[string]int{}
	for _, c := range rec.calls {
		n := int(c.end.Sub(c.start)/c.step) + 1
		if n > 50 {
			t.Errorf("request %s from %s to %s asks for %d points", c.query, c.start, c.end, n)
		}
		points[c.query] += n
	}
	for q, n := range points {
		if want := fleetPoints(q); n != want {
			t.Errorf("%s: %d points in all, want %d", q, n, want)
		}
	}
	// Not a terminal: one progress line per request, no carriage returns.
	lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
	if strings.Contains(progress.String(), "\r") || len(lines) != len(rec.calls) {
		t.Errorf("progress %q: want %d lines without carriage returns", progress.String(), len(rec.calls))
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, fmt.Sprintf("report: %d/%d queries", len(rec.calls), len(rec.calls))) {
		t.Errorf("last progress line %q, want %d/%d queries", last, len(rec.calls), len(rec.calls))
	}
}

// fleetPoints is how many grid points in all a report on testFleet's week
// at an hour's step asks of query q, whatever the requests it is cut into.
func fleetPoints(q string) int {
	switch {
	case strings.HasPrefix(q, "count without ("): // the search for copies of a ledger series: this period
	case strings.Contains(q, " offset "): // devices busy at once, per the fake's 5m scrape interval
		return 7 * 24 * 12
	case strings.Contains(q, "gputally_gpu_seconds_total") || strings.Contains(q, "gputally_cost_eur_total") || strings.Contains(q, "gputally_energy_joules_total"):
		return 2*169 + 2 // from the bucket ending at the start; this period, the previous one and the last bucket (report/source/ledger/end.go)
	case strings.Contains(q, "[5m]"):
		return 7 * 24 * 12
	case strings.Contains(q, "vector(1)"):
		return 1 // the window probe, at the end
	case strings.Contains(q, "kube_pod_scheduler") || strings.Contains(q, "count_over_time(kube_node_status_allocatable"):
		return 1 // the GPU pods' schedulers and kube-state-metrics' scrape interval (report/source/waiting.go), at the end
	}
	return 168
}

type rangeCall struct {
	query      string
	start, end time.Time
	step       time.Duration
}

// rangeRecorder records each request; it is safe for concurrent use.
type rangeRecorder struct {
	engine.Querier
	mu    sync.Mutex
	calls []rangeCall
}

func (r *rangeRecorder) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	// The ledger asks for 1 ms past the end of each request it plans
	// (source's InclusiveEnd); the calls record the requests as planned.
	r.mu.Lock()
	r.calls = append(r.calls, rangeCall{q, start, end.Add(-time.Millisecond), step})
	r.mu.Unlock()
	return r.Querier.QueryRange(ctx, q, start, end, step)
}

func TestGoldenRenderers(t *testing.T) {
	r, err := generateFrom(context.Background(), goldenConfig(t), fleetQuerier(testFleet(), time.Hour), discard())
	if err != nil {
		t.Fatal(err)
	}
	r.Source = "test"
	for _, format := range []string{FormatMarkdown, FormatCSV, FormatJSON, FormatHTML} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := render.Render(&b, r, format); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "report.golden."+format)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s output differs from %s (run go test -update after checking the change)", format, golden)
			}
		})
	}
}

// TestGoldenEmptyReport: a report with nothing to advise — one GPU busy all
// week, no gaps, no faults — writes every empty list as [] in JSON, never
// null (testdata/report.empty.golden.json), so that a consumer can iterate
// any list without a check.
func TestGoldenEmptyReport(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier([]fakeGPU{alone("GPU-B", "0", "node-b", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000)}, time.Hour))
	r.Source = "test"
	var b bytes.Buffer
	if err := render.Render(&b, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.empty.golden.json")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("JSON output differs from %s (run go test -update after checking the change)", golden)
	}
	if bytes.Contains(b.Bytes(), []byte("null")) {
		t.Errorf("the empty report's JSON has a null:\n%s", b.String())
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"recommendations", "mig_packing", "warnings", "broken_gpus"} {
		if string(top[k]) != "[]" {
			t.Errorf("%s is %s, want []", k, top[k])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"range not multiple of step", func(c *Config) { c.Range = 90 * time.Minute }, "multiple of the step"},
		{"bad format", func(c *Config) { c.Format = "pdf" }, `format "pdf"`},
		{"no out", func(c *Config) { c.Out = "" }, "no output file"},
		{"headroom", func(c *Config) { c.Headroom = 0.5 }, "headroom"},
		{"resolution", func(c *Config) { c.Resolution = 2 * time.Hour }, "resolution"},
		{"threshold", func(c *Config) { c.LowDutyBelow = 2 }, "thresholds"},
		{"scheduler", func(c *Config) { c.Scheduler = "yunikorn" }, `scheduler "yunikorn": want one of auto, kueue, volcano`},
	} {
		c := testConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	c := testConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

// TestSharedAndMIGHoldings checks that MIG instances and time-sliced shares are
// never offered MIG or time-slicing again, but are released when idle, and
// that quotas name their resources.
func TestSharedAndMIGHoldings(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	mk := func(uuid, gi, pod string, busy float64, resource, sharing string) []fakeSeries {
		g := fakeGPU{uuid: uuid, model: h100, host: "node-m", ns: "svc", pod: pod, container: "c", rateEURPerHour: 1.4,
			busyShare: busy, activity: 0.01, fbMiB: 1000, hasActivity: true, hasFB: true, resource: resource, sharing: sharing}
		ss := fakeSeriesFor(g, time.Hour)
		for i := range ss {
			if gi != "" {
				ss[i].labels = with(ss[i].labels, "GPU_I_ID", gi, "GPU_I_PROFILE", "3g.40gb")
			}
		}
		return ss
	}
	q := &fakeQuerier{}
	q.series = append(q.series, mk("GPU-M", "1", "mig-idle", 0, "nvidia.com/mig-3g.40gb", "mig")...)
	q.series = append(q.series, mk("GPU-M", "2", "mig-busy", 0.2, "nvidia.com/mig-3g.40gb", "mig")...)
	q.series = append(q.series, mk("GPU-T", "", "ts-a", 0.1, "nvidia.com/gpu.shared", "time-slicing")...)
	q.series = append(q.series, mk("GPU-U", "", "ts-b", 0.1, "nvidia.com/gpu.shared", "time-slicing")...)
	r, err := generateFrom(context.Background(), testConfig(), q, discard())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Recommendations) != 1 || r.Recommendations[0].Kind != "release" || r.Recommendations[0].Target != "svc/mig-idle/c" {
		t.Errorf("recommendations %+v, want only the release of svc/mig-idle/c", r.Recommendations)
	}
	for _, s := range []string{"- name: nvidia.com/mig-3g.40gb\n", "- name: nvidia.com/gpu.shared\n", "nominalQuota: 3\n"} {
		if !strings.Contains(r.Apply.Kueue, s) {
			t.Errorf("Kueue config lacks %q:\n%s", s, r.Apply.Kueue)
		}
	}
}
