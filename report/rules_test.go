package report

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/dcgmnames"
)

// The savings rules that only golden files held (a mutation of each
// survived the whole suite), each with a hand-computed expectation that a
// plausible mistake in the rule changes. Ranges are the default 7 days
// (168 h, a month 730.5/168 of it) unless said otherwise.

// byHour returns the ledger series of the GPU g when hour h of the range (1
// to 168: the bucket ending h hours after its start) is wholly in the state
// stateAt(h): "held" (g's holder, busy g.busyShare of the hour), "idle",
// "unallocated", "unknown" or "lost".
func byHour(g fakeGPU, stateAt func(h int) string) []fakeSeries {
	start := testEnd.Add(-168 * time.Hour)
	hour := func(t time.Time) int { return int(t.Sub(start) / time.Hour) }
	id := identity(g)
	holder := with(id, "namespace", g.ns, "pod", g.pod, "container", g.container)
	nobody := with(id, "namespace", "", "pod", "", "container", "")
	var out []fakeSeries
	for _, st := range []struct {
		labels map[string]string
		state  string  // the hour's state that feeds the series
		share  float64 // of such an hour
	}{
		{with(holder, "state", "busy"), "held", g.busyShare},
		{with(holder, "state", "idle"), "held", 1 - g.busyShare},
		{with(nobody, "state", "unallocated"), "unallocated", 1},
		{with(nobody, "state", "unknown"), "unknown", 1},
		{with(nobody, "state", "lost"), "lost", 1},
	} {
		secs := func(t time.Time) float64 {
			if stateAt(hour(t)) == st.state {
				return st.share * 3600
			}
			return 0
		}
		out = append(out,
			fakeSeries{"gputally_gpu_seconds_total", st.labels, secs},
			fakeSeries{"gputally_cost_eur_total", st.labels, func(t time.Time) float64 { return secs(t) * g.rateEURPerHour / 3600 }})
	}
	held := func(v float64) func(time.Time) float64 {
		return func(t time.Time) float64 {
			if stateAt(hour(t)) != "held" {
				return nan()
			}
			return v
		}
	}
	out = append(out, fakeSeries{"gputally_gpu_info", with(id, "mig_mode", "disabled"), func(time.Time) float64 { return 1 }})
	if g.pod != "" {
		out = append(out,
			fakeSeries{"gputally_gpu_allocation", with(holder, "resource", "nvidia.com/gpu", "sharing", "exclusive"), held(1)},
			fakeSeries{dcgmnames.GREngineActive.New, holder, held(g.activity)},
			fakeSeries{dcgmnames.FBUsed.New, holder, held(g.fbMiB * (1 << 20))})
	}
	return out
}

func nan() float64 { return math.NaN() }

// TestReleaseAtExactlyTheThreshold: release is for a holding busy *below*
// --release-below (5 %) over the range and in its last step. A pod alone on
// its GPU busy exactly 5 % of its time (360 s an hour for 84 hours, none for
// the other 84, the last among them) is kept; so is one busy 2.8 % over the
// range but exactly 5 % (180 s) in its last hour. At 4.9 % with an idle last
// hour a pod is released: its GPU is freed, 1.40 × 168 × 730.5/168 = 1022.70
// EUR/month, the whole headline.
func TestReleaseAtExactlyTheThreshold(t *testing.T) {
	q := &fakeQuerier{}
	first84 := testEnd.Add(-84 * time.Hour)
	q.series = append(q.series, phased(alone("GPU-X0", "0", "node-x", h100Name, "a", "five", 1.5, 0, 0.9, 70000), "", "", time.Time{}, time.Time{},
		func(t time.Time) float64 {
			if t.After(first84) {
				return 0
			}
			return 360.0 / 3600
		})...)
	endsAtFive := alone("GPU-X1", "1", "node-x", h100Name, "b", "ends-at-five", 1.3, 0, 0.9, 70000)
	q.series = append(q.series, phased(endsAtFive, "", "", time.Time{}, time.Time{}, func(t time.Time) float64 {
		if t.Equal(testEnd) {
			return 180.0 / 3600
		}
		return 100.0 / 3600
	})...)
	released := alone("GPU-X2", "2", "node-x", h100Name, "c", "below", 1.4, 0, 0.9, 70000)
	q.series = append(q.series, phased(released, "", "", time.Time{}, time.Time{}, func(t time.Time) float64 {
		if t.Equal(testEnd) {
			return 0
		}
		return 0.049 * 168 / 167
	})...)
	r := generate(t, testConfig(), q)
	for _, h := range r.Holdings {
		switch {
		case h.Pod == "five" && (h.Totals.BusyShare != 0.05 || h.EndBusyShare != 0):
			t.Fatalf("a/five busy %v over the range, %v at the end; the fixture wants exactly 0.05 and 0", h.Totals.BusyShare, h.EndBusyShare)
		case h.Pod == "ends-at-five" && (h.EndBusyShare != 0.05 || h.Totals.BusyShare >= 0.05):
			t.Fatalf("b/ends-at-five busy %v over the range, %v at the end; the fixture wants under 0.05 and exactly 0.05", h.Totals.BusyShare, h.EndBusyShare)
		}
	}
	want := 1.4 * 168 * perMonth
	if rel := recsOf(r, "release"); len(rel) != 1 || rel[0].Target != "c/below/main" || !near(rel[0].FreedEURPerMonth, want) ||
		len(r.Recommendations) != 1 || !near(r.FreedEURPerMonth, want) {
		t.Errorf("recommendations %+v, headline %.2f; want the release of c/below/main alone, %.2f EUR/month", r.Recommendations, r.FreedEURPerMonth, want)
	}
}

