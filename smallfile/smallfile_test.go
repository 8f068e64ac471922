package smallfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, tc := range []struct {
		name    string
		path    string
		want    string // contents when err is nil
		wantErr error
		msg     string // in the error
	}{
		{"exactly the cap", file("eight", "12345678"), "12345678", nil, ""},
		{"empty", file("empty", ""), "", nil, ""},
		{"one byte over", file("nine", "123456789"), "", ErrTooLarge, "9 bytes, at most 8"},
		// Size 0 in stat, more on read: the cap holds while reading too.
		{"procfs file longer than it says", "/proc/self/maps", "", ErrTooLarge, "more than 8 bytes"},
		{"missing", filepath.Join(dir, "none"), "", os.ErrNotExist, "none"},
		{"directory", dir, "", ErrNotRegular, "a directory"},
		{"fifo without a writer", fifo, "", ErrNotRegular, "a FIFO"},
		{"endless device", "/dev/zero", "", ErrNotRegular, "a character device"},
		{"socket", sock, "", nil, ""}, // opening a socket fails: any error will do
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(tc.path, 8)
			switch {
			case tc.name == "socket":
				if err == nil {
					t.Fatalf("Read(socket) = %q, want an error", got)
				}
			case tc.wantErr == nil:
				if err != nil || string(got) != tc.want {
					t.Fatalf("Read = %q, %v; want %q", got, err, tc.want)
				}
			default:
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Read = %q, %v; want %v mentioning %q", got, err, tc.wantErr, tc.msg)
				}
			}
		})
	}
}
