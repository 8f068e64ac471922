package report

import (
	"encoding/json"
	"os"
	"testing"
)

// readReportJSON reads the report a run wrote as JSON to path.
func readReportJSON(t testing.TB, path string) Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}
