package analysis

import (
	"cmp"
	"slices"

	"github.com/gputally/gputally/cost"
	"github.com/gputally/gputally/report/model"
)

// Option sets what the analysis reads besides the dataset.
type Option func(*analyzer)

// WithBook prices with b — the price book the report is given: its rental
// prices per GPU model (OwnOrRent) and its carbon intensity per cluster
// (Totals.KgCO2e). Without it there are neither rental comparisons nor
// emissions; the energy is the dataset's either way.
func WithBook(b *cost.Book) Option { return func(a *analyzer) { a.book = b } }

// Prices are the price book's figures the report used, so that a reader
// knows where its rental prices and emissions come from.
type Prices struct {
	// Book is the price book's file, or "built-in".
	Book string `json:"book"`
	// Carbon is the carbon intensity used in each cluster of the report
	// (cluster "" without a cluster label); empty when the book gives none.
	Carbon []ClusterIntensity `json:"carbon"`
}

// ClusterIntensity is the carbon intensity used in one cluster.
type ClusterIntensity struct {
	Cluster     string  `json:"cluster,omitempty"`
	GCO2ePerKWh float64 `json:"gco2e_per_kwh"`
	// Field is the price book field it comes from:
	// "carbon.clusters.<name>" for a cluster's own, else "carbon.gco2e_per_kwh".
	Field string `json:"field"`
}

// grid is the carbon intensity of one entry's cluster.
type grid struct {
	gPerKWh float64
	known   bool
}

// grid returns the carbon intensity of cluster c from the book; unknown
// without a book or without an intensity in it.
func (a *analyzer) grid(c string) grid {
	if a.book == nil {
		return grid{}
	}
	g, ok := a.book.Carbon.Intensity(c)
	return grid{g, ok}
}

// prices returns the figures of the book the report uses for the clusters
// of d; nil without a book.
func (a *analyzer) prices(d *model.Dataset) *Prices {
	if a.book == nil {
		return nil
	}
	p := &Prices{Book: a.book.Name}
	for _, c := range d.Clusters() {
		g := a.grid(c)
		if !g.known {
			continue
		}
		field := "carbon.gco2e_per_kwh"
		if _, own := a.book.Carbon.Clusters[c]; own && c != "" {
			field = "carbon.clusters." + c
		}
		p.Carbon = append(p.Carbon, ClusterIntensity{Cluster: c, GCO2ePerKWh: g.gPerKWh, Field: field})
	}
	return p
}

// carbonAcc sums the energy and emissions of a group's entries.
type carbonAcc struct {
	joules, kg, idleKg float64
	unmeteredSec       float64
	metered            bool // some entry had energy
	unpriced           bool // some entry with energy had no carbon intensity
}

// add adds entry e of a cluster with carbon intensity g.
func (c *carbonAcc) add(e *model.LedgerEntry, g grid) {
	if !e.Metered {
		for _, s := range e.Seconds {
			c.unmeteredSec += s
		}
		return
	}
	c.metered = true
	c.unpriced = c.unpriced || !g.known
	for st, j := range e.Joules {
		kg := j / cost.JoulesPerKWh * g.gPerKWh / 1000
		c.joules += j
		c.kg += kg
		if st == model.StateIdle {
			c.idleKg += kg
		}
	}
}

// fill sets t's energy and emission figures: absent where nothing was
// metered, or an intensity was missing.
func (c *carbonAcc) fill(t *Totals) {
	t.UnmeteredHours = c.unmeteredSec / 3600
	if !c.metered {
		return
	}
	kWh := c.joules / cost.JoulesPerKWh
	t.EnergyKWh = &kWh
	if c.unpriced {
		return
	}
	kg, idle := c.kg, c.idleKg
	t.KgCO2e, t.IdleKgCO2e = &kg, &idle
}

// clusterGroups are the totals of each cluster, when the GPUs carry a
// cluster label: clusters sit in different grids, so their emissions differ
// at the same energy. Sorted by cluster.
func clusterGroups(set groupSet, withPrev bool) []Group {
	gs := set.groups(withPrev)
	slices.SortFunc(gs, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return gs
}
