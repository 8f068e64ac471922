package report

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/model"
)

// The savings rules (docs/report.md), each on a fleet built so that a
// plausible mistake in the rule changes the result. Every GPU is held (or not)
// for the whole 168 h range unless said otherwise; a month is 730.5 h.

const (
	h100Name  = "NVIDIA H100 80GB HBM3"
	a100x80   = "NVIDIA A100-SXM4-80GB"
	perMonth  = 730.5 / 168
	rangeHour = 168.0
)

// alone is a pod alone on a whole GPU for the range.
func alone(uuid, index, host, model, ns, pod string, rate, busy, act, fbMiB float64) fakeGPU {
	return fakeGPU{uuid: uuid, index: index, model: model, host: host, ns: ns, pod: pod, container: "main", rateEURPerHour: rate,
		busyShare: busy, activity: act, fbMiB: fbMiB, hasActivity: true, hasFB: true, resource: "nvidia.com/gpu", sharing: "exclusive"}
}

func generate(t *testing.T, cfg Config, q *fakeQuerier) *Report {
	t.Helper()
	r, err := generateFrom(context.Background(), cfg, q, discard())
	if err != nil {
		t.Fatal(err)
	}
	checkNoGPUTwice(t, r)
	return r
}

func recsOf(r *Report, kind string) []advice.Recommendation {
	var out []advice.Recommendation
	for _, rec := range r.Recommendations {
		if rec.Kind == kind {
			out = append(out, rec)
		}
	}
	return out
}

// checkNoGPUTwice holds every report to the headline's rule: no GPU is freed
// by two recommendations, and the headline is the sum of what each frees.
func checkNoGPUTwice(t *testing.T, r *Report) {
	t.Helper()
	seen := map[string]string{}
	sum := 0.0
	for _, rec := range r.Recommendations {
		for _, g := range rec.FreedGPUs {
			if by, ok := seen[g]; ok {
				t.Errorf("GPU %s freed by %s and by %s %s", g, by, rec.Kind, rec.Target)
			}
			seen[g] = rec.Kind + " " + rec.Target
		}
		if len(rec.FreedGPUs) == 0 && rec.FreedEURPerMonth != 0 {
			t.Errorf("%s %s frees %.2f EUR/month without freeing a GPU", rec.Kind, rec.Target, rec.FreedEURPerMonth)
		}
		sum += rec.FreedEURPerMonth
	}
	if !near(r.FreedEURPerMonth, sum) {
		t.Errorf("headline %.4f EUR/month, recommendations free %.4f", r.FreedEURPerMonth, sum)
	}
}

// TestReleaseThreshold: at 3 % busy (below the 5 % threshold) a pod alone on
// its GPU is released and the whole GPU's cost is freed — its busy 3 %
// included, since the GPU becomes free; at 6 % it is kept.
func TestReleaseThreshold(t *testing.T) {
	q := fleetQuerier([]fakeGPU{
		alone("GPU-3", "0", "node-r", h100Name, "a", "three", 1.5, 0.03, 0.9, 70000),
		alone("GPU-6", "1", "node-r", h100Name, "b", "six", 1.5, 0.06, 0.9, 70000),
	}, time.Hour)
	r := generate(t, testConfig(), q)
	rel := recsOf(r, "release")
	if len(rel) != 1 || rel[0].Target != "a/three/main" {
		t.Fatalf("release recommendations %+v, want only a/three/main", rel)
	}
	if want := 1.5 * rangeHour * perMonth; !near(rel[0].FreedEURPerMonth, want) || !slices.Equal(rel[0].FreedGPUs, []string{"GPU-3"}) {
		t.Errorf("release of a/three frees %v, %.4f EUR/month; want GPU-3, %.4f (its GPU's whole cost, not its idle 97 %%)",
			rel[0].FreedGPUs, rel[0].FreedEURPerMonth, want)
	}
	if len(r.Recommendations) != 1 {
		t.Errorf("recommendations %+v, want only the release", r.Recommendations)
	}
}

