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
