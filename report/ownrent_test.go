package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/render"
)

// a100Name is the test fleet's A100 (testFleet).
const a100Name = "NVIDIA A100-SXM4-40GB"

// goldenBook rents the test fleet's H100 at 3.00 EUR/h on demand (2.10
// reserved) and its A100 at 1.20, and puts the grid at 300 gCO2e/kWh: the
// price book of the golden reports (testdata/report.golden.*).
const goldenBook = `
models:
  - {match: H100, purchase_eur: 30000, cloud_eur_per_hour: 3.00, cloud_reserved_eur_per_hour: 2.10}
  - {match: A100, purchase_eur: 15000, cloud_eur_per_hour: 1.20}
carbon: {gco2e_per_kwh: 300}
`

// goldenConfig is testConfig with goldenBook.
func goldenConfig(t *testing.T) Config {
	t.Helper()
	b, err := cost.Parse([]byte(goldenBook), "golden-prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.PriceBook = b
	return c
}

// TestOwnOrRentInEveryFormat: the test fleet over 168 h (fake_test.go). Its
// six H100 cost 6 × 168 × 1.50 = 1,512 EUR over 1,008 GPU-hours, 1.50 EUR
// per GPU-hour; they were busy 168 + 3 × 16.8 + 0 + 168 = 386.4 h, 38.3 %,
// 1,512 / 386.4 = 3.91 EUR per busy hour. Break-even 1.50 / 3.00 = 50 %:
// renting the busy hours on demand, 386.4 × 3 = 1,159.20 EUR, would have
// cost 352.80 EUR less. The A100 was never busy: 420 EUR owned, 0 rented,
// break-even 2.50 / 1.20 = 208.3 % (renting is cheaper even at full use).
// The same figures are in JSON, CSV, Markdown and HTML.
func TestOwnOrRentInEveryFormat(t *testing.T) {
	r := generate(t, goldenConfig(t), fleetQuerier(testFleet(), time.Hour))
	render := func(format string) string {
		var b bytes.Buffer
		if err := render.Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	var doc struct {
		Models []map[string]any `json:"models"`
		Prices struct {
			Book   string `json:"book"`
			Carbon []struct {
				GCO2ePerKWh float64 `json:"gco2e_per_kwh"`
				Field       string  `json:"field"`
			} `json:"carbon"`
		} `json:"prices"`
	}
	if err := json.Unmarshal([]byte(render(FormatJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]float64{
		h100Name: {"cost_per_gpu_hour_eur": 1.5, "cost_per_busy_gpu_hour_eur": 1512 / 386.4, "busy_share_of_gpu_hours": 386.4 / 1008,
			"cloud_eur_per_hour": 3, "cloud_reserved_eur_per_hour": 2.1, "cloud_equivalent_eur": 1159.2, "break_even_busy_share": 0.5},
		a100Name: {"cost_per_gpu_hour_eur": 2.5, "busy_share_of_gpu_hours": 0, "cloud_eur_per_hour": 1.2, "cloud_equivalent_eur": 0,
			"break_even_busy_share": 2.5 / 1.2},
	}
	for _, m := range doc.Models {
		name, _ := m["name"].(string)
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected model %q", name)
			continue
		}
		delete(want, name)
		for k, v := range w {
			if got, ok := m[k].(float64); !ok || !near(got, v) {
				t.Errorf("%s %s = %v, want %v", name, k, m[k], v)
			}
		}
		if name == a100Name {
			for _, absent := range []string{"cost_per_busy_gpu_hour_eur", "cloud_reserved_eur_per_hour"} {
				if v, there := m[absent]; there {
					t.Errorf("A100 %s = %v, want absent", absent, v)
				}
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("models missing from the JSON: %v", want)
	}
	if doc.Prices.Book != "golden-prices.yaml" || len(doc.Prices.Carbon) != 1 || doc.Prices.Carbon[0].GCO2ePerKWh != 300 || doc.Prices.Carbon[0].Field != "carbon.gco2e_per_kwh" {
		t.Errorf("prices used: %+v", doc.Prices)
	}

	const h100Line = "NVIDIA H100 80GB HBM3: busy 38.3 % of its GPU-hours, break-even 50.0 %: on demand would have cost 352.80 EUR less in this period (1159.20 EUR for the busy hours at 3.00 EUR/h, against 1512.00 EUR owned)."
	const a100Line = "NVIDIA A100-SXM4-40GB: busy 0.0 % of its GPU-hours, break-even 208.3 %: on demand would have cost 420.00 EUR less in this period (0.00 EUR for the busy hours at 1.20 EUR/h, against 420.00 EUR owned)."
	md, html := render(FormatMarkdown), render(FormatHTML)
	for _, line := range []string{h100Line, a100Line} {
		if !strings.Contains(md, "- "+line+"\n") {
			t.Errorf("Markdown lacks the line %q", line)
		}
		if !strings.Contains(html, "<li>"+line+"</li>") {
			t.Errorf("HTML lacks the line %q", line)
		}
	}
	if !strings.Contains(html, `<svg id="chart-own-or-rent"`) {
		t.Error("HTML lacks the own-or-rent chart")
	}

	rows, err := csv.NewReader(strings.NewReader(render(FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	found := false
	for _, row := range rows[1:] {
		if row[0] == "model" && row[1] == h100Name {
			found = true
			for k, v := range map[string]string{"cost_per_gpu_hour_eur": "1.5", "cloud_eur_per_hour": "3", "cloud_equivalent_eur": "1159.2",
				"break_even_busy_share": "0.5", "busy_share_of_gpu_hours": "0.383333", "evidence": `models[0] (match "H100")`} {
				if row[col[k]] != v {
					t.Errorf("CSV H100 %s = %q, want %q", k, row[col[k]], v)
				}
			}
		}
	}
	if !found {
		t.Error("no CSV row of the H100 model")
	}
}

// TestCarbonInEveryFormat: the test fleet's six H100 draw 560 W at the
// facility for 168 h: 6 × 168 × 0.56 = 564.48 kWh, × 300 gCO2e/kWh (the
// golden book) = 169.344 kgCO2e. They were held idle 3 × 0.9 × 168 + 168 =
// 621.6 h: 348.096 kWh, 104.4288 kgCO2e. Namespace dev's three: 282.24 kWh,
// 84.672 kg, 453.6 h idle × 0.56 × 0.3 = 76.2048 kg. The A100 has no energy
// series: its model has no energy figure and says so, and its 168 h are the
// fleet's hours without power readings. Read through the ledger source from
// gputally_energy_joules_total.
func TestCarbonInEveryFormat(t *testing.T) {
	r := generate(t, goldenConfig(t), fleetQuerier(testFleet(), time.Hour))
	var b bytes.Buffer
	if err := render.Render(&b, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	type totals struct {
		EnergyKWh      *float64 `json:"energy_kwh"`
		KgCO2e         *float64 `json:"kgco2e"`
		IdleKgCO2e     *float64 `json:"idle_kgco2e"`
		UnmeteredHours float64  `json:"unmetered_hours"`
	}
	type group struct {
		Name   string `json:"name"`
		Totals totals `json:"totals"`
	}
	var doc struct {
		Fleet      group   `json:"fleet"`
		Namespaces []group `json:"namespaces"`
		Models     []group `json:"models"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	check := func(name string, got totals, kWh, kg, idle, unmetered float64) {
		t.Helper()
		if got.EnergyKWh == nil || got.KgCO2e == nil || got.IdleKgCO2e == nil || !near(*got.EnergyKWh, kWh) || !near(*got.KgCO2e, kg) ||
			!near(*got.IdleKgCO2e, idle) || !near(got.UnmeteredHours, unmetered) {
			t.Errorf("%s: %+v, want %v kWh, %v kg, %v idle kg, %v h without readings", name, got, kWh, kg, idle, unmetered)
		}
	}
	check("fleet", doc.Fleet.Totals, 564.48, 169.344, 104.4288, 168)
	for _, g := range doc.Namespaces {
		if g.Name == "dev" {
			check("namespace dev", g.Totals, 282.24, 84.672, 76.2048, 0)
		}
	}
	for _, g := range doc.Models {
		if g.Name == a100Name && (g.Totals.EnergyKWh != nil || g.Totals.KgCO2e != nil || g.Totals.UnmeteredHours != 168) {
			t.Errorf("A100 without energy series: %+v, want no energy figure and 168 h without readings", g.Totals)
		}
	}
	b.Reset()
	if err := render.Render(&b, r, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	const line = "Energy 564.5 kWh (measured power × PUE × time, the energy the EUR price); 168.0 device-hours had no power readings (flat-rate models, or power not read) and are not in it. " +
		"169.34 kgCO2e, 104.43 of it emitted while GPUs were held idle, at 300 gCO2e/kWh (carbon.gco2e_per_kwh) from price book golden-prices.yaml."
	if !strings.Contains(b.String(), line) {
		t.Errorf("Markdown lacks the fleet's carbon line %q", line)
	}
	if !strings.Contains(b.String(), "| NVIDIA A100-SXM4-40GB | exact | 0.0 | 0.0 % | 420.00 | 0.00 | 0.00 | 420.00 | 0.00 | no power readings | – | – |") {
		t.Error("Markdown's A100 row does not say it has no power readings")
	}
	b.Reset()
	if err := render.Render(&b, r, FormatHTML); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<b id="kgco2e">169.34 kgCO2e</b>`) {
		t.Error("HTML lacks the fleet's 169.34 kgCO2e")
	}
}
