package report

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/advice"
	"github.com/gputally/gputally/report/internal/applyspec"
	"github.com/gputally/gputally/report/model"
)

// TestMIGPartedTouchesOnlyRepartitioned: a node with a busy training GPU, a
// MIG candidate and a GPU already in MIG mode gets one config that
// repartitions only the candidate's GPU and keeps the others as they are.
func TestMIGPartedTouchesOnlyRepartitioned(t *testing.T) {
	q := fleetQuerier([]fakeGPU{
		alone("GPU-H0", "0", "node-h", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		alone("GPU-H1", "1", "node-h", h100Name, "shop", "small", 1.5, 1, 0.1, 6144),
	}, time.Hour)
	// GPU 2 runs two 3g.40gb instances, one held by a busy service.
	for _, gi := range []struct{ id, pod string }{{"1", "svc"}, {"2", ""}} {
		g := fakeGPU{uuid: "GPU-H2", index: "2", model: h100Name, host: "node-h", ns: "shop", pod: gi.pod, container: "c", rateEURPerHour: 1.5,
			busyShare: 1, activity: 0.5, fbMiB: 30000, hasActivity: true, hasFB: true, resource: "nvidia.com/mig-3g.40gb", sharing: "mig"}
		if gi.pod == "" {
			g.ns, g.container = "", ""
		}
		for _, s := range fakeSeriesFor(g, time.Hour) {
			s.labels = with(s.labels, "GPU_I_ID", gi.id, "GPU_I_PROFILE", "3g.40gb")
			q.series = append(q.series, s)
		}
	}
	r := generate(t, testConfig(), q)
	byNode := applyspec.CheckMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })
	want := map[int][]string{0: nil, 1: {"1g.10gb"}, 2: {"3g.40gb", "3g.40gb"}}
	got := byNode["node-h"]
	if len(got) != len(want) {
		t.Fatalf("node-h config %v, want %v", got, want)
	}
	for k, l := range want {
		if gl, ok := got[k]; !ok || !slices.Equal(gl, l) || (l == nil) != (gl == nil) {
			t.Errorf("node-h GPU %d: layout %v, want %v", k, gl, l)
		}
	}
	applyspec.CheckKueue(t, r.Apply.Kueue)
}

// TestWriteApply writes the configuration of the test fleet's report to a
// directory: one file per config, the label script with the warnings.
func TestWriteApply(t *testing.T) {
	r := generate(t, testConfig(), fleetQuerier(testFleet(), time.Hour))
	dir := t.TempDir()
	if err := advice.WriteApply(dir, &r.Apply); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		advice.ApplyMIGPartedFile: r.Apply.MIGParted, advice.ApplyTimeSlicingFile: r.Apply.TimeSlicing, advice.ApplyKueueFile: r.Apply.Kueue,
	} {
		if got := readFile(t, dir, name); got != want {
			t.Errorf("%s differs from the report's configuration", name)
		}
	}
	script := readFile(t, dir, advice.ApplyLabelsFile)
	for _, l := range append(append(slices.Clone(r.Apply.MIGPartedLabels), r.Apply.TimeSlicingLabels...), "# warning: "+r.Apply.TimeSlicingSharing[0]) {
		if !strings.Contains(script, l+"\n") {
			t.Errorf("%s lacks %q:\n%s", advice.ApplyLabelsFile, l, script)
		}
	}
	applyspec.CheckMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })
	applyspec.CheckDevicePlugin(t, r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels)
	applyspec.CheckKueue(t, r.Apply.Kueue)
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// migInstance returns the ledger series of one MIG instance of an H100 on
// node-k, GPU 1, held by a busy pod (or unallocated when pod is ""), present
// from from (zero: the start) until until (zero: the end).
func migInstance(gi, profile, pod string, from, until time.Time) []fakeSeries {
	return migSeries("GPU-K1", "1", "node-k", gi, profile, pod, 1, from, until)
}