// TestDrainCountsLostAndUnknownHours: a drain's share of unallocated hours is
// of all the node's device-hours, lost and unknown included. node-l has one
// GPU unallocated all week and one lost all week: 168 ÷ 336 = 50 %
// unallocated, no drain (counting only held and unallocated hours it was
// 100 %, and the drain claimed the healthy GPU, 1.50 × 168 × 730.5/168 =
// 1095.75 EUR/month). node-n has one GPU unallocated all week and one held
// idle for 16 hours, unknown for 3 (0.9 % of the node's hours, under the 1 %
// that blocks a drain) and unallocated for 149: 317 ÷ 336 = 94.3 %, no drain
// (without the unknown hours 317 ÷ 333 = 95.2 %, a drain).
func TestDrainCountsLostAndUnknownHours(t *testing.T) {
	cfg := testConfig()
	cfg.AllowPartial = true
	q := &fakeQuerier{}
	q.series = append(q.series, byHour(fakeGPU{uuid: "GPU-L0", index: "0", model: h100Name, host: "node-l", rateEURPerHour: 1.5}, func(int) string { return "unallocated" })...)
	q.series = append(q.series, byHour(fakeGPU{uuid: "GPU-L1", index: "1", model: h100Name, host: "node-l", rateEURPerHour: 1.2}, func(int) string { return "lost" })...)
	q.series = append(q.series, byHour(fakeGPU{uuid: "GPU-N0", index: "0", model: h100Name, host: "node-n", rateEURPerHour: 1.5}, func(int) string { return "unallocated" })...)
	held := alone("GPU-N1", "1", "node-n", h100Name, "dev", "brief", 1.3, 0.02, 0.9, 70000)
	q.series = append(q.series, byHour(held, func(h int) string {
		switch {
		case h <= 16:
			return "held"
		case h <= 19:
			return "unknown"
		}
		return "unallocated"
	})...)
	r := generate(t, cfg, q)
	for _, n := range r.Nodes {
		want := map[string]float64{"node-l": 168.0 / 336, "node-n": 317.0 / 336}[n.Name]
		if got := n.Totals.UnallocatedHours / n.Totals.GPUHours; !near(got, want) {
			t.Errorf("%s unallocated %.4f of its device-hours, want %.4f", n.Name, got, want)
		}
	}
	if d := recsOf(r, "drain"); len(d) != 0 || r.FreedEURPerMonth != 0 {
		t.Errorf("drains %+v, headline %.2f; want none (50 %% and 94.3 %% unallocated)", d, r.FreedEURPerMonth)
	}
}

// TestSoleMeansOneHoldingOverTheRange: a GPU held by dev/first for hours
// 1–60 and by dev/second for hours 69–168 (unallocated between) had two
// holdings: releasing the idle dev/second, there at the end, frees no GPU
// (the GPU's whole cost is not what one of its holders spent); its own cost
// is reclaimable: 1.50 × 100 h × 730.5/168 = 652.23 EUR/month; dev/first
// ended and gets nothing. Taken as the GPU's sole holder, dev/second freed
// the whole GPU, 1.50 × 168 × 730.5/168 = 1095.75 EUR/month.
func TestSoleMeansOneHoldingOverTheRange(t *testing.T) {
	q := &fakeQuerier{}
	first := alone("GPU-Q0", "0", "node-q", h100Name, "dev", "first", 1.5, 0.02, 0.9, 70000)
	second := first
	second.pod, second.busyShare = "second", 0.03
	q.series = append(q.series, byHour(first, func(h int) string {
		switch {
		case h <= 60:
			return "held"
		case h <= 68:
			return "unallocated"
		}
		return "none" // dev/second's, below
	})...)
	for _, s := range byHour(second, func(h int) string {
		if h > 68 {
			return "held"
		}
		return "none"
	}) {
		if s.labels["pod"] != "" { // the GPU's own series come with dev/first's
			q.series = append(q.series, s)
		}
	}
	r := generate(t, testConfig(), q)
	rel := recsOf(r, "release")
	if want := 1.5 * 100 * perMonth; len(rel) != 1 || rel[0].Target != "dev/second/main" || rel[0].FreedEURPerMonth != 0 ||
		!near(rel[0].ReclaimableEURPerMonth, want) || r.FreedEURPerMonth != 0 {
		t.Errorf("releases %+v, headline %.2f; want dev/second/main's alone, 0 freed and %.2f EUR/month reclaimable", rel, r.FreedEURPerMonth, want)
	}
}

