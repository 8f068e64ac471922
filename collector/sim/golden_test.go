package sim

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestWriteProcFSGolden pins every file and directory WriteProcFS writes for the
// default scenario. Rewrite with: go test ./collector/sim -run Golden -update
func TestWriteProcFSGolden(t *testing.T) {
	b := newDefault(t, Options{})
	dir := t.TempDir()
	if err := b.WriteProcFS(filepath.Join(dir, "proc"), filepath.Join(dir, "pods")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out.WriteString(rel + "/\n")
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out.WriteString(rel + ": " + string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
		t.Errorf("WriteProcFS output differs from %s (run with -update if intended):\n%s", golden, out.String())
	}
}
