package main

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/common/model"
)

const bookH100 = "currency: EUR\nmodels:\n  - {match: \"H100\", purchase_eur: %s}\n"

// TestPriceBookReload: a bad book on POST /-/reload is refused and keeps the old
// book in force (success metric 0); a good one on SIGHUP takes effect.
func TestPriceBookReload(t *testing.T) {
	book := filepath.Join(t.TempDir(), "book.yaml")
	write := func(content string) {
		if err := os.WriteFile(book, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(bookH100, "%s", "30000", 1))
	e := startExporter(t, "--backend=sim", "--collector.interval=100ms", "--cost.price-book="+book)
	capital := func() float64 {
		v, n := sum(e.scrape(t), "gputally_gpu_hourly_cost_eur", model.LabelSet{"component": "capital", "gpu": "0"})
		if n != 1 {
			t.Fatalf("%d capital rate series for GPU 0, want 1", n)
		}
		return v
	}
	reloadOK := func() float64 {
		v, _ := sum(e.scrape(t), "gputally_config_last_reload_successful", nil)
		return v
	}
	const hours = 3 * 8760.0 // the default amortization
	waitFor(t, func() bool { return math.Abs(capital()-30000/hours) < 1e-9 })

	write("currency: EUR\nmodels:\n  - {match: \"H100\", purchase_eur: -1}\n")
	resp, err := http.Post("http://"+e.addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("reload of a bad book answered %s, want 500", resp.Status)
	}
	if ok := reloadOK(); ok != 0 {
		t.Errorf("gputally_config_last_reload_successful %v after a bad book, want 0", ok)
	}
	if c := capital(); math.Abs(c-30000/hours) > 1e-9 {
		t.Errorf("capital rate %v after a bad book, want the old book's %v", c, 30000/hours)
	}

	write(strings.Replace(bookH100, "%s", "40000", 1))
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return reloadOK() == 1 && math.Abs(capital()-40000/hours) < 1e-9 })
}

// TestCarbonIntensityGauge: the exporter exports the carbon intensity the
// book in force gives its cluster (--cost.cluster), in grams per joule
// (56 gCO2e/kWh ÷ 3.6e6 J/kWh), follows a reload, and exports none when the
// book gives no intensity — never 0 as if the grid were clean.
func TestCarbonIntensityGauge(t *testing.T) {
	book := filepath.Join(t.TempDir(), "book.yaml")
	write := func(content string) {
		if err := os.WriteFile(book, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const models = "models: [{match: \".\", purchase_eur: 30000}]\n"
	write(models + "carbon: {gco2e_per_kwh: 350, clusters: {eu-west: 56}}\n")
	e := startExporter(t, "--backend=sim", "--collector.interval=100ms", "--cost.price-book="+book, "--cost.cluster=eu-west")
	intensity := func() (float64, int) { return sum(e.scrape(t), "gputally_grid_carbon_intensity_grams_per_joule", nil) }
	waitFor(t, func() bool { v, n := intensity(); return n == 1 && math.Abs(v-56/3.6e6) < 1e-15 })

	write(models + "carbon: {gco2e_per_kwh: 350}\n") // eu-west now takes the default
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { v, n := intensity(); return n == 1 && math.Abs(v-350/3.6e6) < 1e-15 })

	write(models)
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, n := intensity(); return n == 0 })
}
