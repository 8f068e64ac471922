package cost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/smallfile"
)

// Bounds of the price book's values. Each is far beyond any real price, and
// together they keep every rate, and every counter it adds up to over a
// century of GPU-seconds, a finite float64: a book within them can never make
// gputally_cost_eur_total +Inf or NaN (issue 14).
//
// The largest rate they allow is 1e9 / (0.01 × 8760) + 10 kW × 10 × 1e3 + 1e6
// ≈ 1.25e7 EUR/h; a century of it is ≈ 1e13 EUR, far inside float64.
const (
	// MaxPurchaseEUR bounds purchase_eur, EUR per GPU.
	MaxPurchaseEUR = 1e9
	// MaxHourlyEUR bounds hourly_eur and overhead_eur_per_hour, EUR per GPU-hour.
	MaxHourlyEUR = 1e6
	// MaxEnergyEURPerKWh bounds energy_eur_per_kwh, EUR per kWh.
	MaxEnergyEURPerKWh = 1e3
	// MaxPUE bounds pue, a ratio (real data centres: 1.1–2).
	MaxPUE = 10
	// MinAmortizationYears and MaxAmortizationYears bound amortization_years, years.
	MinAmortizationYears = 0.01
	MaxAmortizationYears = 100
)

// MaxRateEURPerHour is the largest rate a book within the bounds gives one
// GPU, EUR per hour: the capital of the dearest GPU over the shortest
// amortization, the energy of the highest believable power (MaxPowerW) at
// the highest PUE and price, and the highest overhead. A ledger counter that
// grows faster was not written by an exporter.
const MaxRateEURPerHour = MaxPurchaseEUR/(MinAmortizationYears*HoursPerYear) + MaxPowerW/1000*MaxPUE*MaxEnergyEURPerKWh + MaxHourlyEUR

// Default returns the built-in price book (DefaultBookYAML).
func Default() *Book {
	b, err := Parse(defaultBookYAML, "built-in")
	if err != nil {
		// The embedded book is tested; failing here is a build defect.
		panic(fmt.Sprintf("built-in price book: %v", err))
	}
	return b
}

// MaxBookBytes is the largest price book Load reads, bytes: thousands of
// entries fit; /dev/zero or a runaway generator does not.
const MaxBookBytes = 1 << 20

// Load reads and parses the price book at path: a regular file of at most
// MaxBookBytes. A FIFO, a device or a larger file is an error at once.
func Load(path string) (*Book, error) {
	data, err := smallfile.Read(path, MaxBookBytes)
	if err != nil {
		return nil, fmt.Errorf("read price book %s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a price book. name is the file name errors carry.
// Decoding is strict: unknown keys, duplicate keys, aliases, wrong types and
// invalid values are each a *BookError with the line they are on. Absent fields
// take the defaults of DESIGN.md (3 years, 0.30 EUR/kWh, PUE 1.4, no overhead,
// mig_weight compute, idle threshold 0.05, fractional policy dominant, no
// rental prices, no carbon intensity); models must be present.
func Parse(data []byte, name string) (*Book, error) {
	p := parser{file: name}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	b := &Book{
		Name:          name,
		Currency:      "EUR",
		MIGWeight:     ComputeWeight,
		IdleThreshold: 0.05,
		Fractional:    SharePolicy{Kind: Dominant, MemoryWeight: 0.5},
	}
	def := ModelPrice{AmortizationYears: 3, EnergyEURPerKWh: 0.30, PUE: 1.4}
	var models *yaml.Node
	err = p.mapping(root, "", map[string]func(key, val *yaml.Node) error{
		"currency": func(_, v *yaml.Node) error {
			s, err := p.str(v, "currency")
			if err == nil && s != "EUR" {
				err = p.errorf(v, "currency", "only EUR is supported (the metric names say eur), got %q", s)
			}
			return err
		},
		"defaults": func(_, v *yaml.Node) error { return p.costFields(v, "defaults", &def, nil, nil) },
		"models": func(k, v *yaml.Node) error {
			b.modelsLine, models = k.Line, v
			return nil
		},
		"mig_weight": func(_, v *yaml.Node) error {
			s, err := p.str(v, "mig_weight")
			switch {
			case err != nil:
				return err
			case s == "compute":
				b.MIGWeight = ComputeWeight
			case s == "memory":
				b.MIGWeight = MemoryWeight
			default:
				return p.errorf(v, "mig_weight", "must be compute or memory, got %q", s)
			}
			return nil
		},
		"carbon":     func(_, v *yaml.Node) error { return p.carbon(v, b) },
		"fractional": func(_, v *yaml.Node) error { return p.parseFractional(v, &b.Fractional) },
		"idle": func(_, v *yaml.Node) error {
			return p.mapping(v, "idle", map[string]func(key, val *yaml.Node) error{
				"threshold": func(_, v *yaml.Node) error {
					return p.bounded(v, "idle.threshold", &b.IdleThreshold, between(0, 1))
				},
			})
		},
	})
	if err != nil {
		return nil, err
	}
	if models == nil {
		return nil, p.errorf(root, "models", "missing: the book must price at least one GPU model")
	}
	if err := p.models(models, def, b); err != nil {
		return nil, err
	}
	return b, nil
}

// parser walks the yaml.Node tree of a book, so every error carries the line of
// the node it is about.
type parser struct{ file string }

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) *BookError {
	return &BookError{File: p.file, Line: n.Line, Field: field, Problem: fmt.Sprintf(format, args...)}
}

// document parses data into the root mapping node of its single document.
func (p *parser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &BookError{File: p.file, Problem: "empty price book"}
		}
		return nil, p.syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &BookError{File: p.file, Line: extra.Line, Problem: "more than one YAML document"}
	case !errors.Is(err, io.EOF):
		return nil, p.syntaxError(err)
	}
	if len(doc.Content) != 1 {
		return nil, &BookError{File: p.file, Line: doc.Line, Problem: "empty price book"}
	}
	return doc.Content[0], nil
}

var yamlErrorRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError turns a YAML syntax error into a *BookError with its line.
func (p *parser) syntaxError(err error) *BookError {
	msg := err.Error()
	m := yamlErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return &BookError{File: p.file, Problem: msg}
	}
	line, _ := strconv.Atoi(m[1])
	return &BookError{File: p.file, Line: line, Problem: msg[len(m[0]):]}
}

// mapping checks that n is a mapping with unique keys, each one of fields, and
// calls the field's function with its key and value nodes in file order.
func (p *parser) mapping(n *yaml.Node, path string, fields map[string]func(key, val *yaml.Node) error) error {
	if err := p.noAlias(n, path); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, orTop(path), "must be a mapping, got %s", kindName(n))
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := p.noAlias(k, path); err != nil {
			return err
		}
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k, orTop(path), "keys must be strings, got %s", kindName(k))
		}
		if line, dup := seen[k.Value]; dup {
			return p.errorf(k, field, "duplicate key (first at line %d)", line)
		}
		seen[k.Value] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			return p.errorf(k, field, "unknown field")
		}
		if err := p.noAlias(v, field); err != nil {
			return err
		}
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

func (p *parser) noAlias(n *yaml.Node, field string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return p.errorf(n, orTop(field), "YAML anchors and aliases are not supported")
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	default:
		return "an alias"
	}
}

// str decodes a non-null scalar as a string: its text as written. An explicit
// tag other than !!str (such as !!binary, whose text is base64 of other bytes)
// is refused rather than taken literally.
func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errorf(n, field, "must be a string, got %s", kindName(n))
	}
	if n.Style&yaml.TaggedStyle != 0 && n.ShortTag() != "!!str" {
		return "", p.errorf(n, field, "must be a string, got a %s value", n.ShortTag())
	}
	return n.Value, nil
}

// number decodes a finite int or float scalar.
func (p *parser) number(n *yaml.Node, field string) (float64, error) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, p.errorf(n, field, "must be a number, got %s", kindName(n))
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		return 0, p.errorf(n, field, "must be a number, got %q", n.Value)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, p.errorf(n, field, "must be a finite number, got %q", n.Value)
	}
	return f, nil
}

// bounded decodes a number that check accepts into dst.
func (p *parser) bounded(n *yaml.Node, field string, dst *float64, check func(float64) string) error {
	f, err := p.number(n, field)
	if err != nil {
		return err
	}
	if problem := check(f); problem != "" {
		return p.errorf(n, field, "%s, got %v", problem, f)
	}
	*dst = f
	return nil
}

