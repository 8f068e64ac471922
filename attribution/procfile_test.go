//go:build unix

package attribution

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadProcFile reads files around the first buffer's size and the cap,
// a missing file and an oversized one.
func TestReadProcFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 5000, maxProcFileBytes} {
		want := bytes.Repeat([]byte("0::/kubepods\n"), n/13+1)[:n]
		path := filepath.Join(dir, "cgroup")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readProcFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, maxProcFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readProcFile(filepath.Join(dir, "big")); !errors.Is(err, errProcFileTooLarge) {
		t.Errorf("oversized file: err = %v, want errProcFileTooLarge", err)
	}
	if _, err := readProcFile(filepath.Join(dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}
