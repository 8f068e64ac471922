package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBadBaselineExits2: a --baseline that cannot be followed up — missing,
// not a report, of an unknown schema version, of another range length — and
// --baseline.keep without a directory exit 2 with one message that says why;
// no report is written.
func TestBadBaselineExits2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const fields = `"start": "2026-01-05T00:00:00Z", "end": "2026-01-12T00:00:00Z", "fleet": {}, "recommendations": [], "hours_per_month": 730.5`
	unversioned := write("old.json", "{"+fields+"}")
	weekly := write("week.json", `{"schema_version": 1, `+fields+"}")
	out := filepath.Join(dir, "report.json")
	demo := []string{"report", "--demo", "--range=1h", "--format=json", "--out=" + out}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing", append(demo, "--baseline="+filepath.Join(dir, "none.json")), []string{"bad baseline", "none.json"}},
		{"not a report", append(demo, "--baseline="+write("x.json", `{"a": 1}`)), []string{"bad baseline", "x.json", "not a gputally report"}},
		{"no schema version", append(demo, "--baseline="+unversioned), []string{"bad baseline", "old.json", "no schema_version"}},
		{"another range", append(demo, "--baseline="+weekly), []string{"bad baseline", "week.json", "covers 1w and this report 1h"}},
		{"keep without a directory", append(demo, "--baseline.keep=3"), []string{"--baseline=DIR"}},
		{"keep a file", append(demo, "--baseline.keep=3", "--baseline="+weekly), []string{"bad baseline", "prunes a directory", "week.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadInput(t, nil, tc.args, tc.want...)
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}