// TestReleaseSharedIsReclaimable: releasing a MIG instance frees no GPU: its
// cost moves to the GPU's other parts, so it is reclaimable capacity: all its
// cost, busy hours too (busy 3 %, below the release threshold), not its idle EUR.
func TestReleaseSharedIsReclaimable(t *testing.T) {
	g := fakeGPU{uuid: "GPU-M", index: "0", model: h100Name, host: "node-m", ns: "svc", pod: "idle", container: "c", rateEURPerHour: 1.4,
		busyShare: 0.03, activity: 0.01, fbMiB: 1000, hasActivity: true, hasFB: true, resource: "nvidia.com/mig-3g.40gb", sharing: "mig"}
	ss := fakeSeriesFor(g, time.Hour)
	for i := range ss {
		ss[i].labels = with(ss[i].labels, "GPU_I_ID", "1", "GPU_I_PROFILE", "3g.40gb")
	}
	r := generate(t, testConfig(), &fakeQuerier{series: ss})
	rel := recsOf(r, "release")
	if len(rel) != 1 || rel[0].FreedEURPerMonth != 0 || len(rel[0].FreedGPUs) != 0 {
		t.Fatalf("release %+v, want one that frees nothing", rel)
	}
	if want := 1.4 * rangeHour * perMonth; !near(rel[0].ReclaimableEURPerMonth, want) || r.FreedEURPerMonth != 0 {
		t.Errorf("reclaimable %.4f headline %.4f, want %.4f reclaimable and 0 freed", rel[0].ReclaimableEURPerMonth, r.FreedEURPerMonth, want)
	}
}

// TestMIGFreesOnlyWhatPacks: a lone MIG candidate frees no GPU (its GPU is
// repartitioned; 6/7 of it is reclaimable); two that pack onto one A100 free
// the cheaper GPU, and the host's unused 5/7 is reclaimable.
func TestMIGFreesOnlyWhatPacks(t *testing.T) {
	t.Run("lone", func(t *testing.T) {
		r := generate(t, testConfig(), fleetQuerier([]fakeGPU{
			alone("GPU-L", "0", "node-l", a100x80, "shop", "small", 1.5, 1, 0.1, 7000),
		}, time.Hour))
		m := recsOf(r, "mig")
		if len(m) != 1 || m[0].Profile != "1g.10gb ×1" {
			t.Fatalf("mig recommendations %+v, want one for 1g.10gb", m)
		}
		// 252 EUR over the range; the 1g.10gb instance weighs 1/7.
		if m[0].FreedEURPerMonth != 0 || !near(m[0].ReclaimableEURPerMonth, 252*6.0/7*perMonth) || r.FreedEURPerMonth != 0 {
			t.Errorf("lone MIG: freed %.4f reclaimable %.4f headline %.4f; want 0, %.4f, 0",
				m[0].FreedEURPerMonth, m[0].ReclaimableEURPerMonth, r.FreedEURPerMonth, 252*6.0/7*perMonth)
		}
	})
	t.Run("pair", func(t *testing.T) {
		r := generate(t, testConfig(), fleetQuerier([]fakeGPU{
			alone("GPU-P1", "0", "node-p", a100x80, "shop", "cheap", 1.2, 1, 0.1, 7000),
			alone("GPU-P2", "1", "node-p", a100x80, "search", "dear", 1.5, 1, 0.1, 7000),
		}, time.Hour))
		m := recsOf(r, "mig")
		if len(m) != 1 || m[0].Profile != "1g.10gb ×2" || len(m[0].Holdings) != 2 {
			t.Fatalf("mig recommendations %+v, want one for both pods", m)
		}
		// Freed: the cheaper GPU, 1.2 × 168 = 201.6 EUR. Reclaimable: the host
		// (1.5 × 168 = 252 EUR) less its two 1/7 instances.
		if !slices.Equal(m[0].FreedGPUs, []string{"GPU-P1"}) || !near(m[0].FreedEURPerMonth, 201.6*perMonth) ||
			!near(m[0].ReclaimableEURPerMonth, 252*5.0/7*perMonth) || !near(r.FreedEURPerMonth, 201.6*perMonth) {
			t.Errorf("pair: frees %v %.4f, reclaimable %.4f, headline %.4f; want GPU-P1 %.4f, %.4f",
				m[0].FreedGPUs, m[0].FreedEURPerMonth, m[0].ReclaimableEURPerMonth, r.FreedEURPerMonth, 201.6*perMonth, 252*5.0/7*perMonth)
		}
		if len(r.Packing) != 1 || r.Packing[0].GPUsAfter != 1 || !slices.Equal(r.Packing[0].Layouts[0], []string{"1g.10gb", "1g.10gb"}) {
			t.Errorf("packing %+v, want both 1g.10gb on one GPU", r.Packing)
		}
	})
}

