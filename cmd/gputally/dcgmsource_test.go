package main

import "testing"

// TestReportSourceBadInput: the dcgm-exporter source's flags are checked
// before anything is queried, like every other report flag.
func TestReportSourceBadInput(t *testing.T) {
	report := []string{"report", "--prometheus.url=http://127.0.0.1:1", "--out=-"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown source", append(report, "--source=opencost"), []string{"ledger,dcgm-exporter", "opencost"}},
		{"grid not dividing the resolution", append(report, "--source=dcgm-exporter", "--grid=7s"), []string{"grid 7s", "resolution 5m0s"}},
		{"grid below a second", append(report, "--source=dcgm-exporter", "--grid=500ms"), []string{"grid 500ms", "at least 1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBadInput(t, nil, tc.args, tc.want...) })
	}
}
