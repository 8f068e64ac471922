package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// documentedMetrics returns the metric names of docs/metrics.md's tables: the
// backticked first cell of each row, and of the DCGM table's rows the 4.8
// name of the second cell too.
func documentedMetrics(t *testing.T) (names, legacy []string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z_:][A-Za-z0-9_:]*)` \\|(?: `(DCGM_[A-Z0-9_]+)` \\|)?")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
		if m[2] != "" {
			legacy = append(legacy, m[2])
		}
	}
	slices.Sort(names)
	slices.Sort(legacy)
	return slices.Compact(names), slices.Compact(legacy)
}

// onlyOnFailure are metrics that appear only once something failed; the
// collector goldens (collector/testdata) cover them.
var onlyOnFailure = []string{"gputally_sample_errors_total"}

// TestMetricsDocMatchesExporter fails when the simulated node (which has every
// feature on: attribution, process accounting, the ledger, an XID) serves a
// metric that docs/metrics.md lacks, or the doc lists one it does not serve:
// under the default names, with the DCGM table's first column, and under
// 4.8's, with its second.
func TestMetricsDocMatchesExporter(t *testing.T) {
	names, legacy := documentedMetrics(t)
	var own []string // gputally's, the same under both namings
	for _, n := range names {
		if !strings.HasPrefix(n, "DCGM_") {
			own = append(own, n)
		}
	}
	for _, tc := range []struct {
		flag string
		doc  []string
	}{
		{"--collector.dcgm-exporter-names=4.10", names},
		{"--collector.dcgm-exporter-names=4.8", slices.Sorted(slices.Values(append(slices.Clone(own), legacy...)))},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			served := servedMetrics(t, tc.flag)
			for _, n := range served {
				if _, found := slices.BinarySearch(tc.doc, n); !found {
					t.Errorf("the exporter serves %s, which docs/metrics.md does not list", n)
				}
			}
			for _, n := range tc.doc {
				if _, found := slices.BinarySearch(served, n); !found && !slices.Contains(onlyOnFailure, n) {
					t.Errorf("docs/metrics.md lists %s, which the exporter does not serve", n)
				}
			}
		})
	}
}

// servedMetrics returns the sorted names of the metrics the simulated node
// serves with flag, once process accounting and the XID have shown.
func servedMetrics(t *testing.T, flag string) []string {
	e := startExporter(t, "--backend=sim", "--collector.interval=200ms", "--sim.scenario=testdata/all-metrics.yaml", flag)
	var served []string
	waitFor(t, func() bool {
		names := map[string]bool{}
		for _, s := range e.scrape(t) {
			name := string(s.Metric[model.MetricNameLabel])
			if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
				names[name] = true
			}
		}
		served = served[:0]
		for n := range names {
			served = append(served, n)
		}
		// Per-pod usage appears once process accounting has seen the processes.
		return names["gputally_pod_gpu_utilization_ratio"] && names["gputally_xid_errors_total"]
	})
	slices.Sort(served)
	return served
}