// TestMIGWeightMemory: with the price book's mig_weight: memory, a 1g.10gb
// instance on an H100 weighs 1/8 (memory slices), not 1/7.
func TestMIGWeightMemory(t *testing.T) {
	cfg := testConfig()
	cfg.MIGWeight = cost.MemoryWeight
	r := generate(t, cfg, fleetQuerier([]fakeGPU{alone("GPU-W", "0", "node-w", h100Name, "shop", "small", 1.5, 1, 0.1, 6144)}, time.Hour))
	m := recsOf(r, "mig")
	if len(m) != 1 || !near(m[0].ReclaimableEURPerMonth, 252*7.0/8*perMonth) {
		t.Fatalf("mig %+v, want reclaimable 252 × 7/8 × month = %.4f", m, 252*7.0/8*perMonth)
	}
	if !strings.Contains(m[0].Evidence, "by memory weight") {
		t.Errorf("evidence %q does not say which weight it used", m[0].Evidence)
	}
}

// TestDrainClaimsItsGPUsOnce: a node 97 % unallocated, on which an idle pod
// held one GPU for its last 5 hours, is drained: the drain frees both GPUs and
// covers the pod, which gets no release of its own (it would free the same
// GPU twice).
func TestDrainClaimsItsGPUsOnce(t *testing.T) {
	late := alone("GPU-D2", "1", "node-d", a100x80, "research", "late", 2.5, 0, 0, 500)
	late.from = testEnd.Add(-4 * time.Hour) // points at −4 h … 0, each the hour before it
	// GPU-D2 has no data for its first 163 hours: a partial report.
	cfg := testConfig()
	cfg.AllowPartial = true
	r := generate(t, cfg, fleetQuerier([]fakeGPU{
		{uuid: "GPU-D1", index: "0", model: a100x80, host: "node-d", rateEURPerHour: 2.5},
		late,
	}, time.Hour))
	d := recsOf(r, "drain")
	// 168 h unallocated of 173 device-hours (97.1 % ≥ 95 %): 2.5 × (168 + 5) EUR.
	if want := 2.5 * 173 * perMonth; len(d) != 1 || !near(d[0].FreedEURPerMonth, want) || len(d[0].FreedGPUs) != 2 {
		t.Fatalf("drain %+v, want node-d freeing 2 GPUs, %.4f EUR/month", d, want)
	}
	if !slices.Equal(d[0].Holdings, []string{"research/late/main"}) {
		t.Errorf("drain covers %v, want research/late/main", d[0].Holdings)
	}
	if len(r.Recommendations) != 1 || !near(r.FreedEURPerMonth, d[0].FreedEURPerMonth) {
		t.Errorf("recommendations %+v headline %.4f, want the drain alone", r.Recommendations, r.FreedEURPerMonth)
	}
}

// TestTimeSlicingFreesTheCheapest: two low-duty pods on GPUs of different
// cost share one: the cheaper GPU is freed (a conservative figure), and the
// node is named with the label that selects the config, and the warning
// names the training pod on it that would start sharing.
func TestTimeSlicingFreesTheCheapest(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier([]fakeGPU{
		alone("GPU-T1", "0", "node-t", h100Name, "dev", "nb-1", 1.0, 0.1, 0.09, 2000),
		alone("GPU-T2", "1", "node-t", h100Name, "dev", "nb-2", 1.5, 0.1, 0.09, 2000),
		alone("GPU-T3", "2", "node-t", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
	}, time.Hour))
	ts := recsOf(r, "time-slicing")
	if len(ts) != 1 || !slices.Equal(ts[0].FreedGPUs, []string{"GPU-T1"}) || !near(ts[0].FreedEURPerMonth, 168*perMonth) {
		t.Fatalf("time-slicing %+v, want GPU-T1 freed, %.4f EUR/month", ts, 168*perMonth)
	}
	wantLabel := "kubectl label node node-t nvidia.com/device-plugin.config=gputally-nvidia-h100-80gb-hbm3-x2 --overwrite"
	if !slices.Equal(r.Apply.TimeSlicingLabels, []string{wantLabel}) {
		t.Errorf("labels %q, want %q", r.Apply.TimeSlicingLabels, wantLabel)
	}
	if len(r.Apply.TimeSlicingSharing) != 1 || !strings.Contains(r.Apply.TimeSlicingSharing[0], "ml/trainer/main") ||
		strings.Contains(r.Apply.TimeSlicingSharing[0], "nb-") {
		t.Errorf("sharing warnings %q, want one naming ml/trainer/main and not the notebooks", r.Apply.TimeSlicingSharing)
	}
	applyspec.CheckDevicePlugin(t, r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels)
}

