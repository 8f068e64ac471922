package cost

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gputally/gputally/smallfile"
)

func TestDefaultBook(t *testing.T) {
	b := Default()
	if b.Name != "built-in" || b.Currency != "EUR" || b.MIGWeight != ComputeWeight || b.IdleThreshold != 0.05 {
		t.Fatalf("Default() = %+v", b)
	}
	if g, ok := b.Carbon.Intensity("any-cluster"); !ok || g != 210 {
		t.Errorf("built-in carbon intensity = %v, %v; want 210 gCO2e/kWh", g, ok)
	}
	tests := []struct {
		model    string
		purchase float64
		hourly   float64
	}{
		{"NVIDIA H200", 35000, 0},
		{"NVIDIA GH200 480GB", 35000, 0},
		{"NVIDIA H100 80GB HBM3", 30000, 0},
		{"NVIDIA A100-SXM4-40GB", 15000, 0},
		{"NVIDIA A100 80GB PCIe", 15000, 0},
		{"Tesla T4", 0, 2.50},
		{"", 0, 2.50},
	}
	for _, tt := range tests {
		p := b.Price(tt.model)
		if p == nil {
			t.Fatalf("Price(%q) = nil", tt.model)
		}
		if p.PurchaseEUR != tt.purchase || p.HourlyEUR != tt.hourly || p.Flat != (tt.hourly != 0) {
			t.Errorf("Price(%q) = %+v, want purchase %v hourly %v", tt.model, p, tt.purchase, tt.hourly)
		}
		if !p.Flat && (p.AmortizationYears != 3 || p.EnergyEURPerKWh != 0.30 || p.PUE != 1.4 || p.OverheadEURPerHour != 0) {
			t.Errorf("Price(%q) defaults = %+v", tt.model, p)
		}
	}
}

