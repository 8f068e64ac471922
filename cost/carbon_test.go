package cost

import (
	"errors"
	"testing"
)

func TestParseRentalAndCarbon(t *testing.T) {
	b := mustParse(t, `
models:
  - {match: A100, purchase_eur: 15000, cloud_eur_per_hour: 3.0, cloud_reserved_eur_per_hour: 1.9}
  - {match: H100, purchase_eur: 30000, cloud_eur_per_hour: 0}
  - {match: ".", hourly_eur: 2.5, cloud_reserved_eur_per_hour: 1.1}
carbon:
  gco2e_per_kwh: 350
  clusters: {eu-west: 56, "us east": 400}
`)
	a, h, other := b.Models[0], b.Models[1], b.Models[2]
	if !a.HasCloud || a.CloudEURPerHour != 3 || !a.HasCloudReserved || a.CloudReservedEURPerHour != 1.9 {
		t.Errorf("A100 entry: %+v", a)
	}
	// An explicit 0 is a price (renting costs nothing), not no price.
	if !h.HasCloud || h.CloudEURPerHour != 0 || h.HasCloudReserved {
		t.Errorf("H100 entry: %+v", h)
	}
	// A flat rate may carry rental prices: they are not cost overrides.
	if other.HasCloud || !other.HasCloudReserved || other.CloudReservedEURPerHour != 1.1 || !other.Flat {
		t.Errorf("flat entry: %+v", other)
	}
	for _, tt := range []struct {
		cluster string
		want    float64
	}{{"eu-west", 56}, {"us east", 400}, {"ap-south", 350}, {"", 350}} {
		if got, ok := b.Carbon.Intensity(tt.cluster); !ok || got != tt.want {
			t.Errorf("Intensity(%q) = %v, %v; want %v", tt.cluster, got, ok, tt.want)
		}
	}
	// No carbon section: no intensity anywhere, not 0.
	none := mustParse(t, "models: [{match: x, purchase_eur: 1}]\n")
	if g, ok := none.Carbon.Intensity("eu-west"); ok {
		t.Errorf("a book without carbon gives %v gCO2e/kWh", g)
	}
	// 350 gCO2e/kWh is 350 / 3.6e6 g per joule.
	if g := GramsPerJoule(350); !approxEqual(g, 350/3.6e6) {
		t.Errorf("GramsPerJoule(350) = %v", g)
	}
}

// TestParseRentalAndCarbonErrors: each bad value is one *BookError with the
// file, line, field and the unit of the bound it breaks.
func TestParseRentalAndCarbonErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"negative rental", "models:\n  - {match: x, purchase_eur: 1, cloud_eur_per_hour: -3}\n",
			"prices.yaml:2: models[0].cloud_eur_per_hour: must be between 0 and 1e+06 EUR per GPU-hour, got -3"},
		{"rental infinite", "models:\n  - {match: x, purchase_eur: 1, cloud_reserved_eur_per_hour: .inf}\n",
			`prices.yaml:2: models[0].cloud_reserved_eur_per_hour: must be a finite number, got ".inf"`},
		{"rental NaN", "models:\n  - {match: x, purchase_eur: 1, cloud_eur_per_hour: .nan}\n",
			`prices.yaml:2: models[0].cloud_eur_per_hour: must be a finite number, got ".nan"`},
		{"rental too high", "models:\n  - {match: x, hourly_eur: 1, cloud_reserved_eur_per_hour: 2e6}\n",
			"prices.yaml:2: models[0].cloud_reserved_eur_per_hour: must be between 0 and 1e+06 EUR per GPU-hour, got 2e+06"},
		{"rental not a number", "models:\n  - {match: x, purchase_eur: 1, cloud_eur_per_hour: cheap}\n",
			`prices.yaml:2: models[0].cloud_eur_per_hour: must be a number, got "cheap"`},
		{"unknown rental key", "models:\n  - {match: x, purchase_eur: 1, cloud_spot_eur_per_hour: 1}\n",
			"prices.yaml:2: models[0].cloud_spot_eur_per_hour: unknown field"},
		{"negative intensity", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  gco2e_per_kwh: -5\n",
			"prices.yaml:3: carbon.gco2e_per_kwh: must be between 0 and 5000 gCO2e per kWh, got -5"},
		{"intensity infinite", "models: [{match: x, purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: .inf}\n",
			`prices.yaml:2: carbon.gco2e_per_kwh: must be a finite number, got ".inf"`},
		{"intensity in kg", "models: [{match: x, purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 350, clusters: {eu-west: 6000}}\n",
			"prices.yaml:2: carbon.clusters.eu-west: must be between 0 and 5000 gCO2e per kWh, got 6000"},
		{"no default intensity", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  clusters: {eu-west: 56}\n",
			"prices.yaml:3: carbon.gco2e_per_kwh: missing: the intensity of every cluster carbon.clusters does not name, gCO2e per kWh"},
		{"unknown carbon key", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  gco2e_per_kwh: 1\n  g_per_kwh: 2\n",
			"prices.yaml:4: carbon.g_per_kwh: unknown field"},
		{"carbon not a mapping", "models: [{match: x, purchase_eur: 1}]\ncarbon: 350\n",
			`prices.yaml:2: carbon: must be a mapping, got "350"`},
		{"clusters a list", "models: [{match: x, purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 1, clusters: [eu-west]}\n",
			"prices.yaml:2: carbon.clusters: must be a mapping of cluster names to gCO2e per kWh, got a list"},
		{"duplicate cluster", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  gco2e_per_kwh: 1\n  clusters:\n    eu-west: 56\n    eu-west: 60\n",
			"prices.yaml:6: carbon.clusters.eu-west: duplicate key (first at line 5)"},
		{"empty cluster name", "models: [{match: x, purchase_eur: 1}]\ncarbon: {gco2e_per_kwh: 1, clusters: {\"\": 56}}\n",
			"prices.yaml:2: carbon.clusters: a cluster name must not be empty (devices without a cluster label take carbon.gco2e_per_kwh)"},
		{"cluster alias", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  gco2e_per_kwh: 1\n  clusters: {a: &v 5, b: *v}\n",
			"prices.yaml:4: carbon.clusters.a: YAML anchors and aliases are not supported"},
		{"cluster name a list", "models: [{match: x, purchase_eur: 1}]\ncarbon:\n  gco2e_per_kwh: 1\n  clusters: {[a]: 5}\n",
			"prices.yaml:4: carbon.clusters: must be a string, got a list"},
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
