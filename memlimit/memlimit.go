// Package memlimit finds the memory the process may use: the Go runtime's
// soft limit (GOMEMLIMIT), else the limit of its cgroup (a container's memory
// limit), so that what a command holds at once can be sized from it.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Limit is a memory limit and where it was found.
type Limit struct {
	Bytes int64  // 0: no limit found
	From  string // "GOMEMLIMIT", "cgroup memory.max" or "cgroup memory.limit_in_bytes"; "" with no limit
}

func (l Limit) String() string {
	if l.Bytes == 0 {
		return "no memory limit"
	}
	return fmt.Sprintf("%s %d MiB", l.From, l.Bytes>>20)
}

// Find returns the process's memory limit: the Go runtime's soft limit when
// one is set (GOMEMLIMIT or debug.SetMemoryLimit), else its cgroup's
// (v2 memory.max, else v1 memory.limit_in_bytes, as a container sees them
// under /sys/fs/cgroup), else none.
func Find() Limit { return find(debug.SetMemoryLimit(-1), "/sys/fs/cgroup") }

// find is Find for the runtime's limit goLimit (math.MaxInt64: none) and
// the cgroup file system mounted at root.
func find(goLimit int64, root string) Limit {
	if goLimit > 0 && goLimit < math.MaxInt64 {
		return Limit{goLimit, "GOMEMLIMIT"}
	}
	for _, f := range []struct{ path, from string }{
		{filepath.Join(root, "memory.max"), "cgroup memory.max"},
		{filepath.Join(root, "memory", "memory.limit_in_bytes"), "cgroup memory.limit_in_bytes"},
	} {
		n, found := readLimit(f.path)
		switch {
		case found && n > 0:
			return Limit{n, f.from}
		case found:
			return Limit{} // the cgroup's own word: no limit
		}
	}
	return Limit{}
}

// noLimitAbove is where a cgroup v1 limit means none: unlimited is written
// as the largest multiple of the page size, 2^63 − 4096.
const noLimitAbove = 1 << 62

// readLimit reads a cgroup limit file: a number of bytes, or "max". found
// is whether the file could be read; n is 0 for "max", an unlimited v1
// value, or text that is not a positive number.
func readLimit(path string) (n int64, found bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= noLimitAbove {
		return 0, true
	}
	return n, true
}