// TestMIGFitChecksCompute: a MIG profile must fit a pod's p95 activity
// (compute slices ÷ 7) as well as its framebuffer. Two pods alone on H100s,
// busy all the time, with 5,000 MiB (× 1.2 = 6,000 MiB, which the 9,984 MiB
// of a 1g.10gb holds): at 90 % activity no profile smaller than the whole
// GPU has the compute (6/7 = 86 %), so there is no MIG advice; at 50 % the
// smallest that has it is 4g.40gb (4/7 = 57 %; 3/7 = 43 % is short), and
// 3/7 of that GPU is reclaimable: 1.10 × 168 × 3/7 × 730.5/168 = 344.39
// EUR/month. Without the compute check both got 1g.10gb.
func TestMIGFitChecksCompute(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier([]fakeGPU{
		alone("GPU-C0", "0", "node-c", h100Name, "ml", "busy", 1.5, 1, 0.9, 5000),
		alone("GPU-C1", "1", "node-c", h100Name, "web", "half", 1.1, 1, 0.5, 5000),
	}, time.Hour))
	m := recsOf(r, "mig")
	if want := 1.1 * 168 * 3 / 7 * perMonth; len(m) != 1 || m[0].Profile != "4g.40gb ×1" || !slices.Equal(m[0].Holdings, []string{"web/half/main"}) ||
		!near(m[0].ReclaimableEURPerMonth, want) {
		t.Errorf("mig recommendations %+v, want web/half/main on 4g.40gb alone, %.2f EUR/month reclaimable", m, want)
	}
}

// TestMIGMemoryHeadroom: a MIG profile must hold the p99 framebuffer ×
// --headroom (1.2). 8,320 MiB × 1.2 = 9,984 MiB is exactly what a 1g.10gb
// on an H100 holds: it fits. 8,321 MiB × 1.2 = 9,985.2 MiB does not; the
// next profile with the compute, 1g.20gb (20,096 MiB), does. Without the
// headroom both fit 1g.10gb; with a strict comparison neither did.
func TestMIGMemoryHeadroom(t *testing.T) {
	for _, tc := range []struct {
		fbMiB, act float64
		want       string
	}{{8320, 0.12, "1g.10gb ×1"}, {8321, 0.13, "1g.20gb ×1"}} {
		r := generate(t, testConfig(), fleetQuerier([]fakeGPU{alone("GPU-M0", "0", "node-m", h100Name, "web", "svc", 1.5, 1, tc.act, tc.fbMiB)}, time.Hour))
		if m := recsOf(r, "mig"); len(m) != 1 || m[0].Profile != tc.want {
			t.Errorf("p99 framebuffer %.0f MiB: mig recommendations %+v, want %s", tc.fbMiB, m, tc.want)
		}
	}
}

// TestDrainAtExactlyTheThreshold: a node whose device-hours were unallocated
// at least --drain-above (95 %) of the time is drained. node-z has five
// GPUs (840 device-hours) at 1.00, 1.10, 1.20, 1.30 and 1.40 EUR/h; four are
// unallocated all week and the fifth is held by an idle pod for its last h
// hours. h = 42: 798 ÷ 840 = exactly 95 %, drained: (1.00 + 1.10 + 1.20 +
// 1.30 + 1.40) × 168 × 730.5/168 = 4383.00 EUR/month. h = 43: 797 ÷ 840 =
// 94.9 %, no drain; the idle pod alone on its GPU is released instead:
// 1.40 × 168 × 730.5/168 = 1022.70 EUR/month.
func TestDrainAtExactlyTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		held        int
		kind        string
		freed, gpus float64
	}{{42, "drain", 6.0 * 730.5, 5}, {43, "release", 1.4 * 730.5, 1}} {
		q := &fakeQuerier{}
		for i, rate := range []float64{1.0, 1.1, 1.2, 1.3} {
			q.series = append(q.series, byHour(fakeGPU{uuid: "GPU-Z" + string(rune('0'+i)), index: string(rune('0' + i)), model: h100Name, host: "node-z", rateEURPerHour: rate},
				func(int) string { return "unallocated" })...)
		}
		pod := alone("GPU-Z4", "4", "node-z", h100Name, "dev", "idle", 1.4, 0.01, 0.9, 70000)
		q.series = append(q.series, byHour(pod, func(h int) string {
			if h > 168-tc.held {
				return "held"
			}
			return "unallocated"
		})...)
		r := generate(t, testConfig(), q)
		if len(r.Recommendations) != 1 || r.Recommendations[0].Kind != tc.kind || len(r.Recommendations[0].FreedGPUs) != int(tc.gpus) ||
			!near(r.FreedEURPerMonth, tc.freed) {
			t.Errorf("held %d h: recommendations %+v, headline %.2f; want one %s freeing %.0f GPU(s), %.2f EUR/month",
				tc.held, r.Recommendations, r.FreedEURPerMonth, tc.kind, tc.gpus, tc.freed)
			continue
		}
		if tc.kind == "drain" && !strings.Contains(r.Recommendations[0].Evidence, "798.0 of 840.0 device-hours unallocated (95.0 %, at least 95.0 %)") {
			t.Errorf("drain evidence %q", r.Recommendations[0].Evidence)
		}
	}
}
