package analysis_test

import (
	"strconv"
	"testing"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/internal/hourly"
	"github.com/gputally/gputally/report/model"
)

// carbonFleet is two clusters over 4 one-hour buckets, every GPU at
// 2.00 EUR/h:
//
//   - eu-west, GPU-E (A100, 560 W at the facility): ml/train busy 2 h,
//     idle 1 h, unallocated 1 h: 1.12, 0.56 and 0.56 kWh.
//   - us-east, GPU-U (A100, 700 W): dev/nb idle 3 h (2.1 kWh), ml/job busy
//     1 h (0.7 kWh).
//   - us-east, GPU-T (a flat-rate T4, no energy readings): dev/x busy 4 h.
func carbonFleet() *model.Dataset {
	d := hourly.Dataset(4)
	dev := func(cluster, uuid, m string, w float64) hourly.Device {
		return hourly.Device{Key: model.DeviceKey{Cluster: cluster, UUID: uuid}, Host: cluster + "-n1", GPU: uuid, Model: m, EURPerHour: 2, FacilityW: w}
	}
	pod := func(ns, p string) model.HolderKey { return model.HolderKey{Namespace: ns, Pod: p, Container: "main"} }
	e, u, t := dev("eu-west", "GPU-E", a100, 560), dev("us-east", "GPU-U", a100, 700), dev("us-east", "GPU-T", t4, 0)
	hourly.Add(d, e, pod("ml", "train"), 0, model.StateBusy, 3600)
	hourly.Add(d, e, pod("ml", "train"), 1, model.StateBusy, 3600)
	hourly.Add(d, e, pod("ml", "train"), 2, model.StateIdle, 3600)
	hourly.Add(d, e, model.HolderKey{}, 3, model.StateUnallocated, 3600)
	for b := range 3 {
		hourly.Add(d, u, pod("dev", "nb"), b, model.StateIdle, 3600)
	}
	hourly.Add(d, u, pod("ml", "job"), 3, model.StateBusy, 3600)
	for b := range 4 {
		hourly.Add(d, t, pod("dev", "x"), b, model.StateBusy, 3600)
	}
	return d
}

// carbonBook gives eu-west its own grid (56 gCO2e/kWh) and every other
// cluster 400; doubledBook twice both.
const (
	carbonBook  = "models: [{match: ., purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 400, clusters: {eu-west: 56}}\n"
	doubledBook = "models: [{match: ., purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 800, clusters: {eu-west: 112}}\n"
)

func groupNamed(t *testing.T, gs []analysis.Group, name string) analysis.Group {
	t.Helper()
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", name, gs)
	return analysis.Group{}
}

