// Package dashboards defines gputally's Grafana dashboards as Go code on the
// Grafana Foundation SDK: Fleet overview, Cost & idle, Node / GPU and
// Namespace / pod. All returns them; WriteJSON writes the JSON Grafana imports.
//
// The committed dashboards/generated/*.json are what WriteJSON writes for
// exporters that write dcgm-exporter 4.10's names, generated/4.8/*.json for
// 4.8's (a test fails when they differ; rewrite them with `go generate
// ./dashboards`). Panels query the metrics of docs/metrics.md, by the names of
// the naming they are told (dcgmnames), and the recording rules of package
// alerts, by the names that package exports.
package dashboards

//go:generate go test -run TestGeneratedFilesAreCurrent -update .

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dcgmnames"
)

// Dashboard is one generated dashboard.
type Dashboard struct {
	// Name is the file name without ".json", e.g. "fleet-overview".
	Name string
	// Model is the dashboard as the SDK builds it.
	Model dashboard.Dashboard
}

// All builds every dashboard, in a fixed order, reading the DCGM_* series
// under names.
func All(names dcgmnames.Reads) ([]Dashboard, error) {
	builders := []struct {
		name  string
		build func(dcgmnames.Reads) *dashboard.DashboardBuilder
	}{
		{"fleet-overview", fleetOverview},
		{"cost-and-idle", costAndIdle},
		{"node-gpu", nodeGPU},
		{"namespace-pod", namespacePod},
	}
	out := make([]Dashboard, 0, len(builders))
	for _, b := range builders {
		m, err := b.build(names).Build()
		if err != nil {
			return nil, fmt.Errorf("build dashboard %s: %w", b.name, err)
		}
		out = append(out, Dashboard{Name: b.name, Model: m})
	}
	return out, nil
}

// Marshal returns d as indented JSON with a trailing newline, the form of the
// committed files.
func Marshal(d dashboard.Dashboard) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal dashboard %s: %w", deref(d.Title), err)
	}
	return append(b, '\n'), nil
}

// WriteJSON writes every dashboard to dir as <Name>.json, creating dir,
// reading the DCGM_* series under names; with legacyHostname, for exporters
// that spell the node label `Hostname` (--collector.legacy-hostname-label).
func WriteJSON(dir string, legacyHostname bool, names dcgmnames.Reads) error {
	all, err := All(names)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create dashboard directory: %w", err)
	}
	for _, d := range all {
		b, err := Marshal(d.Model)
		if err != nil {
			return err
		}
		if legacyHostname {
			b = alerts.LegacyHostname(b)
		}
		path := filepath.Join(dir, d.Name+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write dashboard %s: %w", path, err)
		}
	}
	return nil
}

// Query is one PromQL expression of a dashboard: a panel target, or the series
// selector of a `label_values(...)` variable.
type Query struct {
	Dashboard string // dashboard Name
	Panel     string // panel title, or "$<variable>" for a variable
	Expr      string // as written, with Grafana variables
}

// Queries returns every PromQL expression of ds in order.
func Queries(ds []Dashboard) []Query {
	var out []Query
	for _, d := range ds {
		for _, v := range d.Model.Templating.List {
			if v.Query == nil || v.Query.String == nil {
				continue
			}
			if sel, ok := labelValuesSelector(*v.Query.String); ok {
				out = append(out, Query{Dashboard: d.Name, Panel: "$" + v.Name, Expr: sel})
			}
		}
		var panels []dashboard.Panel
		for _, p := range d.Model.Panels {
			switch {
			case p.Panel != nil:
				panels = append(panels, *p.Panel)
			case p.RowPanel != nil:
				panels = append(panels, p.RowPanel.Panels...)
			}
		}
		for _, p := range panels {
			for _, t := range p.Targets {
				var expr string
				switch q := t.(type) {
				case *prometheus.Dataquery:
					expr = q.Expr
				case prometheus.Dataquery:
					expr = q.Expr
				default:
					continue
				}
				out = append(out, Query{Dashboard: d.Name, Panel: deref(p.Title), Expr: expr})
			}
		}
	}
	return out
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// labelValuesSelector returns the series selector of "label_values(SEL, label)".
func labelValuesSelector(q string) (string, bool) {
	m := labelValuesRE.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", false
	}
	return m[1], true
}

var variableRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// ExpandVariables replaces Grafana's variables in expr the way Grafana would
// with every variable set to "All": interval variables ($__rate_interval,
// $__interval, $__range) become window (a PromQL duration such as "5m"), the
// dashboard's variables become ".*" (their All value).
func ExpandVariables(expr, window string) string {
	return variableRE.ReplaceAllStringFunc(expr, func(v string) string {
		m := variableRE.FindStringSubmatch(v)
		name := m[1] + m[2]
		if strings.HasPrefix(name, "__") {
			return window
		}
		return ".*"
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