// TestTimeSlicingDutyLimit: four pods busy 25 % pack by busy share ×
// headroom, at most 1 per GPU: with headroom 1.2 (30 % each) three share a
// GPU and the fourth keeps its own, so 2 GPUs are freed; with headroom 1 all
// four fit one GPU and 3 are freed.
func TestTimeSlicingDutyLimit(t *testing.T) {
	for _, tc := range []struct {
		headroom        float64
		replicas, freed int
	}{{1.2, 3, 2}, {1, 4, 3}} {
		cfg := testConfig()
		cfg.Headroom = tc.headroom
		var pods []fakeGPU
		for i := range 4 {
			pods = append(pods, alone(fmt.Sprintf("GPU-Q%d", i), fmt.Sprint(i), "node-q", h100Name, "dev", fmt.Sprintf("q-%d", i), 1.5, 0.25, 0.24, 2000))
		}
		ts := recsOf(generate(t, cfg, fleetQuerier(pods, time.Hour)), "time-slicing")
		if len(ts) != 1 || ts[0].Replicas != tc.replicas || len(ts[0].FreedGPUs) != tc.freed || !near(ts[0].FreedEURPerMonth, float64(tc.freed)*252*perMonth) {
			t.Errorf("headroom %g: time-slicing %+v, want %d replicas per GPU and %d GPUs freed", tc.headroom, ts, tc.replicas, tc.freed)
		}
	}
}

// TestTimeSlicingMemoryLimit: two pods busy 10 % that each use 45,000 MiB
// of an H100's 81,559 MiB do not fit one GPU together, so they get no
// time-slicing advice however little they compute.
func TestTimeSlicingMemoryLimit(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier([]fakeGPU{
		alone("GPU-F0", "0", "node-f", h100Name, "dev", "f-0", 1.5, 0.1, 0.09, 45000),
		alone("GPU-F1", "1", "node-f", h100Name, "dev", "f-1", 1.5, 0.1, 0.09, 45000),
	}, time.Hour))
	if ts := recsOf(r, "time-slicing"); len(ts) != 0 {
		t.Errorf("time-slicing %+v, want none: 2 × 45,000 MiB exceed one H100", ts)
	}
}

// withUnknown turns share u of each hour of g's idle time into unknown time,
// under the same holder (or none): busy + idle + unknown stays the hour.
func withUnknown(g fakeGPU, u float64) []fakeSeries {
	var out []fakeSeries
	for _, s := range fakeSeriesFor(g, time.Hour) {
		if s.labels["state"] != "idle" && !(g.pod == "" && s.labels["state"] == "unallocated") {
			out = append(out, s)
			continue
		}
		at := s.at
		known, unknown := s, s
		known.at = func(t time.Time) float64 { return at(t) * (1 - u) }
		unknown.labels = with(s.labels, "state", "unknown")
		unknown.at = func(t time.Time) float64 { return at(t) * u }
		out = append(out, known, unknown)
	}
	return out
}

