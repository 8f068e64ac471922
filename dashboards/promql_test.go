package dashboards_test

import (
	"bufio"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dashboards"
	"github.com/gputally/gputally/dcgmnames"
)

var metricsDoc = flag.String("metrics-doc", "../docs/metrics.md", "the authoritative metric list")

// prometheusSeries are series Prometheus itself writes for every target, and
// kube-state-metrics' that the waiting rules and dashboard read
// (kubernetes/kube-state-metrics internal/store/pod.go and node.go).
var prometheusSeries = []string{"up", "kube_pod_created", "kube_pod_status_phase", "kube_pod_container_resource_requests",
	"kube_node_status_allocatable", "kube_pod_labels"}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	legacyCell = regexp.MustCompile("^ `(DCGM_[A-Z0-9_]+)` $")
)

// documentedMetrics returns the metric names of the markdown tables in path:
// the backticked names in the first column of each row, and the DCGM name
// alone in the second (the DCGM table's 4.8 names).
func documentedMetrics(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("metric list: %v", err)
	}
	defer f.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			if metricName.MatchString(m[1]) {
				names[m[1]] = true
			}
		}
		if m := legacyCell.FindStringSubmatch(cells[2]); m != nil {
			names[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if len(names) < 10 {
		t.Fatalf("%s lists %d metrics; is it the metric list?", path, len(names))
	}
	return names
}

type expression struct {
	name, expr string
}

func allExpressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	for _, names := range []dcgmnames.Reads{dcgmnames.ReadsCurrent, dcgmnames.ReadsLegacy, dcgmnames.ReadsBoth} {
		ds, err := dashboards.All(names)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range dashboards.Queries(ds) {
			out = append(out, expression{
				name: names.String() + " dashboard " + q.Dashboard + "/" + q.Panel,
				expr: dashboards.ExpandVariables(q.Expr, "5m"),
			})
		}
		opts := alerts.DefaultOptions()
		opts.Names = names
		f, err := alerts.Build(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				out = append(out, expression{name: names.String() + " rule " + r.Record + r.Alert, expr: r.Expr})
			}
		}
	}
	return out
}

// TestExpressionsParseAndUseListedMetrics parses every PromQL expression of the
// dashboards and the rules with Prometheus' parser and checks that each selects
// only metrics of docs/metrics.md or gputally's own recording rules.
func TestExpressionsParseAndUseListedMetrics(t *testing.T) {
	known := documentedMetrics(t, *metricsDoc)
	for _, n := range alerts.RecordingRuleNames() {
		known[n] = true
	}
	for _, n := range prometheusSeries {
		known[n] = true
	}
	p := parser.NewParser(parser.Options{})
	exprs := allExpressions(t)
	if len(exprs) < 40 {
		t.Fatalf("only %d expressions; are the dashboards and rules built?", len(exprs))
	}
	for _, e := range exprs {
		t.Run(e.name, func(t *testing.T) {
			ast, err := p.ParseExpr(e.expr)
			if err != nil {
				t.Fatalf("parse %q: %v", e.expr, err)
			}
			selectors := 0
			parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				selectors++
				if !known[vs.Name] {
					t.Errorf("selects %q, which neither %s nor the recording rules list", vs.Name, *metricsDoc)
				}
				return nil
			})
			if selectors == 0 {
				t.Errorf("%q selects no metric", e.expr)
			}
		})
	}
}

func TestDocumentedMetricsParser(t *testing.T) {
	path := t.TempDir() + "/m.md"
	doc := "# x\n\n| metric | type |\n|---|---|\n| `a_total` | counter |\n| `B_C`, `d:e` | gauge |\n| plain | gauge |\n| `not a name` | x |\n" +
		"| `DCGM_NEW` | `DCGM_OLD` | gauge |\n| `m_y` | `m_z` |\n" +
		strings.Repeat("| `m_x` | gauge |\n", 1) + "| `m1` |\n| `m2` |\n| `m3` |\n| `m4` |\n| `m5` |\n| `m6` |\n| `m7` |\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got := documentedMetrics(t, path)
	for _, want := range []string{"a_total", "B_C", "d:e", "m_x", "m7", "DCGM_NEW", "DCGM_OLD", "m_y"} {
		if !got[want] {
			t.Errorf("%s not found", want)
		}
	}
	for _, not := range []string{"plain", "not a name", "counter", "metric", "m_z"} {
		if got[not] {
			t.Errorf("%q taken for a metric", not)
		}
	}
}

// TestEveryRecordingRuleIsUsed holds the rule set to what the dashboards and
// alerts query: a recording rule nothing reads is dead weight in Prometheus.
func TestEveryRecordingRuleIsUsed(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	for _, e := range allExpressions(t) {
		ast, err := p.ParseExpr(e.expr)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				used[vs.Name] = true
			}
			return nil
		})
	}
	for _, name := range alerts.RecordingRuleNames() {
		if !used[name] {
			t.Errorf("recording rule %s is used by no dashboard or alert", name)
		}
	}
}