// TestDocShowsDefaultBook keeps docs/cost.md showing the built-in book as it is.
func TestDocShowsDefaultBook(t *testing.T) {
	doc, err := os.ReadFile("../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	book := string(DefaultBookYAML())
	book = book[strings.Index(book, "currency:"):]
	if !strings.Contains(string(doc), "```yaml\n"+book+"```") {
		t.Errorf("docs/cost.md does not show the built-in price book; paste cost/default_book.yaml from its currency line:\n%s", book)
	}
}

func TestRate(t *testing.T) {
	b := mustParse(t, `
defaults: {amortization_years: 4, energy_eur_per_kwh: 0.25, pue: 1.2, overhead_eur_per_hour: 0.10}
models:
  - {match: "A100", purchase_eur: 17520}
  - {match: "H100", purchase_eur: 35040, amortization_years: 2, pue: 1.5, energy_eur_per_kwh: 0.2, overhead_eur_per_hour: 0}
  - {match: ".", hourly_eur: 3.25}
`)
	tests := []struct {
		model  string
		powerW float64
		want   Rate
	}{
		// 17520 / (4 × 8760) = 0.5; 300 W: 0.3 kW × 1.2 × 0.25 = 0.09.
		{"A100", 300, Rate{Capital: 0.5, Energy: 0.09, Overhead: 0.10}},
		{"A100", math.NaN(), Rate{Capital: 0.5, Overhead: 0.10}},
		{"A100", -1, Rate{Capital: 0.5, Overhead: 0.10}},
		{"A100", math.Inf(1), Rate{Capital: 0.5, Overhead: 0.10}},
		// A broken sensor above MaxPowerW: unknown, not 1e30 W of energy.
		{"A100", 1e30, Rate{Capital: 0.5, Overhead: 0.10}},
		// MaxPowerW itself is believed: 10 kW × 1.2 × 0.25 = 3.
		{"A100", MaxPowerW, Rate{Capital: 0.5, Energy: 3, Overhead: 0.10}},
		// 35040 / (2 × 8760) = 2; 700 W: 0.7 × 1.5 × 0.2 = 0.21.
		{"H100", 700, Rate{Capital: 2, Energy: 0.21}},
		{"L4", 72, Rate{Capital: 3.25}},
	}
	for _, tt := range tests {
		got := b.Price(tt.model).Rate(tt.powerW)
		if !approxEqual(got.Capital, tt.want.Capital) || !approxEqual(got.Energy, tt.want.Energy) || !approxEqual(got.Overhead, tt.want.Overhead) {
			t.Errorf("%s at %v W: Rate = %+v, want %+v", tt.model, tt.powerW, got, tt.want)
		}
	}
}

// TestLargestBookStaysFinite: the largest values the bounds allow give the
// rate the MaxPurchaseEUR comment computes, and a century of it is finite.
func TestLargestBookStaysFinite(t *testing.T) {
	b := mustParse(t, `
defaults: {amortization_years: 0.01, energy_eur_per_kwh: 1000, pue: 10, overhead_eur_per_hour: 1e6}
models: [{match: x, purchase_eur: 1e9}]
`)
	r := b.Models[0].Rate(MaxPowerW)
	// 1e9 / (0.01 × 8760) = 11415525.1141552…; 10 kW × 10 × 1000 = 1e5.
	want := Rate{Capital: 1e9 / 87.6, Energy: 1e5, Overhead: 1e6}
	if !approxEqual(r.Capital, want.Capital) || !approxEqual(r.Energy, want.Energy) || !approxEqual(r.Overhead, want.Overhead) {
		t.Fatalf("Rate = %+v, want %+v", r, want)
	}
	// 11415525.114… + 1e5 + 1e6 = 12515525.114… EUR/h: the bound the report
	// holds ledger counters to is this book's rate, not less.
	if !approxEqual(MaxRateEURPerHour, 1e9/87.6+1e5+1e6) || !approxEqual(MaxRateEURPerHour, r.Total()) {
		t.Errorf("MaxRateEURPerHour = %v, want the largest book's rate %v", MaxRateEURPerHour, r.Total())
	}
	if total := r.Total() * 100 * HoursPerYear; !isFinite(total) || total > 1.1e13 {
		t.Errorf("a century at the largest rate = %v EUR, want finite and about 1.1e13", total)
	}
}

func TestParseOptionalSections(t *testing.T) {
	b := mustParse(t, "currency: EUR\nmodels: [{match: x, purchase_eur: 1}]\nmig_weight: memory\nidle: {threshold: 0.2}\n")
	if b.MIGWeight != MemoryWeight || b.IdleThreshold != 0.2 {
		t.Errorf("got %+v", b)
	}
	if got := b.MIGWeight.String(); got != "memory" {
		t.Errorf("MIGWeight.String() = %q", got)
	}
	if got := b.Models[0].Line; got != 2 {
		t.Errorf("Models[0].Line = %d, want 2", got)
	}
}

// TestParseErrors holds every kind of bad book: each must be one *BookError with
// the file, line and field of the problem.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"empty", "", "prices.yaml: empty price book"},
		{"comment only", "# nothing\n", "prices.yaml: empty price book"},
		{"syntax", "models: [\n", "prices.yaml:1: did not find expected node content"},
		{"two documents", "models: [{match: x, hourly_eur: 1}]\n---\nmodels: []\n", "prices.yaml:2: more than one YAML document"},
		{"not a mapping", "- a\n", "prices.yaml:1: (top level): must be a mapping, got a list"},
		{"unknown top key", "currency: EUR\nprices: 3\n", "prices.yaml:2: prices: unknown field"},
		{"unknown defaults key", "defaults:\n  pue: 1.2\n  amortisation_years: 3\n", "prices.yaml:3: defaults.amortisation_years: unknown field"},
		{"unknown model key", "models:\n  - match: A100\n    price_eur: 3\n", "prices.yaml:3: models[0].price_eur: unknown field"},
		{"unknown idle key", "idle: {threshhold: 0.1}\n", "prices.yaml:1: idle.threshhold: unknown field"},
		{"duplicate key", "mig_weight: compute\nmig_weight: memory\n", "prices.yaml:2: mig_weight: duplicate key (first at line 1)"},
		{"alias", "defaults: &d {pue: 1.2}\n", "prices.yaml:1: defaults: YAML anchors and aliases are not supported"},
		{"currency", "currency: USD\n", `prices.yaml:1: currency: only EUR is supported (the metric names say eur), got "USD"`},
		{"missing models", "currency: EUR\n", "prices.yaml:1: models: missing: the book must price at least one GPU model"},
		{"empty models", "models: []\n", "prices.yaml:1: models: must price at least one GPU model"},
		{"models not a list", "models: {match: x}\n", "prices.yaml:1: models: must be a list, got a mapping"},
		{"negative purchase", "models:\n  - {match: A100, purchase_eur: -15000}\n", "prices.yaml:2: models[0].purchase_eur: must be between 0 and 1e+09, got -15000"},
		{"negative hourly", "models:\n  - {match: A100, hourly_eur: -1}\n", "prices.yaml:2: models[0].hourly_eur: must be between 0 and 1e+06, got -1"},
		{"negative energy", "defaults:\n  energy_eur_per_kwh: -0.3\nmodels: [{match: x, hourly_eur: 1}]\n", "prices.yaml:2: defaults.energy_eur_per_kwh: must be between 0 and 1000, got -0.3"},
		{"negative overhead", "models:\n  - {match: x, purchase_eur: 1, overhead_eur_per_hour: -2}\n", "prices.yaml:2: models[0].overhead_eur_per_hour: must be between 0 and 1e+06, got -2"},
		{"zero years", "defaults: {amortization_years: 0}\n", "prices.yaml:1: defaults.amortization_years: must be between 0.01 and 100, got 0"},
		{"pue below 1", "defaults:\n  pue: 0.9\n", "prices.yaml:2: defaults.pue: must be between 1 and 10, got 0.9"},
		{"price not a number", "models:\n  - {match: x, purchase_eur: lots}\n", `prices.yaml:2: models[0].purchase_eur: must be a number, got "lots"`},
		{"price NaN", "models:\n  - {match: x, purchase_eur: .nan}\n", `prices.yaml:2: models[0].purchase_eur: must be a finite number, got ".nan"`},
		{"price infinite", "models:\n  - {match: x, hourly_eur: .inf}\n", `prices.yaml:2: models[0].hourly_eur: must be a finite number, got ".inf"`},
		{"bad regex", "models:\n  - {match: \"A100(\", purchase_eur: 1}\n", "prices.yaml:2: models[0].match: bad regular expression: error parsing regexp: missing closing ): `A100(`"},
		{"match not a string", "models:\n  - {match: [A100], purchase_eur: 1}\n", "prices.yaml:2: models[0].match: must be a string, got a list"},
		{"match null", "models:\n  - {match: ~, purchase_eur: 1}\n", `prices.yaml:2: models[0].match: must be a string, got "~"`},
		{"no match", "models:\n  - {purchase_eur: 1}\n", "prices.yaml:2: models[0].match: missing: each entry needs a match regular expression"},
		{"both prices", "models:\n  - {match: x, purchase_eur: 1,\n     hourly_eur: 2}\n", "prices.yaml:3: models[0]: set purchase_eur or hourly_eur, not both"},
		{"neither price", "models:\n  - {match: x, hourly_eur: 1}\n  - {match: y}\n", "prices.yaml:3: models[1]: set purchase_eur or hourly_eur"},
		{"override on flat", "models:\n  - match: x\n    hourly_eur: 2\n    pue: 1.3\n", "prices.yaml:4: models[0].pue: only applies with purchase_eur (hourly_eur is the whole rate)"},
		{"entry not a mapping", "models:\n  - A100\n", `prices.yaml:2: models[0]: must be a mapping, got "A100"`},
		{"threshold above 1", "idle:\n  threshold: 5\n", "prices.yaml:2: idle.threshold: must be between 0 and 1, got 5"},
		{"threshold below 0", "idle: {threshold: -0.1}\n", "prices.yaml:1: idle.threshold: must be between 0 and 1, got -0.1"},
		{"bad mig_weight", "models: [{match: x, hourly_eur: 1}]\nmig_weight: sms\n", `prices.yaml:2: mig_weight: must be compute or memory, got "sms"`},
		// Bounds (issue 14): each of these was accepted and made the cost counters +Inf or NaN.
		{"purchase overflows", "models:\n  - {match: x, purchase_eur: 1e308, amortization_years: 1e-300}\n", "prices.yaml:2: models[0].purchase_eur: must be between 0 and 1e+09, got 1e+308"},
		{"hourly overflows the counter", "models:\n  - {match: x, hourly_eur: 1.79e308}\n", "prices.yaml:2: models[0].hourly_eur: must be between 0 and 1e+06, got 1.79e+308"},
		{"pue times zero energy", "defaults: {pue: 1e308, energy_eur_per_kwh: 0}\nmodels: [{match: x, purchase_eur: 1}]\n", "prices.yaml:1: defaults.pue: must be between 1 and 10, got 1e+308"},
		{"pue just above the bound", "defaults: {pue: 10.5}\n", "prices.yaml:1: defaults.pue: must be between 1 and 10, got 10.5"},
		{"tiny amortization", "models:\n  - {match: x, purchase_eur: 1, amortization_years: 1e-300}\n", "prices.yaml:2: models[0].amortization_years: must be between 0.01 and 100, got 1e-300"},
		{"long amortization", "defaults: {amortization_years: 101}\n", "prices.yaml:1: defaults.amortization_years: must be between 0.01 and 100, got 101"},
		{"energy price", "defaults: {energy_eur_per_kwh: 1001}\n", "prices.yaml:1: defaults.energy_eur_per_kwh: must be between 0 and 1000, got 1001"},
		{"overhead", "models:\n  - {match: x, purchase_eur: 1, overhead_eur_per_hour: 2e6}\n", "prices.yaml:2: models[0].overhead_eur_per_hour: must be between 0 and 1e+06, got 2e+06"},
		{"purchase above the bound", "models:\n  - {match: x, purchase_eur: 1.5e9}\n", "prices.yaml:2: models[0].purchase_eur: must be between 0 and 1e+09, got 1.5e+09"},
		{"binary match", "models:\n  - {match: !!binary SDEwMA==, purchase_eur: 1}\n", "prices.yaml:2: models[0].match: must be a string, got a !!binary value"},
		{"tagged int match", "models:\n  - {match: !!int 100, purchase_eur: 1}\n", "prices.yaml:2: models[0].match: must be a string, got a !!int value"},
		{"key not a string", "? [a]\n: 1\n", "prices.yaml:1: (top level): keys must be strings, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Parse([]byte(tt.yaml), "prices.yaml")
			var be *BookError
			if !errors.As(err, &be) {
				t.Fatalf("Parse = %+v, %v; want a *BookError", b, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestCheckModels(t *testing.T) {
	b := mustParse(t, "currency: EUR\nmodels:\n  - {match: A100, purchase_eur: 1}\n  - {match: H100, purchase_eur: 2}\n")
	ok := []GPUModel{{"GPU-1", "NVIDIA A100-SXM4-80GB"}, {"GPU-2", "NVIDIA H100 80GB HBM3"}}
	if err := b.CheckModels(ok); err != nil {
		t.Errorf("CheckModels(%v) = %v", ok, err)
	}
	bad := append(ok, GPUModel{"GPU-3f2a", "NVIDIA L40S"})
	want := `prices.yaml:2: models: no price for GPU model "NVIDIA L40S" (GPU-3f2a)`
	if err := b.CheckModels(bad); err == nil || err.Error() != want {
		t.Errorf("CheckModels = %v, want %s", err, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "book.yaml")
	if err := os.WriteFile(path, DefaultBookYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path)
	if err != nil || b.Name != path || len(b.Models) != 4 {
		t.Fatalf("Load = %+v, %v", b, err)
	}
	// Not a regular file, or too large: an error at once, never a read until memory ends.
	if _, err := Load("/dev/zero"); !errors.Is(err, smallfile.ErrNotRegular) || !strings.Contains(err.Error(), "/dev/zero") {
		t.Errorf("Load(/dev/zero) = %v, want ErrNotRegular naming the file", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxBookBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.Is(err, smallfile.ErrTooLarge) || !strings.Contains(err.Error(), big) {
		t.Errorf("Load(%d bytes) = %v, want ErrTooLarge naming the file", MaxBookBytes+1, err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := Load(missing); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing) = %v, want a not-exist error naming the file", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(DefaultBookYAML())
	f.Add([]byte("models: [{match: x, hourly_eur: 1}]\nidle: {threshold: 1}\n"))
	f.Add([]byte("models:\n  - {match: \"(\", purchase_eur: -1}\n"))
	f.Add([]byte("defaults: &a {pue: *a}\n"))
	f.Add([]byte("models: [{match: x, purchase_eur: 1e308, amortization_years: 1e-308}]\n"))
	f.Add([]byte("models: [{match: x, hourly_eur: 1, cloud_eur_per_hour: 2}]\ncarbon: {gco2e_per_kwh: 350, clusters: {a: 56}}\n"))
	// Issue 14's inputs are in testdata/fuzz/FuzzParse.
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var be *BookError
			if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %v is not a *BookError naming the file", err)
			}
			return
		}
		if len(b.Models) == 0 || b.IdleThreshold < 0 || b.IdleThreshold > 1 {
			t.Fatalf("invalid book accepted: %+v", b)
		}
		// A century of the highest believable power must stay a finite count
		// of EUR: the counters it feeds must never become +Inf or NaN.
		const century = 100 * HoursPerYear
		for _, m := range b.Models {
			r := m.Rate(MaxPowerW)
			if !(r.Capital >= 0 && r.Energy >= 0 && r.Overhead >= 0) || !isFinite(r.Total()*century) {
				t.Fatalf("entry %+v gives rate %+v", m, r)
			}
			if !(m.CloudEURPerHour >= 0 && m.CloudEURPerHour <= MaxCloudEURPerHour && m.CloudReservedEURPerHour >= 0 && m.CloudReservedEURPerHour <= MaxCloudEURPerHour) {
				t.Fatalf("entry %+v has a rental price out of bounds", m)
			}
		}
		for c, g := range b.Carbon.Clusters {
			if !(g >= 0 && g <= MaxGCO2ePerKWh) || c == "" {
				t.Fatalf("cluster %q has intensity %v", c, g)
			}
		}
		if !(b.Carbon.GCO2ePerKWh >= 0 && b.Carbon.GCO2ePerKWh <= MaxGCO2ePerKWh) {
			t.Fatalf("intensity %v accepted", b.Carbon.GCO2ePerKWh)
		}
	})
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func mustParse(t *testing.T, yaml string) *Book {
	t.Helper()
	b, err := Parse([]byte(yaml), "prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// approxEqual reports whether a and b agree within 1e-12 relative (or absolute near 0).
func approxEqual(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
