package alerts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

const (
	runbookDir   = "../docs/runbooks"
	dashboardDir = "../dashboards/generated"
)

var (
	runbookSection = regexp.MustCompile(`(?m)^## (.+)$`)
	promqlBlock    = regexp.MustCompile("(?s)```promql\n(.*?)```")
	dashboardRef   = regexp.MustCompile(`\*\*Dashboard:\*\* \*([^*]+)\* → \*([^*]+)\*`)
)

// dashboardPanels returns "dashboard title → panel title" of every panel of
// the generated dashboards.
func dashboardPanels(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dashboardDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dashboardDir, err)
	}
	type panel struct {
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d panel
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				out[d.Title+" → "+p.Title] = true
				walk(p.Panels)
			}
		}
		walk(d.Panels)
	}
	return out
}

// TestRunbooks holds every alert (of rules with a team label, a team map and
// budgets, so that all are there) to its runbook, docs/runbooks/<AlertName>.md:
// its sections are Meaning, Impact, Diagnosis (with PromQL that parses and a
// dashboard panel that exists), Mitigation and Resolution. Every runbook is an
// alert's and listed in the directory's README.
func TestRunbooks(t *testing.T) {
	f, err := Build(budgetTestOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	alertNames := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alertNames[r.Alert] = true
			}
		}
	}
	panels := dashboardPanels(t)
	readme, err := os.ReadFile(filepath.Join(runbookDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantSections := []string{"Meaning", "Impact", "Diagnosis", "Mitigation", "Resolution"}
	p := parser.NewParser(parser.Options{})
	for name := range alertNames {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(runbookDir, name+".md"))
			if err != nil {
				t.Fatalf("alert %s has no runbook: %v", name, err)
			}
			text := string(b)
			if !strings.HasPrefix(text, "# "+name+"\n") {
				t.Errorf("runbook does not start with the heading # %s", name)
			}
			var sections []string
			for _, m := range runbookSection.FindAllStringSubmatch(text, -1) {
				sections = append(sections, m[1])
			}
			if !slices.Equal(sections, wantSections) {
				t.Errorf("sections %v, want %v", sections, wantSections)
			}
			diagnosis := section(text, "Diagnosis")
			blocks := promqlBlock.FindAllStringSubmatch(diagnosis, -1)
			if len(blocks) == 0 {
				t.Error("Diagnosis has no PromQL")
			}
			for _, q := range blocks {
				if _, err := p.ParseExpr(q[1]); err != nil {
					t.Errorf("PromQL %q: %v", q[1], err)
				}
			}
			refs := dashboardRef.FindAllStringSubmatch(diagnosis, -1)
			if len(refs) == 0 {
				t.Error("Diagnosis names no dashboard panel (**Dashboard:** *title* → *panel*)")
			}
			for _, r := range refs {
				if !panels[r[1]+" → "+r[2]] {
					t.Errorf("dashboard panel %q → %q does not exist", r[1], r[2])
				}
			}
			if !strings.Contains(string(readme), "("+name+".md)") {
				t.Errorf("%s/README.md does not list %s.md", runbookDir, name)
			}
		})
	}
	files, err := filepath.Glob(filepath.Join(runbookDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if base := strings.TrimSuffix(filepath.Base(f), ".md"); base != "README" && !alertNames[base] {
			t.Errorf("%s is the runbook of no alert", f)
		}
	}
}

// section returns the text of the `## name` section of a runbook.
func section(text, name string) string {
	_, after, ok := strings.Cut(text, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		return after[:i]
	}
	return after
}
