package cost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// maxPowerW is a power no GPU board draws, W: a book whose rate at this power
// is not a finite number is rejected.
const maxPowerW = 10000

// Default returns the built-in price book (DefaultBookYAML).
func Default() *Book {
	b, err := Parse(defaultBookYAML, "built-in")
	if err != nil {
		// The embedded book is tested; failing here is a build defect.
		panic(fmt.Sprintf("built-in price book: %v", err))
	}
	return b
}

// Load reads and parses the price book at path.
func Load(path string) (*Book, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read price book %s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a price book. name is the file name errors carry.
// Decoding is strict: unknown keys, duplicate keys, aliases, wrong types and
// invalid values are each a *BookError with the line they are on. Absent fields
// take the defaults of DESIGN.md (3 years, 0.30 EUR/kWh, PUE 1.4, no overhead,
// mig_weight compute, idle threshold 0.05); models must be present.
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
		"idle": func(_, v *yaml.Node) error {
			return p.mapping(v, "idle", map[string]func(key, val *yaml.Node) error{
				"threshold": func(_, v *yaml.Node) error {
					t, err := p.number(v, "idle.threshold")
					if err == nil && (t < 0 || t > 1) {
						err = p.errorf(v, "idle.threshold", "must be between 0 and 1, got %v", t)
					}
					b.IdleThreshold = t
					return err
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

// str decodes a non-null scalar as a string.
func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errorf(n, field, "must be a string, got %s", kindName(n))
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
			f, err := p.number(v, path+"."+name)
			if err != nil {
				return err
			}
			if problem := check(f); problem != "" {
				return p.errorf(v, path+"."+name, "%s, got %v", problem, f)
			}
			*dst = f
			return nil
		}
	}
	fields := map[string]func(key, val *yaml.Node) error{
		"amortization_years":    num("amortization_years", &m.AmortizationYears, positive),
		"energy_eur_per_kwh":    num("energy_eur_per_kwh", &m.EnergyEURPerKWh, nonNegative),
		"pue":                   num("pue", &m.PUE, atLeastOne),
		"overhead_eur_per_hour": num("overhead_eur_per_hour", &m.OverheadEURPerHour, nonNegative),
	}
	for k, f := range extra {
		fields[k] = f
	}
	return p.mapping(n, path, fields)
}

func positive(f float64) string {
	if f <= 0 {
		return "must be greater than 0"
	}
	return ""
}

func nonNegative(f float64) string {
	if f < 0 {
		return "must not be negative"
	}
	return ""
}

func atLeastOne(f float64) string {
	if f < 1 {
		return "must be at least 1"
	}
	return ""
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
				f, err := p.number(v, path+".purchase_eur")
				if err == nil && f < 0 {
					err = p.errorf(v, path+".purchase_eur", "must not be negative, got %v", f)
				}
				m.PurchaseEUR, purchase = f, v
				return err
			},
			"hourly_eur": func(_, v *yaml.Node) error {
				f, err := p.number(v, path+".hourly_eur")
				if err == nil && f < 0 {
					err = p.errorf(v, path+".hourly_eur", "must not be negative, got %v", f)
				}
				m.HourlyEUR, hourly = f, v
				return err
			},
		}
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
		if r := m.Rate(maxPowerW); math.IsInf(r.Total(), 0) {
			return p.errorf(e, path, "the rate overflows: the prices are too large")
		}
		b.Models = append(b.Models, m)
	}
	return nil
}
