package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/cost"
)

// priceBook is the reloadable price book of the exporter: it reloads on SIGHUP
// and POST /-/reload, and exports whether the last reload succeeded. Safe for
// concurrent use.
type priceBook struct {
	path   string // empty: the built-in book, nothing to reload
	store  *cost.Store
	logger *slog.Logger

	ok      prometheus.GaugeFunc // reads store, so it always matches the book in force
	success prometheus.Gauge
	carbon  carbonIntensity
}

// newPriceBook loads path (or the built-in book) and checks it prices every GPU
// of inv. cluster names the cluster the node is in, for the book's carbon
// intensity per cluster ("": its default).
func newPriceBook(path, cluster string, inv collector.Inventory, logger *slog.Logger) (*priceBook, error) {
	book := cost.Default()
	if path != "" {
		var err error
		if book, err = cost.Load(path); err != nil {
			return nil, badInput(err)
		}
	}
	var models []cost.GPUModel
	for _, g := range inv.GPUs {
		models = append(models, cost.GPUModel{UUID: g.UUID, Model: g.Model})
	}
	store, err := cost.NewStore(book, models)
	if err != nil {
		return nil, badInput(err)
	}
	p := &priceBook{
		path: path, store: store, logger: logger,
		ok: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gputally_config_last_reload_successful",
			Help: "1 when the last price-book reload succeeded, else 0 (the old book stays in force).",
		}, func() float64 {
			if store.LastReloadSuccessful() {
				return 1
			}
			return 0
		}),
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gputally_config_last_reload_success_timestamp_seconds",
			Help: "Unix time the price book was last loaded.",
		}),
	}
	p.carbon = newCarbonIntensity(store, cluster)
	p.success.SetToCurrentTime()
	return p, nil
}

// reload loads the book again; on failure the old book stays in force.
func (p *priceBook) reload() error {
	if p.path == "" {
		return nil
	}
	err := p.store.Reload(p.path)
	if err != nil {
		p.logger.Error("price book reload failed; keeping the previous book", "err", err)
		return err
	}
	p.success.SetToCurrentTime()
	p.logger.Info("price book reloaded", "path", p.path)
	return nil
}

// reloadOn reloads at every value received on hup (SIGHUP) until ctx is done.
// A nil hup never fires.
func (p *priceBook) reloadOn(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			// reload logs its own failure.
			_ = p.reload()
		}
	}
}

// collectors are the reload metrics.
func (p *priceBook) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.ok, p.success, p.carbon}
}

// carbonIntensity exports the grid carbon intensity the book in force gives
// the node's cluster, in base units, so that rules turn the energy counter
// into emissions without a constant; nothing when the book gives none. Safe
// for concurrent use.
type carbonIntensity struct {
	store   *cost.Store
	cluster string
	desc    *prometheus.Desc
}

func newCarbonIntensity(store *cost.Store, cluster string) carbonIntensity {
	return carbonIntensity{store: store, cluster: cluster, desc: prometheus.NewDesc("gputally_grid_carbon_intensity_grams_per_joule",
		"Carbon intensity of the grid in force for this node's cluster (--cost.cluster), grams of CO2e per joule of facility energy: the price book's gco2e_per_kwh / 3.6e6.",
		nil, nil)}
}

func (c carbonIntensity) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c carbonIntensity) Collect(ch chan<- prometheus.Metric) {
	if g, ok := c.store.Book().Carbon.Intensity(c.cluster); ok {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, cost.GramsPerJoule(g))
	}
}
