package attribution

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
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

// maxProcFileBytes caps a read of <procfs>/<pid>/cgroup: one line per cgroup
// hierarchy, a few hundred bytes.
const maxProcFileBytes = 64 << 10

// errProcFileTooLarge is the error for a procfs file longer than maxProcFileBytes.
var errProcFileTooLarge = errors.New("longer than 64 KiB")

// readProcFile returns the contents of a small procfs file with an open, reads
// and a close: os.ReadFile also stats the file, changes its flags and tries to
// add it to the network poller, nine system calls a file where this makes
// three, and the resolver reads one a GPU process a sample. Errors are
// *fs.PathError (errors.Is(err, fs.ErrNotExist) holds for a PID that is gone).
// Safe for concurrent use.
func readProcFile(path string) ([]byte, error) {
	fd, err := ignoringEINTR(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) > maxProcFileBytes {
			return nil, &fs.PathError{Op: "read", Path: path, Err: errProcFileTooLarge}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := ignoringEINTR(func() (int, error) { return syscall.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// ignoringEINTR calls f until it is not interrupted by a signal.
func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}
