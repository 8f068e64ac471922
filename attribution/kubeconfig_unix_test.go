//go:build unix

package attribution

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gputally/gputally/smallfile"
)

// TestLoadKubeconfigFIFO: a kubeconfig path naming a FIFO is an error naming
// the file, returned at once: opening it for reading does not wait for a writer.
func TestLoadKubeconfigFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := loadKubeconfig(fifo)
	if !errors.Is(err, smallfile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
		t.Errorf("error %v, want one naming %s and wrapping %v", err, fifo, smallfile.ErrNotRegular)
	}
}
