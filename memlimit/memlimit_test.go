package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestFind: GOMEMLIMIT wins; then the cgroup v2 memory.max, then the v1
// memory.limit_in_bytes; "max", an unlimited v1 value, garbage and missing
// files are no limit.
func TestFind(t *testing.T) {
	const mib = 1 << 20
	cgroup := func(v2, v1 string) string {
		root := t.TempDir()
		if v2 != "" {
			if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte(v2), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if v1 != "" {
			if err := os.MkdirAll(filepath.Join(root, "memory"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "memory", "memory.limit_in_bytes"), []byte(v1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	for _, tc := range []struct {
		name    string
		goLimit int64
		root    string
		want    Limit
	}{
		// 480 MiB = 503,316,480 bytes.
		{"GOMEMLIMIT over the cgroup", 480 * mib, cgroup("536870912\n", ""), Limit{503316480, "GOMEMLIMIT"}},
		{"no GOMEMLIMIT: cgroup v2", math.MaxInt64, cgroup("536870912\n", ""), Limit{536870912, "cgroup memory.max"}},
		{"v2 unlimited", math.MaxInt64, cgroup("max\n", ""), Limit{}},
		{"v2 unlimited, v1 file ignored", math.MaxInt64, cgroup("max\n", "268435456\n"), Limit{}},
		{"cgroup v1", math.MaxInt64, cgroup("", "268435456\n"), Limit{268435456, "cgroup memory.limit_in_bytes"}},
		{"v1 unlimited", math.MaxInt64, cgroup("", "9223372036854771712\n"), Limit{}},
		{"garbage", math.MaxInt64, cgroup("lots", ""), Limit{}},
		{"no cgroup files", math.MaxInt64, t.TempDir(), Limit{}},
	} {
		if got := find(tc.goLimit, tc.root); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
