package cost

import "go.yaml.in/yaml/v3"

// Bounds of the price book's rental prices and carbon intensities, far beyond
// any real figure.
const (
	// MaxCloudEURPerHour bounds cloud_eur_per_hour and
	// cloud_reserved_eur_per_hour, EUR per GPU-hour.
	MaxCloudEURPerHour = MaxHourlyEUR
	// MaxGCO2ePerKWh bounds carbon intensities, gCO2e per kWh: a lignite
	// plant emits about 1,100.
	MaxGCO2ePerKWh = 5000
)

// Carbon is the carbon intensity of the electricity the GPUs draw: a default
// and, since the clusters of a fleet sit in different grids, one per cluster
// (the value of the report's cluster label). It is immutable once Parse
// returns it and safe for concurrent reads.
type Carbon struct {
	// Known is false when the book has no carbon section: no emission
	// figure is made, and the exporter exports no intensity.
	Known bool
	// GCO2ePerKWh is the intensity of the clusters Clusters does not list,
	// and of devices without a cluster label, gCO2e per kWh of facility
	// energy.
	GCO2ePerKWh float64
	// Clusters are the intensities of the clusters named, gCO2e per kWh.
	Clusters map[string]float64
}

// Intensity returns the carbon intensity, gCO2e per kWh, of cluster c (""
// for devices without a cluster label) and whether the book gives one.
func (c Carbon) Intensity(cluster string) (float64, bool) {
	if !c.Known {
		return 0, false
	}
	if v, ok := c.Clusters[cluster]; ok && cluster != "" {
		return v, true
	}
	return c.GCO2ePerKWh, true
}

// GramsPerJoule converts an intensity in gCO2e per kWh to grams of CO2e per
// joule: gCO2e/kWh ÷ 3.6e6.
func GramsPerJoule(gco2ePerKWh float64) float64 { return gco2ePerKWh / JoulesPerKWh }

// carbon decodes the carbon section,
//
//	carbon: {gco2e_per_kwh: 350, clusters: {eu-west: 56}}
//
// into b.Carbon: the default intensity is required, the clusters optional,
// each name a non-empty string once.
func (p *parser) carbon(n *yaml.Node, b *Book) error {
	c := Carbon{Known: true}
	var def *yaml.Node
	err := p.mapping(n, "carbon", map[string]func(key, val *yaml.Node) error{
		"gco2e_per_kwh": func(_, v *yaml.Node) error {
			def = v
			return p.bounded(v, "carbon.gco2e_per_kwh", &c.GCO2ePerKWh, betweenIn(0, MaxGCO2ePerKWh, "gCO2e per kWh"))
		},
		"clusters": func(_, v *yaml.Node) error {
			var err error
			c.Clusters, err = p.clusterIntensities(v)
			return err
		},
	})
	if err != nil {
		return err
	}
	if def == nil {
		return p.errorf(n, "carbon.gco2e_per_kwh", "missing: the intensity of every cluster carbon.clusters does not name, gCO2e per kWh")
	}
	b.Carbon = c
	return nil
}

// clusterIntensities decodes carbon.clusters, a mapping of cluster names to
// intensities in gCO2e per kWh.
func (p *parser) clusterIntensities(n *yaml.Node) (map[string]float64, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "carbon.clusters", "must be a mapping of cluster names to gCO2e per kWh, got %s", kindName(n))
	}
	out := make(map[string]float64, len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := p.noAlias(k, "carbon.clusters"); err != nil {
			return nil, err
		}
		name, err := p.str(k, "carbon.clusters")
		if err != nil {
			return nil, err
		}
		field := "carbon.clusters." + name
		switch line, dup := lines[name]; {
		case name == "":
			return nil, p.errorf(k, "carbon.clusters", "a cluster name must not be empty (devices without a cluster label take carbon.gco2e_per_kwh)")
		case dup:
			return nil, p.errorf(k, field, "duplicate key (first at line %d)", line)
		}
		lines[name] = k.Line
		if err := p.noAlias(v, field); err != nil {
			return nil, err
		}
		var g float64
		if err := p.bounded(v, field, &g, betweenIn(0, MaxGCO2ePerKWh, "gCO2e per kWh")); err != nil {
			return nil, err
		}
		out[name] = g
	}
	return out, nil
}

// rentalFields are the optional rental prices of a models entry.
func (p *parser) rentalFields(path string, m *ModelPrice) map[string]func(key, val *yaml.Node) error {
	return map[string]func(key, val *yaml.Node) error{
		"cloud_eur_per_hour": func(_, v *yaml.Node) error {
			m.HasCloud = true
			return p.bounded(v, path+".cloud_eur_per_hour", &m.CloudEURPerHour, betweenIn(0, MaxCloudEURPerHour, "EUR per GPU-hour"))
		},
		"cloud_reserved_eur_per_hour": func(_, v *yaml.Node) error {
			m.HasCloudReserved = true
			return p.bounded(v, path+".cloud_reserved_eur_per_hour", &m.CloudReservedEURPerHour, betweenIn(0, MaxCloudEURPerHour, "EUR per GPU-hour"))
		},
	}
}
