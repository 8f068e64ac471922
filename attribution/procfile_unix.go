//go:build unix

package attribution

import (
	"errors"
	"io/fs"
	"syscall"
)

// maxProcFileBytes caps a read of <procfs>/<pid>/cgroup: one line per cgroup
// hierarchy, a few hundred bytes.
const maxProcFileBytes = 64 << 10

// errProcFileTooLarge is the error for a procfs file longer than maxProcFileBytes.
var errProcFileTooLarge = errors.New("longer than 64 KiB")

// readProcFile returns the contents of a small procfs file with an open, reads
// and a close: os.ReadFile also stats the file, changes its flags and tries to
// add it to the network poller, nine system calls a file where this makes
// four (open, a read, the read that finds the end, close), and the resolver
// reads one a GPU process a sample. Errors are
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