// TestUnknownBlocksHoldingAdvice: an idle pod alone on its GPU is released
// when 0.8 % of its hours are unknown and gets no advice at 1.2 % (the 1 %
// rule). At 0.995 % it is released: the share is of its busy + idle +
// unknown hours; of its known hours alone it would be 1.005 %. A busy
// neighbour keeps the node's unknown share at half the pod's, under 1 %, so
// the node does not decide it. An idle pod with no unknown
// time of its own on a node whose unknown share is above 1 % gets no advice
// either.
func TestUnknownBlocksHoldingAdvice(t *testing.T) {
	cfg := testConfig()
	cfg.AllowPartial = true
	for _, tc := range []struct {
		unknown float64
		release bool
	}{{0.008, true}, {0.00995, true}, {0.012, false}} {
		q := fleetQuerier([]fakeGPU{alone("GPU-B", "1", "node-u", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000)}, time.Hour)
		q.series = append(q.series, withUnknown(alone("GPU-I", "0", "node-u", h100Name, "dev", "idle", 1.5, 0, 0, 70000), tc.unknown)...)
		r := generate(t, cfg, q)
		if got := len(recsOf(r, "release")) == 1; got != tc.release || len(r.Recommendations) != len(recsOf(r, "release")) {
			t.Errorf("unknown %s of the pod's hours: recommendations %+v, want release %v and nothing else", model.FormatPct(tc.unknown), r.Recommendations, tc.release)
		}
		warned := slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "holding dev/idle/main on node-u") })
		if warned == tc.release {
			t.Errorf("unknown %s: warnings %q, want one naming dev/idle/main: %v", model.FormatPct(tc.unknown), r.Warnings, !tc.release)
		}
	}
	q := fleetQuerier([]fakeGPU{alone("GPU-I", "0", "node-v", h100Name, "dev", "idle", 1.5, 0, 0, 70000)}, time.Hour)
	q.series = append(q.series, withUnknown(fakeGPU{uuid: "GPU-N", index: "1", model: h100Name, host: "node-v", rateEURPerHour: 1.5}, 0.5)...)
	r := generate(t, cfg, q)
	if len(r.Recommendations) != 0 {
		t.Errorf("node-v has 25 %% unknown time: recommendations %+v, want none", r.Recommendations)
	}
}

// TestTimeSlicingNeedsFramebuffer: two dev pods busy 10 % pack onto one GPU
// when their framebuffer was measured (2000 MiB each); without a framebuffer
// measurement they get no time-slicing advice, since their memory might not
// fit one GPU.
func TestTimeSlicingNeedsFramebuffer(t *testing.T) {
	for _, hasFB := range []bool{true, false} {
		pods := []fakeGPU{
			alone("GPU-D0", "0", "node-d", h100Name, "dev", "a", 1.5, 0.1, 0.09, 2000),
			alone("GPU-D1", "1", "node-d", h100Name, "dev", "b", 1.5, 0.1, 0.09, 2000),
		}
		for i := range pods {
			pods[i].hasFB = hasFB
		}
		r := generate(t, testConfig(), fleetQuerier(pods, time.Hour))
		if got := len(recsOf(r, "time-slicing")); got != map[bool]int{true: 1, false: 0}[hasFB] {
			t.Errorf("framebuffer measured %v: time-slicing recommendations %+v", hasFB, recsOf(r, "time-slicing"))
		}
	}
}