// TestMIGPartedKeepsTheEndLayout: a kept GPU repartitioned mid-range (a
// 4g.40gb until then, two 3g.40gb after) is kept with the layout it has at
// the end, not the union of all instances the range saw (4g + 3g + 3g, no
// valid H100 layout); a kept GPU whose end layout is itself invalid leaves
// its node without a config, and the file says why.
func TestMIGPartedKeepsTheEndLayout(t *testing.T) {
	mid := testEnd.Add(-84 * time.Hour)
	candidate := alone("GPU-K0", "0", "node-k", h100Name, "shop", "small", 1.5, 1, 0.1, 6144)
	t.Run("repartitioned mid-range", func(t *testing.T) {
		q := fleetQuerier([]fakeGPU{candidate}, time.Hour)
		q.series = append(q.series, migInstance("3", "4g.40gb", "old", time.Time{}, mid)...)
		q.series = append(q.series, migInstance("1", "3g.40gb", "svc", mid.Add(time.Hour), time.Time{})...)
		q.series = append(q.series, migInstance("2", "3g.40gb", "", mid.Add(time.Hour), time.Time{})...)
		r := generate(t, testConfig(), q)
		got := applyspec.CheckMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })["node-k"]
		want := map[int][]string{0: {"1g.10gb"}, 1: {"3g.40gb", "3g.40gb"}}
		if len(got) != len(want) {
			t.Fatalf("node-k config %v, want %v\n%s", got, want, r.Apply.MIGParted)
		}
		for k, l := range want {
			if !slices.Equal(got[k], l) {
				t.Errorf("node-k GPU %d: layout %v, want %v", k, got[k], l)
			}
		}
	})
	t.Run("repartitioned in the last step", func(t *testing.T) {
		// GPU_I_ID 1 is a 3g.40gb into the last hour and a 4g.40gb in it:
		// both have ledger data in the last bucket, so which one the GPU
		// ends with cannot be told from the buckets.
		q := fleetQuerier([]fakeGPU{candidate}, time.Hour)
		q.series = append(q.series, migInstance("1", "3g.40gb", "svc", time.Time{}, time.Time{})...)
		q.series = append(q.series, migInstance("1", "4g.40gb", "svc", testEnd, time.Time{})...)
		r := generate(t, testConfig(), q)
		if len(r.Apply.MIGPartedLabels) != 0 || strings.Contains(r.Apply.MIGParted, "mig-configs") {
			t.Errorf("a config for node-k although GPU 1's end layout is not known: %q\n%s", r.Apply.MIGPartedLabels, r.Apply.MIGParted)
		}
		if want := "# node-k: GPU 1 (GPU-K1) was repartitioned in the range's last step: its MIG instance 1 was 3g.40gb and 4g.40gb there"; !strings.Contains(r.Apply.MIGParted, want) {
			t.Errorf("the file does not say why node-k has no config:\n%s", r.Apply.MIGParted)
		}
	})
	t.Run("invalid at the end", func(t *testing.T) {
		q := fleetQuerier([]fakeGPU{candidate}, time.Hour)
		q.series = append(q.series, migInstance("3", "4g.40gb", "old", time.Time{}, time.Time{})...)
		q.series = append(q.series, migInstance("1", "3g.40gb", "svc", mid, time.Time{})...)
		q.series = append(q.series, migInstance("5", "1g.10gb", "", mid, time.Time{})...)
		r := generate(t, testConfig(), q)
		if len(recsOf(r, "mig")) != 1 {
			t.Fatalf("mig recommendations %+v, want the candidate's", recsOf(r, "mig"))
		}
		if len(r.Apply.MIGPartedLabels) != 0 || strings.Contains(r.Apply.MIGParted, "mig-configs") {
			t.Errorf("a config for node-k although GPU 1's end layout is invalid: %q\n%s", r.Apply.MIGPartedLabels, r.Apply.MIGParted)
		}
		if !strings.Contains(r.Apply.MIGParted, "# node-k: GPU 1 (GPU-K1) ends the range with MIG instances 3g.40gb + 4g.40gb + 1g.10gb, which is no valid") {
			t.Errorf("the file does not say why node-k has no config:\n%s", r.Apply.MIGParted)
		}
	})
}

