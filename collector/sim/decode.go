package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// scenarioError is a problem with a scenario, located in its file.
type scenarioError struct {
	file string
	line int    // 0 when unknown
	path string // field path, e.g. "pods[2].device.gpu"; empty for syntax errors
	msg  string
}

func (e *scenarioError) Error() string {
	var b strings.Builder
	b.WriteString(e.file)
	if e.line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.line))
	}
	if e.path != "" {
		b.WriteString(": ")
		b.WriteString(e.path)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// syntaxLine finds the line number yaml.v3 puts in its syntax errors.
var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeStrict decodes one YAML document into out (a pointer to a struct whose fields
// carry `yaml:"name"` tags) and records the line of every field path it sees in lines.
// Unknown keys, duplicate keys, null values, anchors and values of the wrong type are
// errors naming file, line and field path.
func decodeStrict(data []byte, file string, out any, lines map[string]int) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &scenarioError{file: file, msg: "empty scenario"}
		}
		if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return &scenarioError{file: file, line: line, msg: "yaml: " + m[2]}
		}
		return &scenarioError{file: file, msg: err.Error()}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			line = 0
		}
		return &scenarioError{file: file, line: line, msg: "more than one YAML document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return &scenarioError{file: file, msg: "empty scenario"}
		}
		root = root.Content[0]
	}
	d := &strictDecoder{file: file, lines: lines}
	return d.decode(root, reflect.ValueOf(out).Elem(), "")
}

type strictDecoder struct {
	file  string
	lines map[string]int
}

func (d *strictDecoder) fail(n *yaml.Node, path, format string, a ...any) error {
	return &scenarioError{file: d.file, line: n.Line, path: path, msg: fmt.Sprintf(format, a...)}
}

var durationType = reflect.TypeOf(time.Duration(0))

func (d *strictDecoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return d.fail(n, path, "anchors and aliases are not supported")
	}
	d.lines[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return d.fail(n, path, "missing value")
	}
	if v.Type() == durationType {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.fail(n, path, "expected a duration such as 90m or 2h30m, got %s", describe(n))
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			return d.fail(n, path, "expected a duration such as 90m or 2h30m, got %q", n.Value)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if err := d.decode(n, e.Elem(), path); err != nil {
			return err
		}
		v.Set(e)
		return nil
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, path, "expected a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.fail(n, path, "expected a string, got %s (quote it)", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
			return d.fail(n, path, "expected an integer, got %s", describe(n))
		}
		if v.OverflowInt(i) {
			return d.fail(n, path, "%d is out of range", i)
		}
		v.SetInt(i)
		return nil
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
			return d.fail(n, path, "expected a number, got %s", describe(n))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return d.fail(n, path, "expected a finite number, got %s", n.Value)
		}
		v.SetFloat(f)
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			return d.fail(n, path, "expected true or false, got %s", describe(n))
		}
		v.SetBool(b)
		return nil
	}
	return d.fail(n, path, "cannot decode into %s", v.Type())
}

func (d *strictDecoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.fail(n, path, "expected a mapping, got %s", describe(n))
	}
	t := v.Type()
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode || key.Tag != "!!str" {
			return d.fail(key, path, "expected a field name, got %s", describe(key))
		}
		sub := key.Value
		if path != "" {
			sub = path + "." + key.Value
		}
		if seen[key.Value] {
			return d.fail(key, sub, "field given twice")
		}
		seen[key.Value] = true
		field := -1
		var known []string
		for j := 0; j < t.NumField(); j++ {
			name, _, _ := strings.Cut(t.Field(j).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			known = append(known, name)
			if name == key.Value {
				field = j
			}
		}
		if field < 0 {
			return d.fail(key, sub, "unknown field (known: %s)", strings.Join(known, ", "))
		}
		if err := d.decode(val, v.Field(field), sub); err != nil {
			return err
		}
	}
	return nil
}

// describe names a node's kind for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return strconv.Quote(n.Value)
		case "!!null":
			return "null"
		}
		return n.Value
	}
	return "something else"
}