// TestCarbonHandComputed: kWh = J / 3.6e6; kg = kWh × g/kWh / 1000, at the
// intensity of the entry's cluster.
//
//	eu-west at 56:  busy 1.12 kWh → 0.06272 kg, idle 0.56 → 0.03136,
//	                unallocated 0.56 → 0.03136
//	us-east at 400: idle 2.1 → 0.84, busy 0.7 → 0.28; the T4 none
//
// namespace ml: 1.12 + 0.56 + 0.7 = 2.38 kWh, 0.06272 + 0.03136 + 0.28 =
// 0.37408 kg, idle 0.03136; namespace dev: 2.1 kWh, 0.84 kg all idle, and
// 4 device-hours without readings; fleet: 5.04 kWh, 1.24544 kg, idle
// 0.87136; clusters eu-west 2.24 kWh 0.12544 kg, us-east 2.8 kWh 1.12 kg;
// the T4 model no energy at all (not 0).
func TestCarbonHandComputed(t *testing.T) {
	r, err := analysis.Analyze(carbonFleet(), nil, false, analysis.WithBook(mustBook(t, carbonBook)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name              string
		g                 analysis.Group
		kWh, kg, idle, un float64
	}{
		{"fleet", r.Fleet, 5.04, 1.24544, 0.87136, 4},
		{"namespace ml", groupNamed(t, r.Namespaces, "ml"), 2.38, 0.37408, 0.03136, 0},
		{"namespace dev", groupNamed(t, r.Namespaces, "dev"), 2.1, 0.84, 0.84, 4},
		{"team ml", groupNamed(t, r.Teams, "ml"), 2.38, 0.37408, 0.03136, 0},
		{"cluster eu-west", groupNamed(t, r.PerCluster, "eu-west"), 2.24, 0.12544, 0.03136, 0},
		{"cluster us-east", groupNamed(t, r.PerCluster, "us-east"), 2.8, 1.12, 0.84, 4},
		{"model A100", groupNamed(t, r.Models, a100), 5.04, 1.24544, 0.87136, 0},
		{"node eu-west-n1", groupNamed(t, r.Nodes, "eu-west-n1"), 2.24, 0.12544, 0.03136, 0},
	} {
		tot := tt.g.Totals
		if !is(tot.EnergyKWh, tt.kWh) || !is(tot.KgCO2e, tt.kg) || !is(tot.IdleKgCO2e, tt.idle) || !near(tot.UnmeteredHours, tt.un) {
			t.Errorf("%s: %s kWh, %s kg, idle %s kg, %v h without readings; want %v, %v, %v, %v",
				tt.name, show(tot.EnergyKWh), show(tot.KgCO2e), show(tot.IdleKgCO2e), tot.UnmeteredHours, tt.kWh, tt.kg, tt.idle, tt.un)
		}
	}
	if tot := groupNamed(t, r.Models, t4).Totals; tot.EnergyKWh != nil || tot.KgCO2e != nil || tot.IdleKgCO2e != nil || tot.UnmeteredHours != 4 {
		t.Errorf("T4 without power readings: %s kWh, %s kg, %v h without readings; want no figures and 4 h", show(tot.EnergyKWh), show(tot.KgCO2e), tot.UnmeteredHours)
	}
	for _, h := range r.Holdings {
		if h.Pod == "nb" && (!is(h.Totals.KgCO2e, 0.84) || !is(h.Totals.IdleKgCO2e, 0.84)) {
			t.Errorf("holding dev/nb: %s kg, idle %s", show(h.Totals.KgCO2e), show(h.Totals.IdleKgCO2e))
		}
	}
	want := []analysis.ClusterIntensity{{Cluster: "eu-west", GCO2ePerKWh: 56, Field: "carbon.clusters.eu-west"}, {Cluster: "us-east", GCO2ePerKWh: 400, Field: "carbon.gco2e_per_kwh"}}
	if r.Prices == nil || r.Prices.Book != "prices.yaml" || len(r.Prices.Carbon) != 2 || r.Prices.Carbon[0] != want[0] || r.Prices.Carbon[1] != want[1] {
		t.Errorf("prices used: %+v, want %+v", r.Prices, want)
	}
}

// TestCarbonDoubledIntensity: twice the intensity in every cluster doubles
// every kgCO2e figure and moves no EUR, hour or kWh.
func TestCarbonDoubledIntensity(t *testing.T) {
	once, err := analysis.Analyze(carbonFleet(), nil, false, analysis.WithBook(mustBook(t, carbonBook)))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := analysis.Analyze(carbonFleet(), nil, false, analysis.WithBook(mustBook(t, doubledBook)))
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][2][]analysis.Group{{{once.Fleet}, {twice.Fleet}}, {once.Teams, twice.Teams}, {once.Namespaces, twice.Namespaces},
		{once.Models, twice.Models}, {once.Nodes, twice.Nodes}, {once.PerCluster, twice.PerCluster}}
	n := 0
	for _, p := range pairs {
		for i := range p[0] {
			a, b := p[0][i].Totals, p[1][i].Totals
			if p[0][i].Name != p[1][i].Name {
				t.Fatalf("groups in another order: %s, %s", p[0][i].Name, p[1][i].Name)
			}
			if (a.KgCO2e == nil) != (b.KgCO2e == nil) || a.KgCO2e != nil && (!near(*b.KgCO2e, 2**a.KgCO2e) || !near(*b.IdleKgCO2e, 2**a.IdleKgCO2e)) {
				t.Errorf("%s: %s kg (idle %s) at twice the intensity, %s (idle %s) at once", p[0][i].Name, show(b.KgCO2e), show(b.IdleKgCO2e), show(a.KgCO2e), show(a.IdleKgCO2e))
			}
			a.KgCO2e, a.IdleKgCO2e, b.KgCO2e, b.IdleKgCO2e = nil, nil, nil, nil
			if show(a.EnergyKWh) != show(b.EnergyKWh) || a.CostEUR != b.CostEUR || a.IdleEUR != b.IdleEUR || a.UnallocatedEUR != b.UnallocatedEUR ||
				a.BusyEUR != b.BusyEUR || a.GPUHours != b.GPUHours {
				t.Errorf("%s: other figures moved with the intensity: %+v → %+v", p[0][i].Name, a, b)
			}
			n++
		}
	}
	if n != 11 { // fleet, 2 teams, 2 namespaces, 2 models, 2 nodes, 2 clusters
		t.Errorf("compared %d groups", n)
	}
}

// TestCarbonWithoutIntensity: a book without carbon keeps the energy and
// has no emissions, rather than 0 kg.
func TestCarbonWithoutIntensity(t *testing.T) {
	r, err := analysis.Analyze(carbonFleet(), nil, false, analysis.WithBook(mustBook(t, "models: [{match: ., purchase_eur: 1}]\n")))
	if err != nil {
		t.Fatal(err)
	}
	if tot := r.Fleet.Totals; !is(tot.EnergyKWh, 5.04) || tot.KgCO2e != nil || tot.IdleKgCO2e != nil || len(r.Prices.Carbon) != 0 {
		t.Errorf("fleet without an intensity: %s kWh, %s kg, prices %+v", show(tot.EnergyKWh), show(tot.KgCO2e), r.Prices)
	}
}

// show formats an optional figure to 6 decimals; "none" when absent.
func show(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'f', 6, 64)
}
