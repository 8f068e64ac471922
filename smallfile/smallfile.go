// Package smallfile reads the small configuration files of gputally (price
// books, scenarios): regular files only, up to a size cap, without blocking.
//
// os.ReadFile reads whatever path names until it ends: /dev/zero never ends and
// fills memory, and opening a FIFO blocks until a writer comes, which would hang
// a reload and the shutdown waiting on it. Read opens the path non-blocking,
// refuses anything but a regular file, and stops after the cap.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is the error for a path that is not a regular file (a FIFO, a
// device, a socket or a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the error for a file larger than the cap.
var ErrTooLarge = errors.New("file too large")

// Read returns the contents of the regular file at path, which must be at most
// limit bytes long. It never blocks on a FIFO or reads a device: those are
// ErrNotRegular. A file longer than limit is ErrTooLarge, found after reading at
// most limit+1 bytes even when the file grows while it is read. Errors wrap the
// os errors (errors.Is(err, os.ErrNotExist) holds for a missing file). Safe for
// concurrent use.
func Read(path string, limit int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
	// It changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d", path, ErrTooLarge, info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return data, nil
}

// kind names a file mode that is not a regular file.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	default:
		return m.Type().String()
	}
}