// phased returns the ledger series of g when its holder holds it only in the
// hours ending in (from, until] (zero: the range's edges), busy busyAt(t) of
// the hour ending at t; the GPU (or MIG instance, with gi and profile) is
// unallocated in the other hours, and the holder's series are gone.
func phased(g fakeGPU, gi, profile string, from, until time.Time, busyAt func(time.Time) float64) []fakeSeries {
	held := func(t time.Time) bool { return (from.IsZero() || t.After(from)) && (until.IsZero() || !t.After(until)) }
	id := identity(g)
	if gi != "" {
		id = with(id, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
	}
	holder := with(id, "namespace", g.ns, "pod", g.pod, "container", g.container)
	nobody := with(id, "namespace", "", "pod", "", "container", "")
	whileHeld := func(f func(time.Time) float64) func(time.Time) float64 {
		return func(t time.Time) float64 {
			if !held(t) {
				return math.NaN()
			}
			return f(t)
		}
	}
	var out []fakeSeries
	for _, st := range []struct {
		labels map[string]string
		secs   func(time.Time) float64
	}{
		{with(holder, "state", "busy"), whileHeld(func(t time.Time) float64 { return busyAt(t) * 3600 })},
		{with(holder, "state", "idle"), whileHeld(func(t time.Time) float64 { return (1 - busyAt(t)) * 3600 })},
		{with(nobody, "state", "unallocated"), func(t time.Time) float64 {
			if held(t) {
				return 0
			}
			return 3600
		}},
	} {
		secs := st.secs
		out = append(out,
			fakeSeries{"gputally_gpu_seconds_total", st.labels, secs},
			fakeSeries{"gputally_cost_eur_total", st.labels, func(t time.Time) float64 { return secs(t) * g.rateEURPerHour / 3600 }})
	}
	one := func(time.Time) float64 { return 1 }
	out = append(out,
		fakeSeries{"gputally_gpu_info", with(id, "mig_mode", map[bool]string{true: "enabled", false: "disabled"}[gi != ""]), one},
		fakeSeries{"gputally_gpu_allocation", with(holder, "resource", g.resource, "sharing", g.sharing), whileHeld(one)},
		fakeSeries{dcgmnames.GREngineActive.New, holder, whileHeld(func(time.Time) float64 { return g.activity })},
		fakeSeries{dcgmnames.FBUsed.New, holder, whileHeld(func(time.Time) float64 { return g.fbMiB * (1 << 20) })})
	return out
}

func constant(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }

// TestAdviceOnlyAtTheEnd: on a one-day report, advice is only for holdings
// there at the range's end and still idle in its last step. A notebook idle
// for the first 8 hours (ended), two idle MIG holders that ended at 10 h and
// a pod idle for 23 hours and busy in the last one (4.2 % busy over the day,
// under 5 %) get none; a notebook idle all day is released, freeing its GPU:
// 1.20 EUR/h × 24 h × 730.5/24 = 876.60 EUR/month, the whole headline.
// Before, the ended notebook's GPU was freed too (+1,095.75 EUR/month: 1.50
// × 24 × 730.5/24), the ended MIG holders were reclaimable and the waking pod
// was released. The ended holdings still count in the tables.
func TestAdviceOnlyAtTheEnd(t *testing.T) {
	cfg := testConfig()
	cfg.Range = 24 * time.Hour
	start := testEnd.Add(-24 * time.Hour)
	gpu := func(uuid, index, ns, pod string, rate float64) fakeGPU {
		return fakeGPU{uuid: uuid, index: index, model: h100Name, host: "node-e", ns: ns, pod: pod, container: "main", rateEURPerHour: rate,
			activity: 0.01, fbMiB: 2000, resource: "nvidia.com/gpu", sharing: "exclusive"}
	}
	q := &fakeQuerier{}
	q.series = append(q.series, phased(gpu("GPU-E0", "0", "dev", "nb-old", 1.5), "", "", time.Time{}, start.Add(8*time.Hour), constant(0.02))...)
	q.series = append(q.series, phased(gpu("GPU-E1", "1", "dev", "nb-now", 1.2), "", "", time.Time{}, time.Time{}, constant(0.01))...)
	for _, gi := range []struct{ id, pod string }{{"1", "a"}, {"2", "b"}} {
		g := gpu("GPU-E2", "2", "svc", gi.pod, 1.6)
		g.resource, g.sharing = "nvidia.com/mig-3g.40gb", "mig"
		q.series = append(q.series, phased(g, gi.id, "3g.40gb", time.Time{}, start.Add(10*time.Hour), constant(0.03))...)
	}
	wakes := gpu("GPU-E3", "3", "ml", "wakes", 1.4)
	wakes.fbMiB = 70000 // no MIG profile fits it
	q.series = append(q.series, phased(wakes, "", "", time.Time{}, time.Time{}, func(t time.Time) float64 {
		if t.Equal(testEnd) {
			return 1
		}
		return 0
	})...)
	r := generate(t, cfg, q)
	want := 1.2 * 24 * 730.5 / 24
	if len(r.Recommendations) != 1 || r.Recommendations[0].Kind != "release" || r.Recommendations[0].Target != "dev/nb-now/main" ||
		!near(r.Recommendations[0].FreedEURPerMonth, want) || !near(r.FreedEURPerMonth, want) || r.ReclaimableEURPerMonth != 0 {
		t.Fatalf("recommendations %+v, headline %.2f, reclaimable %.2f; want the release of dev/nb-now/main alone, %.2f EUR/month",
			r.Recommendations, r.FreedEURPerMonth, r.ReclaimableEURPerMonth, want)
	}
	atEnd := map[string]bool{}
	for _, h := range r.Holdings {
		atEnd[h.Pod] = h.AtEnd
	}
	if w := map[string]bool{"nb-old": false, "nb-now": true, "a": false, "b": false, "wakes": true}; !maps.Equal(atEnd, w) {
		t.Errorf("holdings at the end %v, want %v", atEnd, w)
	}
	held := map[string]float64{}
	for _, g := range r.Namespaces {
		held[g.Name] = g.Totals.HeldHours
	}
	if w := map[string]float64{"dev": 8 + 24, "svc": 2 * 10, "ml": 24}; !maps.EqualFunc(held, w, near) {
		t.Errorf("held hours per namespace %v, want %v (ended holdings count in the tables)", held, w)
	}
}
