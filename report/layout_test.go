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
// report package, and nothing imports a package downstream of it. A
// package's test files may import what it may, itself (an external test
// package), the test support under report/internal and the assembled
// pipeline, report (an external test end to end), nothing more: a source's
// tests do not import the other source either.
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
		imports, testImports, hasGo := reportImportsOf(t, path)
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
		for _, imp := range testImports {
			if !slices.Contains(allowed, "*") && !slices.Contains(allowed, imp) && imp != pkg && imp != "report" && !strings.HasPrefix(imp, "report/internal/") {
				t.Errorf("%s's tests import %s: they may import only %v, %s, report and report/internal/…", pkg, imp, allowed, pkg)
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

// reportImportsOf returns the report packages the Go files in dir import,
// those of its non-test files and those of its test files, and whether dir
// holds any non-test file.
func reportImportsOf(t *testing.T, dir string) (imports, testImports []string, hasGo bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		out := &imports
		if strings.HasSuffix(f, "_test.go") {
			out = &testImports
		} else {
			hasGo = true
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range af.Imports {
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if rest, ok := strings.CutPrefix(p, module); ok && strings.HasPrefix(rest, "report") && !slices.Contains(*out, rest) {
				*out = append(*out, rest)
			}
		}
	}
	return imports, testImports, hasGo
}

// TestEngineKnowsNoMetric: no file under report/engine, tests and any
// package or testdata below it included, names a gputally or DCGM metric:
// the engine client sends what its callers ask and checks answers for what
// any engine must hold, whatever the series.
func TestEngineKnowsNoMetric(t *testing.T) {
	n := 0
	err := filepath.WalkDir("engine", func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, name := range []string{"gputally_", "DCGM_"} {
			if i := strings.Index(string(b), name); i >= 0 {
				line := strings.Count(string(b[:i]), "\n") + 1
				t.Errorf("%s:%d names %s…: the engine client knows no metric", f, line, name)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("no files under report/engine: %v", err)
	}
}
