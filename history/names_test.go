package history

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/dcgmnames"
)

// namingsOf counts the renamed DCGM_* families of one scrape under 4.8's
// names and under 4.10's.
func namingsOf(t *testing.T, mfs []*dto.MetricFamily) (legacy, current int) {
	t.Helper()
	for _, mf := range mfs {
		f, n, ok := dcgmnames.ByName(mf.GetName())
		switch {
		case !strings.HasPrefix(mf.GetName(), "DCGM_"):
		case !ok:
			t.Errorf("%s is not in the name table", mf.GetName())
		case !f.Renamed():
		case n == dcgmnames.Legacy:
			legacy++
		default:
			current++
		}
	}
	return legacy, current
}

// TestNamesRollingUpgrade runs two nodes through a rolling upgrade 10 min
// into the run, 3 min apart: node 1 (plain-node) switches at 10 min, node 2
// at 13 min. Every scrape of a node is in one naming, with its driver label,
// 4.8's before its switch and 4.10's from it, and every GPU has its
// utilization in every scrape (no gap at the switch).
func TestNamesRollingUpgrade(t *testing.T) {
	a, err := sim.Load(lostAndPlain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.Load(lostAndPlain)
	if err != nil {
		t.Fatal(err)
	}
	b.Node.Hostname, b.Seed = "plain-node-2", 6
	sink := &everyScrapeSink{}
	_, err = RunFleet(context.Background(), Options{Start: start, Duration: 20 * time.Minute, SampleInterval: 30 * time.Second, ScrapeInterval: time.Minute,
		Flavor: FlavorDCGMExporter, Names: Names{Mode: NamesRolling, UpgradeAfter: 10 * time.Minute, UpgradeEvery: 3 * time.Minute}}, []*sim.Scenario{a, b}, sink)
	if err != nil {
		t.Fatal(err)
	}
	switches := map[string]time.Duration{"plain-node": 10 * time.Minute, "plain-node-2": 13 * time.Minute}
	scrapes := map[string]int{}
	for i, mfs := range sink.scrapes {
		at := sink.times[i].Sub(start)
		host := ""
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "DCGM_") && len(mf.Metric) > 0 {
				host = labelValue(mf.Metric[0], "instance")
				break
			}
		}
		scrapes[host]++
		want := dcgmnames.Legacy
		if at >= switches[host] {
			want = dcgmnames.Current
		}
		legacy, current := namingsOf(t, mfs)
		if want == dcgmnames.Legacy && (legacy == 0 || current != 0) || want == dcgmnames.Current && (current == 0 || legacy != 0) {
			t.Errorf("%s at %s: %d families under 4.8's names, %d under 4.10's; want all under %s", host, at, legacy, current, want)
		}
		util := familyOf(mfs, dcgmnames.GPUUtil.Name(want))
		if at < time.Minute && (util == nil || len(util.Metric) != 2) { // GPU 1 falls off the bus at 1 min
			t.Errorf("%s at %s: %d GPUs with %s", host, at, len(util.GetMetric()), dcgmnames.GPUUtil.Name(want))
		}
		if at >= time.Minute && (util == nil || len(util.Metric) != 1) {
			t.Errorf("%s at %s: %d GPUs with %s, want GPU 0's", host, at, len(util.GetMetric()), dcgmnames.GPUUtil.Name(want))
		}
		for _, m := range util.GetMetric() {
			if labelValue(m, want.DriverLabel()) == "" || labelValue(m, dcgmnames.Current.DriverLabel()) != "" && want == dcgmnames.Legacy {
				t.Errorf("%s at %s: labels %v", host, at, labelNames(m))
			}
		}
	}
	if scrapes["plain-node"] != 21 || scrapes["plain-node-2"] != 21 {
		t.Errorf("scrapes per node %v, want 21 each (0 to 20 min)", scrapes)
	}
}

// TestNamesSideBySide: a 4.10 exporter keeping 4.8's rows writes every
// renamed family under both names, each in its unit (the new value is the
// old × the factor, checked by hand for three), every DCGM_* series with
// both driver labels; the lost GPU's last XID under both names.
func TestNamesSideBySide(t *testing.T) {
	s := runOptions(t, lostAndPlain, 3*time.Minute, Options{SampleInterval: 30 * time.Second, ScrapeInterval: time.Minute, Names: Names{Mode: NamesBoth}})
	last := s.scrapes[len(s.scrapes)-1]
	if legacy, current := namingsOf(t, last); legacy == 0 || legacy != current-1 { // FB capacity is 4.10's alone
		t.Errorf("%d families under 4.8's names, %d under 4.10's", legacy, current)
	}
	for _, mf := range last {
		if !strings.HasPrefix(mf.GetName(), "DCGM_") {
			continue
		}
		for _, m := range mf.Metric {
			if v := labelValue(m, dcgmnames.LegacyDriverLabel); v == "" || v != labelValue(m, dcgmnames.CurrentDriverLabel) {
				t.Errorf("%s: labels %v", mf.GetName(), labelNames(m))
			}
		}
	}
	value := func(name string) float64 {
		mf := familyOf(last, name)
		for _, m := range mf.GetMetric() {
			if labelValue(m, "gpu") == "0" && labelValue(m, "GPU_I_ID") == "" {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s of GPU 0", name)
		return 0
	}
	fb, clock, energy := value("DCGM_FI_DEV_FB_USED"), value("DCGM_FI_DEV_SM_CLOCK"), value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	for _, c := range []struct {
		name string
		want float64
	}{
		{"DCGM_FI_DEV_FB_USED_BYTES", fb * 1048576},            // MiB × 2^20
		{"DCGM_FI_DEV_SM_CLOCK_HERTZ", clock * 1e6},            // MHz × 10^6
		{"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", energy / 1000}, // mJ ÷ 1000
	} {
		if got := value(c.name); got != c.want || got == 0 {
			t.Errorf("%s = %g, want %g", c.name, got, c.want)
		}
	}
	for _, name := range []string{"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"} {
		if v := value(name); v != 0 {
			t.Errorf("GPU 0's %s = %g", name, v)
		}
		lost := 0
		for _, m := range familyOf(last, name).GetMetric() {
			if labelValue(m, "gpu") == "1" && m.GetGauge().GetValue() == 79 && labelValue(m, dcgmnames.CurrentDriverLabel) != "" && labelValue(m, dcgmnames.LegacyDriverLabel) != "" {
				lost++
			}
		}
		if lost != 1 {
			t.Errorf("%s: %d series of the lost GPU 1 at 79 with both driver labels, want 1", name, lost)
		}
	}
}

// TestNamesChecked: the names need what they need.
func TestNamesChecked(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Duration: time.Hour, Names: Names{Mode: NamesBoth}}, "flavor dcgm-exporter only"},
		{Options{Duration: time.Hour, Names: Names{Mode: NamesRolling}}, "inside the run"},
		{Options{Duration: time.Hour, Names: Names{Mode: NamesRolling, UpgradeAfter: 2 * time.Hour}}, "inside the run"},
		{Options{Duration: time.Hour, Names: Names{Mode: NamesCurrent, UpgradeAfter: time.Minute}}, "needs the names"},
		{Options{Duration: time.Hour, Names: Names{Mode: "4.9"}}, "want 4.8, 4.10, rolling or both"},
	} {
		if err := tc.o.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}