// TestMIGPartedKeepsTheMIGMode: a kept GPU without MIG instances is written
// as mig-enabled: false only when gputally_gpu_info says MIG is disabled
// (TestMIGPartedTouchesOnlyRepartitioned); MIG enabled without instances, or
// no mig_mode at all, leaves the node without a config and the file says why.
func TestMIGPartedKeepsTheMIGMode(t *testing.T) {
	for _, tc := range []struct{ mode, why string }{
		{"enabled", "but its MIG mode is enabled"},
		{"", "its MIG mode is not known"},
	} {
		q := &fakeQuerier{}
		for _, g := range []fakeGPU{
			alone("GPU-K0", "0", "node-k", h100Name, "shop", "small", 1.5, 1, 0.1, 6144),
			alone("GPU-K1", "1", "node-k", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		} {
			for _, s := range fakeSeriesFor(g, time.Hour) {
				if s.metric == "gputally_gpu_info" && g.uuid == "GPU-K1" {
					if tc.mode == "" {
						continue
					}
					s.labels = with(s.labels, "mig_mode", tc.mode)
				}
				q.series = append(q.series, s)
			}
		}
		r := generate(t, testConfig(), q)
		if len(recsOf(r, "mig")) != 1 {
			t.Fatalf("mig recommendations %+v, want the candidate's", recsOf(r, "mig"))
		}
		if len(r.Apply.MIGPartedLabels) != 0 || strings.Contains(r.Apply.MIGParted, "mig-configs") {
			t.Errorf("mode %q: a config for node-k: %q\n%s", tc.mode, r.Apply.MIGPartedLabels, r.Apply.MIGParted)
		}
		if want := "# node-k: GPU 1 (GPU-K1) has no MIG instances at the end of the range"; !strings.Contains(r.Apply.MIGParted, want) || !strings.Contains(r.Apply.MIGParted, tc.why) {
			t.Errorf("mode %q: the file does not say %q / %q:\n%s", tc.mode, want, tc.why, r.Apply.MIGParted)
		}
	}
}

// migSeries returns the ledger series of one MIG instance (GPU_I_ID gi,
// profile) of the H100 uuid, GPU index, on host, held by pod in namespace
// shop busy share busy (unallocated when pod is ""), present from from
// (zero: the start) until until (zero: the end).
func migSeries(uuid, index, host, gi, profile, pod string, busy float64, from, until time.Time) []fakeSeries {
	g := fakeGPU{uuid: uuid, index: index, model: h100Name, host: host, ns: "shop", pod: pod, container: "c", rateEURPerHour: 1.5,
		busyShare: busy, activity: 0.5, fbMiB: 30000, hasActivity: true, hasFB: true, resource: "nvidia.com/mig-" + profile, sharing: "mig", from: from}
	if pod == "" {
		g.ns, g.container = "", ""
	}
	ss := fakeSeriesFor(g, time.Hour)
	for i := range ss {
		ss[i].labels = with(ss[i].labels, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
		if at := ss[i].at; !until.IsZero() {
			ss[i].at = func(t time.Time) float64 {
				if t.After(until) {
					return math.NaN()
				}
				return at(t)
			}
		}
	}
	return ss
}

// TestMIGPartedAfterRepartition: GPU 2 of node-r starts the range as 3g.40gb
// (GPU_I_ID 1) + 2 × 1g.20gb and is repartitioned at its middle into 4g.40gb
// — reusing GPU_I_ID 1, held by the same pod svc-0 — + the same 2 × 1g.20gb.
// Entries are keyed by
// instance id and profile, so its layout at the end is 4g.40gb + 2 × 1g.20gb:
// applying the node's config to the GPUs as they are at the end (GPU 0
// whole, GPU 1 whole, GPU 2 as above) changes GPU 1 alone, the one the MIG
// advice repartitions; the comment names GPU 2 as repartitioned during the
// range. Keyed without the profile, GPU 2 was written with its first layout
// (3g.40gb + 2 × 1g.20gb) and the config destroyed its 4g.40gb instance.
func TestMIGPartedAfterRepartition(t *testing.T) {
	mid := testEnd.Add(-84 * time.Hour)
	q := fleetQuerier([]fakeGPU{
		alone("GPU-R0", "0", "node-r", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		alone("GPU-R1", "1", "node-r", h100Name, "shop", "small", 1.5, 1, 0.1, 6144),
	}, time.Hour)
	// svc-0 (a StatefulSet's pod) holds GPU_I_ID 1 before and after.
	q.series = append(q.series, migSeries("GPU-R2", "2", "node-r", "1", "3g.40gb", "svc-0", 0.4, time.Time{}, mid)...)
	q.series = append(q.series, migSeries("GPU-R2", "2", "node-r", "1", "4g.40gb", "svc-0", 0.7, mid.Add(time.Hour), time.Time{})...)
	q.series = append(q.series, migSeries("GPU-R2", "2", "node-r", "5", "1g.20gb", "embed", 0.6, time.Time{}, time.Time{})...)
	q.series = append(q.series, migSeries("GPU-R2", "2", "node-r", "6", "1g.20gb", "", 0, time.Time{}, time.Time{})...)
	r := generate(t, testConfig(), q)
	if m := recsOf(r, "mig"); len(m) != 1 || !slices.Equal(m[0].Holdings, []string{"shop/small/main"}) {
		t.Fatalf("mig recommendations %+v, want shop/small/main's alone", m)
	}
	config := applyspec.CheckMIGParted(t, r.Apply.MIGParted, r.Apply.MIGPartedLabels, func(string) string { return h100Name })["node-r"]
	atEnd := map[int][]string{0: nil, 1: nil, 2: {"4g.40gb", "1g.20gb", "1g.20gb"}}
	changed, err := applyspec.ApplyMIGParted(config, atEnd)
	if err != nil || !slices.Equal(changed, []int{1}) {
		t.Errorf("applying node-r's config %v to its GPUs at the end %v changes GPUs %v (%v), want GPU 1 alone\n%s", config, atEnd, changed, err, r.Apply.MIGParted)
	}
	if want := "GPU 2 (GPU-R2), repartitioned during the range (it also had 3g.40gb (GPU_I_ID 1)), with its layout at the end: 4g.40gb (GPU_I_ID 1) + 1g.20gb (GPU_I_ID 5) + 1g.20gb (GPU_I_ID 6)"; !strings.Contains(r.Apply.MIGParted, want) {
		t.Errorf("the config does not name GPU 2 as repartitioned:\n%s", r.Apply.MIGParted)
	}
	// svc-0 on GPU_I_ID 1 is two holdings, one per profile, each with its own figures.
	var svc []string
	for _, h := range r.Holdings {
		if h.Pod == "svc-0" {
			svc = append(svc, fmt.Sprintf("%s %s %.1f h busy %s", h.MIGID, h.Profile, h.Totals.HeldHours, model.FormatPct(h.Totals.BusyShare)))
		}
	}
	if want := []string{"1 3g.40gb 84.0 h busy 40.0 %", "1 4g.40gb 84.0 h busy 70.0 %"}; !slices.Equal(svc, want) {
		t.Errorf("svc-0's holdings %q, want %q", svc, want)
	}
}

// timeSliced returns the series of g's holder holding share of its device
// (a time-sliced replica, or several): its ledger seconds and EUR are share
// of each hour's, gputally_gpu_allocation is share. gi and profile name a
// MIG instance ("": the whole GPU).
func timeSliced(g fakeGPU, gi, profile string, share float64) []fakeSeries {
	var out []fakeSeries
	for _, s := range fakeSeriesFor(g, time.Hour) {
		if s.labels["pod"] == "" && s.metric != "gputally_gpu_info" {
			continue // the device's own unallocated series come from its other holders' fixtures, or none
		}
		at := s.at
		switch s.metric {
		case "gputally_gpu_seconds_total", "gputally_cost_eur_total":
			s.at = func(t time.Time) float64 { return at(t) * share }
		case "gputally_gpu_allocation":
			s.at = func(time.Time) float64 { return share }
		}
		if gi != "" {
			s.labels = with(s.labels, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
		}
		out = append(out, s)
	}
	return out
}

// freePart returns the unallocated series of part of the node-s device
// uuid (free replicas), as timeSliced does for a holder.
func freePart(uuid, index, gi, profile string, part float64) []fakeSeries {
	var out []fakeSeries
	for _, s := range fakeSeriesFor(fakeGPU{uuid: uuid, index: index, model: h100Name, host: "node-s", rateEURPerHour: 1.5}, time.Hour) {
		at := s.at
		s.at = func(t time.Time) float64 { return at(t) * part }
		if gi != "" {
			s.labels = with(s.labels, "GPU_I_ID", gi, "GPU_I_PROFILE", profile)
		}
		if s.metric != "gputally_gpu_info" {
			out = append(out, s)
		}
	}
	return out
}

// TestTimeSlicingKeepsTheNodesSharing: node-s already time-slices — GPU 2 ×4
// as nvidia.com/gpu.shared (three pods hold a replica each) and a 1g.10gb
// MIG instance ×2 as nvidia.com/mig-1g.10gb.shared — when the advice
// time-slices its two notebooks (GPUs 0 and 1) ×2. The device plugin gives
// every device of a resource the same replicas and renames time-sliced
// resources all or none (applyspec), so the node's config keeps
// renameByDefault, nvidia.com/gpu ×4 (enough for the notebooks' 2) and
// nvidia.com/mig-1g.10gb ×2. Applied to the node's devices, it changes the
// notebooks' GPUs (the advice) and the trainer's on GPU 3, which would start
// sharing: the warning names the trainer, and no pod whose sharing stays.
// Before, the config gave the node nvidia.com/gpu ×2 alone: GPU 2's pods and
// the MIG instance's would have lost their shared resources, and the warning
// named only the trainer.
func TestTimeSlicingKeepsTheNodesSharing(t *testing.T) {
	mk := func(uuid, index, ns, pod string, busy float64, resource, sharing string) fakeGPU {
		g := alone(uuid, index, "node-s", h100Name, ns, pod, 1.5, busy, 0.5, 20000)
		g.resource, g.sharing = resource, sharing
		return g
	}
	base := func() *fakeQuerier {
		q := fleetQuerier([]fakeGPU{
			alone("GPU-S0", "0", "node-s", h100Name, "dev", "nb-1", 1.0, 0.1, 0.09, 2000),
			alone("GPU-S1", "1", "node-s", h100Name, "dev", "nb-2", 1.5, 0.12, 0.11, 2000),
			alone("GPU-S3", "3", "node-s", h100Name, "ml", "trainer", 1.5, 1, 0.95, 70000),
		}, time.Hour)
		for i, busy := range []float64{0.5, 0.6, 0.7} {
			q.series = append(q.series, timeSliced(mk("GPU-S2", "2", "lab", fmt.Sprintf("s-%d", i), busy, "nvidia.com/gpu.shared", "time-slicing"), "", "", 0.25)...)
		}
		q.series = append(q.series, freePart("GPU-S2", "2", "", "", 0.25)...)
		q.series = append(q.series, freePart("GPU-S4", "4", "", "", 0.5)...)
		return q
	}
	t.Run("kept", func(t *testing.T) {
		q := base()
		q.series = append(q.series, timeSliced(mk("GPU-S4", "4", "svc", "e-0", 0.8, "nvidia.com/mig-1g.10gb.shared", "time-slicing"), "7", "1g.10gb", 0.5)...)
		r := generate(t, testConfig(), q)
		ts := recsOf(r, "time-slicing")
		if len(ts) != 1 || !slices.Equal(ts[0].FreedGPUs, []string{"GPU-S0"}) || !near(ts[0].FreedEURPerMonth, 168*perMonth) {
			t.Fatalf("time-slicing %+v, want the notebooks' with GPU-S0 freed, %.2f EUR/month", ts, 168*perMonth)
		}
		cfg := applyspec.CheckDevicePlugin(t, r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels)["node-s"]
		want := applyspec.DevicePluginConfig{RenameByDefault: true, Replicas: map[string]int{"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 2}}
		if cfg.RenameByDefault != want.RenameByDefault || !maps.Equal(cfg.Replicas, want.Replicas) {
			t.Errorf("node-s config %+v, want %+v\n%s", cfg, want, r.Apply.TimeSlicing)
		}
		// The node's devices as they are at the end, and what the config offers them as.
		type offer struct {
			resource string
			replicas int
		}
		devices := []struct {
			name   string // the resource the device plugin serves it under
			before offer
			pods   []string
		}{
			{"nvidia.com/gpu", offer{"nvidia.com/gpu", 1}, []string{"dev/nb-1/main"}},
			{"nvidia.com/gpu", offer{"nvidia.com/gpu", 1}, []string{"dev/nb-2/main"}},
			{"nvidia.com/gpu", offer{"nvidia.com/gpu.shared", 4}, []string{"lab/s-0/main", "lab/s-1/main", "lab/s-2/main"}},
			{"nvidia.com/gpu", offer{"nvidia.com/gpu", 1}, []string{"ml/trainer/main"}},
			{"nvidia.com/mig-1g.10gb", offer{"nvidia.com/mig-1g.10gb.shared", 2}, []string{"svc/e-0/main"}},
		}
		advised := ts[0].Holdings
		var changed []string
		for _, d := range devices {
			res, n := cfg.Offered(d.name)
			if (offer{res, n}) != d.before {
				for _, p := range d.pods {
					if !slices.Contains(advised, p) {
						changed = append(changed, p)
					}
				}
			}
		}
		if !slices.Equal(changed, []string{"ml/trainer/main"}) {
			t.Errorf("the config changes the sharing of %v besides the advised %v, want ml/trainer/main alone", changed, advised)
		}
		if len(r.Apply.TimeSlicingSharing) != 1 {
			t.Fatalf("sharing warnings %q, want one for node-s", r.Apply.TimeSlicingSharing)
		}
		w := r.Apply.TimeSlicingSharing[0]
		if !strings.Contains(w, "would start sharing their GPU (nvidia.com/gpu whole → nvidia.com/gpu.shared ×4): ml/trainer/main") {
			t.Errorf("warning %q does not name the trainer starting to share", w)
		}
		for _, p := range []string{"lab/", "svc/", "nb-"} {
			if strings.Contains(w, p) {
				t.Errorf("warning %q names %s, whose sharing stays (or is the advice)", w, p)
			}
		}
	})
	t.Run("MPS", func(t *testing.T) {
		q := base()
		q.series = append(q.series, timeSliced(mk("GPU-S4", "4", "svc", "m-0", 0.8, "nvidia.com/gpu", "mps"), "", "", 0.5)...)
		r := generate(t, testConfig(), q)
		if len(recsOf(r, "time-slicing")) != 1 {
			t.Fatalf("time-slicing %+v, want the notebooks'", recsOf(r, "time-slicing"))
		}
		if len(r.Apply.TimeSlicingLabels) != 0 || strings.Contains(r.Apply.TimeSlicing, "ConfigMap") ||
			!strings.Contains(r.Apply.TimeSlicing, "# node-s: svc/m-0/main shares nvidia.com/gpu with MPS, and the device plugin applies MPS or time-slicing, not both; no config is written for it") {
			t.Errorf("a node sharing with MPS: labels %q, config\n%s\nwant none, and a comment saying why", r.Apply.TimeSlicingLabels, r.Apply.TimeSlicing)
		}
	})
}
