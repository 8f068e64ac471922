package report

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// reportImports is, per package under report/, the report packages its
// non-test files may import: the pipeline engine → sources → model →
// analysis → advice → follow-up → render, each importing only upstream. A
// package missing here fails TestReportImportsDown until its rule is
// written down.
var reportImports = map[string][]string{
	"report":                     {"*"},
	"report/engine":              nil,
	"report/source":              {"report/engine", "report/model"},
	"report/source/ledger":       {"report/engine", "report/source", "report/model", "report/model/sketch"},
	"report/source/dcgmexporter": {"report/engine", "report/source", "report/model", "report/model/sketch"},
	"report/model":               {"report/model/sketch"},
	"report/model/sketch":        nil,
	"report/analysis":            {"report/model", "report/model/sketch"},
	"report/advice":              {"report/analysis", "report/model"},
	"report/followup":            {"report/advice", "report/analysis", "report/model"},
	"report/render":              {"report/followup", "report/advice", "report/analysis", "report/model"},
	// Test support: fault-injecting and engine-playing queriers, hand-made
	// datasets and checks of generated configuration.
	"report/internal/applyspec":   nil,
	"report/internal/engineplay":  {"report/engine"},
	"report/internal/faultengine": nil,
	"report/internal/hourly":      {"report/model"},
	"report/internal/hugeanswer":  nil,
}

const module = "github.com/gputally/gputally/"

// TestReportImportsDown holds every package under report/ to its row of
// reportImports: the sources never import each other, the engine client no
// report package, and nothing imports a package downstream of it.
func TestReportImportsDown(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		case d.Name() == "testdata":
			return filepath.SkipDir
		}
		pkg := filepath.ToSlash(filepath.Join("report", path))
		imports, hasGo := reportImportsOf(t, path)
		if !hasGo {
			return nil
		}
		seen[pkg] = true
		allowed, ok := reportImports[pkg]
		if !ok {
			t.Errorf("%s: no row in reportImports: write down which report packages it may import", pkg)
			return nil
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, "*") && !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s: it may import only %v", pkg, imp, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range reportImports {
		if !seen[pkg] {
			t.Errorf("reportImports names %s, which holds no Go files", pkg)
		}
	}
}

// reportImportsOf returns the report packages the non-test Go files in dir
// import, and whether dir holds any.
func reportImportsOf(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	hasGo := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		hasGo = true
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range af.Imports {
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if rest, ok := strings.CutPrefix(p, module); ok && strings.HasPrefix(rest, "report") && !slices.Contains(out, rest) {
				out = append(out, rest)
			}
		}
	}
	return out, hasGo
}

// TestEngineKnowsNoMetric: no file of report/engine, tests included, names a
// gputally or DCGM metric: the engine client sends what its callers ask and
// checks answers for what any engine must hold, whatever the series.
func TestEngineKnowsNoMetric(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("engine", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in report/engine: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"gputally_", "DCGM_"} {
			if i := strings.Index(string(b), name); i >= 0 {
				line := strings.Count(string(b[:i]), "\n") + 1
				t.Errorf("%s:%d names %s…: the engine client knows no metric", f, line, name)
			}
		}
	}
}