// costFields decodes the capital + energy + overhead parameters of a mapping
// into m (the defaults block or a model's overrides). extra adds fields the
// mapping may also hold (a model's match, purchase_eur, hourly_eur); seen, when
// not nil, is called with the key of each parameter found.
func (p *parser) costFields(n *yaml.Node, path string, m *ModelPrice, extra map[string]func(key, val *yaml.Node) error, seen func(key *yaml.Node)) error {
	num := func(name string, dst *float64, check func(float64) string) func(k, v *yaml.Node) error {
		return func(k, v *yaml.Node) error {
			if seen != nil {
				seen(k)
			}
			return p.bounded(v, path+"."+name, dst, check)
		}
	}
	fields := map[string]func(key, val *yaml.Node) error{
		"amortization_years":    num("amortization_years", &m.AmortizationYears, between(MinAmortizationYears, MaxAmortizationYears)),
		"energy_eur_per_kwh":    num("energy_eur_per_kwh", &m.EnergyEURPerKWh, between(0, MaxEnergyEURPerKWh)),
		"pue":                   num("pue", &m.PUE, between(1, MaxPUE)),
		"overhead_eur_per_hour": num("overhead_eur_per_hour", &m.OverheadEURPerHour, between(0, MaxHourlyEUR)),
	}
	for k, f := range extra {
		fields[k] = f
	}
	return p.mapping(n, path, fields)
}

// between returns a check that f lies in [lo, hi].
func between(lo, hi float64) func(f float64) string { return betweenIn(lo, hi, "") }

// betweenIn returns a check that f lies in [lo, hi], naming the unit ("":
// none) in its message.
func betweenIn(lo, hi float64, unit string) func(f float64) string {
	return func(f float64) string {
		if !(f < lo || f > hi) {
			return ""
		}
		if unit == "" {
			return fmt.Sprintf("must be between %v and %v", lo, hi)
		}
		return fmt.Sprintf("must be between %v and %v %s", lo, hi, unit)
	}
}

// models decodes the models list into b.Models, each entry starting from def.
func (p *parser) models(n *yaml.Node, def ModelPrice, b *Book) error {
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, "models", "must be a list, got %s", kindName(n))
	}
	if len(n.Content) == 0 {
		return p.errorf(n, "models", "must price at least one GPU model")
	}
	for i, e := range n.Content {
		path := fmt.Sprintf("models[%d]", i)
		m := def
		m.Line = e.Line
		var purchase, hourly, override *yaml.Node
		extra := map[string]func(key, val *yaml.Node) error{
			"match": func(_, v *yaml.Node) error {
				s, err := p.str(v, path+".match")
				if err != nil {
					return err
				}
				re, err := regexp.Compile(s)
				if err != nil {
					return p.errorf(v, path+".match", "bad regular expression: %v", err)
				}
				m.Match = re
				return nil
			},
			"purchase_eur": func(_, v *yaml.Node) error {
				purchase = v
				return p.bounded(v, path+".purchase_eur", &m.PurchaseEUR, between(0, MaxPurchaseEUR))
			},
			"hourly_eur": func(_, v *yaml.Node) error {
				hourly = v
				return p.bounded(v, path+".hourly_eur", &m.HourlyEUR, between(0, MaxHourlyEUR))
			},
		}
		maps.Copy(extra, p.rentalFields(path, &m))
		err := p.costFields(e, path, &m, extra, func(k *yaml.Node) {
			if override == nil {
				override = k
			}
		})
		if err != nil {
			return err
		}
		switch {
		case m.Match == nil:
			return p.errorf(e, path+".match", "missing: each entry needs a match regular expression")
		case purchase != nil && hourly != nil:
			return p.errorf(hourly, path, "set purchase_eur or hourly_eur, not both")
		case purchase == nil && hourly == nil:
			return p.errorf(e, path, "set purchase_eur or hourly_eur")
		case hourly != nil && override != nil:
			return p.errorf(override, path+"."+override.Value,
				"only applies with purchase_eur (hourly_eur is the whole rate)")
		}
		m.Flat = hourly != nil
		b.Models = append(b.Models, m)
	}
	return nil
}
