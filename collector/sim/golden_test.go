package sim

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestProcFSGolden pins every file and directory the kubelet writes at the
// start of the default scenario: its procfs and its pod log directory.
// Rewrite with: go test ./collector/sim -run Golden -update
func TestProcFSGolden(t *testing.T) {
	files, proc, logs := startFiles(t, newDefault(t, Options{}))
	var out strings.Builder
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := files.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			rel, _ := filepath.Rel(filepath.Dir(proc), path)
			if e.IsDir() {
				out.WriteString(rel + "/\n")
				walk(path)
				continue
			}
			data, err := files.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(rel + ": " + string(data))
		}
	}
	for _, root := range []string{logs, proc} { // in name order: pods, proc
		rel, _ := filepath.Rel(filepath.Dir(proc), root)
		out.WriteString(rel + "/\n")
		walk(root)
	}
	golden := filepath.Join("testdata", "procfs.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("the kubelet's files differ from %s (run with -update if intended):\n%s", golden, out.String())
	}
}
