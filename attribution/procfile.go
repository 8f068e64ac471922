package attribution

import (
	"io/fs"
	"os"
)

// Files is what a ProcessResolver reads procfs and the pod log directory
// from (ProcessConfig.Files): the host's file system, or a simulated node's
// files in memory, which a simulation in virtual time reads thousands of times
// a simulated hour. Errors for a missing path wrap fs.ErrNotExist.
// Implementations are safe for concurrent use.
type Files interface {
	ReadFile(path string) ([]byte, error)
	ReadDir(path string) ([]fs.DirEntry, error)
}

// hostFiles are the host's files, the default Files.
type hostFiles struct{}

func (hostFiles) ReadFile(path string) ([]byte, error)       { return readProcFile(path) }
func (hostFiles) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }
