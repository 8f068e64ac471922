package dcgmexporter

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// The series names below are written out, not taken from dcgmnames: up to
// 4.8 dcgm-exporter's collector file's (DCGM_FI_PROF_GR_ENGINE_ACTIVE,
// DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_FB_USED in MiB, the label
// DCGM_FI_DRIVER_VERSION), from 4.9 the release notes' (…_GR_ENGINE_UTIL_RATIO,
// …_BOARD_POWER_WATTS, …_FB_USED_BYTES in bytes, DCGM_FI_SYSTEM_DRIVER_VERSION).

// newNames returns l relabelled as dcgm-exporter 4.9 and later write it:
// the driver version under DCGM_FI_SYSTEM_DRIVER_VERSION.
func newNames(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if k == "DCGM_FI_DRIVER_VERSION" {
			k = "DCGM_FI_SYSTEM_DRIVER_VERSION"
		}
		out[k] = v
	}
	return out
}

// until and from are a series' values up to and after grid point j0.
func until(j0 int, v float64) func(int) float64 {
	return func(j int) float64 {
		if j > j0 {
			return math.NaN()
		}
		return v
	}
}

func from(j0 int, v float64) func(int) float64 {
	return func(j int) float64 {
		if j <= j0 {
			return math.NaN()
		}
		return v
	}
}

// TestBothNamingsNewWins: a device written under both namings at once (a
// custom collector file keeping 4.8's rows beside 4.9's), each with its own
// driver label, whose two namings disagree, is read once, from the new
// names. GPU-A, ml/train-0, H100 from dcgmTestBook (1.25 EUR/h + 1.00 EUR/h
// per kW), over the hour's 120 grid points:
//
//	new: GR_ENGINE_UTIL_RATIO 0.9, BOARD_POWER_WATTS 300, FB_USED_BYTES 40 GiB
//	old: GR_ENGINE_ACTIVE 0.1,     POWER_USAGE 500,       FB_USED 1,000 MiB
//
// by the new: busy (0.9 ≥ 0.2) 3600 s at 1.25 + 0.30 = 1.55 EUR; the
// activity's max 0.9 and the framebuffer's 42,949,672,960 B / 2^20 = 40,960
// MiB. By the old it would be idle at 1.75 EUR, 0.1 and 1,000 MiB; both
// counted, 3.30 EUR or 7200 s.
func TestBothNamingsNewWins(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	old := withPod(gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3"), "ml", "train-0", "trainer")
	cur := newNames(old)
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", cur, always(0.9)},
		{"DCGM_FI_DEV_BOARD_POWER_WATTS", cur, always(300)},
		{"DCGM_FI_DEV_FB_USED_BYTES", cur, always(40 << 30)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", old, always(0.1)},
		{"DCGM_FI_DEV_POWER_USAGE", old, always(500)},
		{"DCGM_FI_DEV_FB_USED", old, always(1000)},
	}}
	d := collectHistory(t, f)
	checkEntries(t, d, []want{{"GPU-A", "", "ml", "train-0", model.StateBusy, 3600, 1.55, model.Sampled}})
	for k := range d.Ledger {
		// Activity is a resolution step's mean of its grid points' 0.9s
		// (account.go), exact only to rounding; the framebuffer is a max.
		if a := d.Activity[k]; a == nil || math.Abs(a.Max()-0.9) > 1e-9 {
			t.Errorf("%v: activity %v, want the new name's 0.9 at most", k, a)
		}
		if fb := d.FBMiB[k]; fb == nil || fb.Max() != 40960 {
			t.Errorf("%v: framebuffer %v, want the new name's 40,960 MiB at most", k, fb)
		}
	}
	if !strings.Contains(d.Sampling, "Read the names of dcgm-exporter 4.8's (DCGM_FI_DEV_FB_USED, …) and 4.10's (DCGM_FI_DEV_FB_USED_BYTES, …) (4.9 renamed") {
		t.Errorf("sampling %q, want it to say it read both namings", d.Sampling)
	}
}

