package kubeletsim

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMemFSMatchesHostTree writes and removes the same files on disk and in
// memory and checks that both list the same directories and contents after
// each step, down to directories that removals leave empty.
func TestMemFSMatchesHostTree(t *testing.T) {
	root := t.TempDir()
	mem := NewMemFS()
	proc, logs := filepath.Join(root, "proc"), filepath.Join(root, "pods")
	steps := []func(Tree) error{
		func(tr Tree) error { return WriteHostInit(tr, proc) },
		func(tr Tree) error { return WriteProcess(tr, proc, 12, "uid-a", "c0ffee") },
		func(tr Tree) error { return WriteProcess(tr, proc, 13, "uid-b", "beef") },
		func(tr Tree) error { return WritePodLogs(tr, logs, "ml", "train", "uid-a", "main", "sidecar") },
		func(tr Tree) error { return WritePodLogs(tr, logs, "ml", "eval", "uid-b", "main") },
		func(tr Tree) error { return RemoveProcess(tr, proc, 12) },
		func(tr Tree) error { return RemovePodLogs(tr, logs, "ml", "train", "uid-a") },
		func(tr Tree) error { return RemoveProcess(tr, proc, 99) }, // never there
		func(tr Tree) error { return RemovePodLogs(tr, logs, "ml", "eval", "uid-b") },
	}
	for i, step := range steps {
		if err := errors.Join(step(HostTree{}), step(mem)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, dir := range []string{root, proc, logs, filepath.Join(proc, "13"), filepath.Join(logs, "ml_train_uid-a")} {
			want, werr := listTree(os.ReadDir, os.ReadFile, dir)
			got, gerr := listTree(mem.ReadDir, mem.ReadFile, dir)
			if errors.Is(werr, fs.ErrNotExist) != errors.Is(gerr, fs.ErrNotExist) || !slices.Equal(got, want) {
				t.Errorf("step %d, %s: memory %q (%v), disk %q (%v)", i, dir, got, gerr, want, werr)
			}
		}
	}
}

// listTree lists every file and directory under dir with the files' contents.
func listTree(readDir func(string) ([]fs.DirEntry, error), readFile func(string) ([]byte, error), dir string) ([]string, error) {
	entries, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			sub, err := listTree(readDir, readFile, path)
			if err != nil {
				return nil, err
			}
			out = append(append(out, path+"/"), sub...)
			continue
		}
		b, err := readFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, path+"="+string(b))
	}
	return out, nil
}
