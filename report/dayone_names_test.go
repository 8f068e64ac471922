package report

import (
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/analysis"
)

// The day-one fleet under dcgm-exporter's names since 4.9 (issue 39): the
// same 48 h written with the new names in base units, across a rolling
// upgrade 20 h in (node by node, 3 min apart), and with both namings side
// by side, reports what the history under the old names reports — every
// namespace's hours and EUR by state within 0.5 %, the same advice — and
// says which names it read.

// checkSameReport holds r to base: per namespace and for the fleet, every
// state's hours and EUR within 0.5 % (a state base has none of, r must not
// have more than 0.5 % of the namespace's hours of), and the same
// recommendations freeing the same EUR within 0.5 %.
func checkSameReport(t *testing.T, r, base *Report) {
	t.Helper()
	within := func(what string, got, want, of float64) {
		if math.Abs(got-want) > 0.005*math.Max(math.Abs(want), of) {
			t.Errorf("%s: %.6f, the old names' report %.6f", what, got, want)
		}
	}
	groups := map[string]analysisTotals{"fleet": totalsOf(base.Fleet.Totals)}
	for _, n := range base.Namespaces {
		groups[n.Name] = totalsOf(n.Totals)
	}
	got := map[string]analysisTotals{"fleet": totalsOf(r.Fleet.Totals)}
	for _, n := range r.Namespaces {
		got[n.Name] = totalsOf(n.Totals)
	}
	if len(got) != len(groups) {
		t.Errorf("%d namespaces, the old names' report %d", len(got)-1, len(groups)-1)
	}
	for name, w := range groups {
		g := got[name]
		for i, state := range []string{"busy h", "idle h", "unallocated h", "lost h", "unknown h", "busy EUR", "idle EUR", "unallocated EUR", "lost EUR", "unknown EUR"} {
			of := w[10] // the group's hours, for a state it has none of
			if i >= 5 {
				of = w[11]
			}
			within(name+" "+state, g[i], w[i], of)
		}
	}
	if len(r.Recommendations) != len(base.Recommendations) {
		t.Errorf("%d recommendations, the old names' report %d: %+v", len(r.Recommendations), len(base.Recommendations), r.Recommendations)
	}
	for _, b := range base.Recommendations {
		rec, ok := recommendation(r, b.Kind, b.Target)
		if !ok {
			t.Errorf("no %s %s, which the old names' report makes", b.Kind, b.Target)
			continue
		}
		within(b.Kind+" "+b.Target+" EUR/month", rec.FreedEURPerMonth, b.FreedEURPerMonth, 0)
	}
}

// analysisTotals are a group's hours and EUR by state (busy, idle,
// unallocated, lost, unknown), then its GPU-hours and its EUR.
type analysisTotals [12]float64

func totalsOf(t analysis.Totals) analysisTotals {
	return analysisTotals{t.BusyHours, t.IdleHours, t.UnallocatedHours, t.LostHours, t.UnknownHours,
		t.BusyEUR, t.IdleEUR, t.UnallocatedEUR, t.LostEUR, t.UnknownEUR, t.GPUHours, t.CostEUR}
}

// dayOneNamed reports on the day-one fleet written under names.
func dayOneNamed(t *testing.T, names history.Names) *Report {
	t.Helper()
	o := dayOneOptions()
	o.Names = names
	r, err := dayOneReport(t, simulateDayOne(t, o, dayOneNodes(t), nil), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dayOneOld is the report on the day-one fleet under the old names.
func dayOneOld(t *testing.T) *Report {
	t.Helper()
	base, err := dayOneReport(t, dayOneBase(t), dayOneConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(base.Sampling, "Read the names of dcgm-exporter 4.8's (DCGM_FI_DEV_FB_USED, …) (4.9 renamed") {
		t.Errorf("sampling %q, want it to say it read 4.8's names alone", base.Sampling)
	}
	return base
}

// TestDayOneNewNames: under 4.10's names the report is the hand
// computation (TestDayOneBase's), the old names' report within 0.5 %, and
// says it read 4.10's names alone.
func TestDayOneNewNames(t *testing.T) {
	r := dayOneNamed(t, history.Names{Mode: history.NamesCurrent})
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	checkReleaseAndDrain(t, r)
	checkSameReport(t, r, dayOneOld(t))
	if !strings.Contains(r.Sampling, "Read the names of dcgm-exporter 4.10's (DCGM_FI_DEV_FB_USED_BYTES, …) (4.9 renamed") {
		t.Errorf("sampling %q, want it to say it read 4.10's names alone", r.Sampling)
	}
}

// TestDayOneRollingUpgrade: dcgm-exporter upgraded 20 h into the 48 h, node
// by node 3 min apart (the case, where the 28 h after the upgrade
// were missing: −58 % EUR and no release advice). Each GPU is one series
// with no gap: nothing unknown, the hand figures, the old names' report,
// and both names said.
func TestDayOneRollingUpgrade(t *testing.T) {
	r := dayOneNamed(t, history.Names{Mode: history.NamesRolling, UpgradeAfter: 20 * time.Hour, UpgradeEvery: 3 * time.Minute})
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	checkReleaseAndDrain(t, r)
	checkSameReport(t, r, dayOneOld(t))
	if c := r.Coverage; len(c.Gaps) != 0 || c.MissingHours != 0 || c.UnknownHours != 0 || r.Partial {
		t.Errorf("gaps %+v, %.6f h missing, %.6f h unknown, partial %v; want none across the upgrade", c.Gaps, c.MissingHours, c.UnknownHours, r.Partial)
	}
	if !strings.Contains(r.Sampling, "Read the names of dcgm-exporter 4.8's (DCGM_FI_DEV_FB_USED, …) and 4.10's (DCGM_FI_DEV_FB_USED_BYTES, …)") {
		t.Errorf("sampling %q, want it to say it read both namings", r.Sampling)
	}
}

// TestDayOneBothSideBySide: every family under both names at once (a
// custom collector file keeping 4.8's rows), every series with both driver
// labels: each device-second counts once — the hand figures and the old
// names' report, not twice them.
func TestDayOneBothSideBySide(t *testing.T) {
	r := dayOneNamed(t, history.Names{Mode: history.NamesBoth})
	checkNamespaces(t, r, dayOneHand(30*time.Second))
	checkReleaseAndDrain(t, r)
	checkSameReport(t, r, dayOneOld(t))
	if !strings.Contains(r.Sampling, "and 4.10's") {
		t.Errorf("sampling %q, want it to say it read both namings", r.Sampling)
	}
}

// TestDayOneNeitherNaming: a cluster whose DCGM_* series are under neither
// naming (dcgm-exporter 1.x's lower-case names, say) gets an error that
// names both namings and the rename.
func TestDayOneNeitherNaming(t *testing.T) {
	drop := func(next history.Sink) history.Sink {
		return sinkFunc(func(mfs []*dto.MetricFamily, at time.Time) error {
			var keep []*dto.MetricFamily
			for _, mf := range mfs {
				if !strings.HasPrefix(mf.GetName(), "DCGM_") {
					keep = append(keep, mf)
				}
			}
			return next.AddScrape(keep, at)
		})
	}
	st := simulateDayOne(t, dayOneOptions(), dayOneNodes(t, "gpu-node-d"), drop)
	_, err := dayOneReport(t, st, dayOneConfig(t))
	for _, want := range []string{"DCGM_FI_DEV_FB_USED_BYTES", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "DCGM_FI_DEV_FB_USED,", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "either of its namings", "dcgm-exporter 4.9 renamed its fields"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one saying %q", err, want)
		}
	}
}