// TestRollingUpgradeOneGPU: GPU-A's dcgm-exporter is replaced by a 4.9 one
// after grid point 60 (its last 4.8 scrape 17 s before point 60, its first
// 4.9 one 17 s before point 61), and its pod, now busier, runs on: one GPU
// with no gap, each half priced by its own naming's readings, in base units.
//
//	points 1–60, 4.8:  GR_ENGINE_ACTIVE 0.1 (idle), GPU_UTIL 5 (%, 0.05: idle too), POWER_USAGE 500 W
//	                   → idle 1800 s × 1.75 EUR/h = 0.875 EUR
//	points 61–120, 4.9: GR_ENGINE_UTIL_RATIO 0.9, GPU_UTIL_RATIO 0.95, BOARD_POWER_WATTS 300 W
//	                   → busy 1800 s × 1.55 EUR/h = 0.775 EUR
//
// Read under the new names only, the first half would be unknown; read as a
// gap, 0 s missing would not hold.
func TestRollingUpgradeOneGPU(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	old := withPod(gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3"), "ml", "train-0", "trainer")
	cur := newNames(old)
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", old, until(60, 0.1)},
		{"DCGM_FI_DEV_GPU_UTIL", old, until(60, 5)},
		{"DCGM_FI_DEV_POWER_USAGE", old, until(60, 500)},
		{"DCGM_FI_DEV_FB_USED", old, until(60, 1000)},
		{"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", cur, from(60, 0.9)},
		{"DCGM_FI_DEV_GPU_UTIL_RATIO", cur, from(60, 0.95)},
		{"DCGM_FI_DEV_BOARD_POWER_WATTS", cur, from(60, 300)},
		{"DCGM_FI_DEV_FB_USED_BYTES", cur, from(60, 1000<<20)},
	}}
	d := collectHistory(t, f)
	checkEntries(t, d, []want{
		{"GPU-A", "", "ml", "train-0", model.StateIdle, 1800, 0.875, model.Sampled},
		{"GPU-A", "", "ml", "train-0", model.StateBusy, 1800, 0.775, model.Sampled},
	})
	if len(d.Gaps) != 0 {
		t.Errorf("gaps %+v, want none across the upgrade", d.Gaps)
	}
}

// TestNamesReadPerCluster: the sampling statement says which namings it
// read in each cluster — east still on 4.8's names, west on 4.9's — and
// names the cluster when the clusters are named, even one alone.
func TestNamesReadPerCluster(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	east := gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3", "cluster", "east")
	west := newNames(gpuLabels("n1", "hostname", "0", "GPU-B", "NVIDIA H100 80GB HBM3", "cluster", "west"))
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_DEV_FB_USED", east, always(1000)},
		{"DCGM_FI_DEV_POWER_USAGE", east, always(100)},
		{"DCGM_FI_DEV_FB_USED_BYTES", west, always(1000 << 20)},
		{"DCGM_FI_DEV_BOARD_POWER_WATTS", west, always(100)},
	}}
	d := collectHistoryWith(t, f, time.Hour, Options{ClusterLabel: "cluster"})
	if want := ` Read the names of dcgm-exporter 4.8's (DCGM_FI_DEV_FB_USED, …) in cluster "east"; dcgm-exporter 4.10's (DCGM_FI_DEV_FB_USED_BYTES, …) in cluster "west" (4.9 renamed`; !strings.Contains(d.Sampling, want) {
		t.Errorf("sampling %q, want %q", d.Sampling, want)
	}
	f.series = f.series[2:]
	d = collectHistoryWith(t, f, time.Hour, Options{ClusterLabel: "cluster"})
	if want := ` Read the names of dcgm-exporter 4.10's (DCGM_FI_DEV_FB_USED_BYTES, …) in cluster "west" (4.9 renamed`; !strings.Contains(d.Sampling, want) {
		t.Errorf("one cluster: sampling %q, want %q", d.Sampling, want)
	}
}

// TestScrapeIntervalBothNamings: a device written under both namings every
// 30 s has two samples per scrape, one per name: its scrape interval is 30 s,
// measured per naming (3600 s / 120 samples an hour), not 15 s (240 samples
// of both names an hour), which would halve the grid and its lookbacks.
func TestScrapeIntervalBothNamings(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	old := withPod(gpuLabels("n1", "hostname", "0", "GPU-A", "NVIDIA H100 80GB HBM3"), "ml", "train-0", "trainer")
	cur := newNames(old)
	f := &dcgmHistory{start: start, grid: 30 * time.Second, series: []histSeries{
		{"DCGM_FI_DEV_FB_USED_BYTES", cur, always(1000 << 20)},
		{"DCGM_FI_DEV_FB_USED", old, always(1000)},
		{"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", cur, always(0.9)},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", old, always(0.9)},
	}}
	// Two hours, so that the interval is measured in the first hour's bucket
	// and the second's: the grid the source measures, not a given one.
	src := New(f.querier(t, 240), Options{})
	d, err := src.Collect(context.Background(), model.Range{Start: start, End: start.Add(2 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a 30s grid (dcgm-exporter scraped every 30s,"; !strings.Contains(d.Sampling, want) {
		t.Errorf("sampling %q, want %q", d.Sampling, want)
	}
}
