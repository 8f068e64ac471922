package helm_test

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestReportSource: report.source=dcgm-exporter makes every report container
// read dcgm-exporter and kube-state-metrics (--source, and --grid when
// report.grid is set: without it the report follows the scrape interval it
// measures) and price the devices with the exporters' price book, mounted
// from its ConfigMap; the default is the ledger, without the book; another
// value fails to render.
func TestReportSource(t *testing.T) {
	base := []string{"--set", "report.enabled=true", "--set", "report.prometheusURL=http://prometheus:9090", "--set-json", `report.formats=["html","md"]`}
	for _, tc := range []struct {
		name     string
		args     []string
		want     []string
		wantBook bool
		grid     bool // --grid is passed
	}{
		{"default", nil, []string{"--source=ledger", "--report.cluster-label=cluster"}, false, false},
		{"one cluster", []string{"--set", "report.clusterLabel="}, []string{"--report.cluster-label="}, false, false},
		{"dcgm-exporter", []string{"--set", "report.source=dcgm-exporter"},
			[]string{"--source=dcgm-exporter", "--cost.price-book=/etc/gputally/price-book/price-book.yaml"}, true, false},
		{"dcgm-exporter on a grid", []string{"--set", "report.source=dcgm-exporter", "--set", "report.grid=15s"},
			[]string{"--source=dcgm-exporter", "--grid=15s", "--cost.price-book=/etc/gputally/price-book/price-book.yaml"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cj batchv1.CronJob
			decodeOne(t, render(t, append(slices.Clone(base), tc.args...)...), "CronJob", &cj)
			pod := cj.Spec.JobTemplate.Spec.Template.Spec
			book := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "price-book" && v.ConfigMap != nil })
			if book != tc.wantBook {
				t.Errorf("price-book volume %v, want %v", book, tc.wantBook)
			}
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				for _, a := range tc.want {
					if !slices.Contains(c.Args, a) {
						t.Errorf("container %s: args %v lack %s", c.Name, c.Args, a)
					}
				}
				if mt := mountOf(c, "price-book"); (mt != nil) != tc.wantBook || mt != nil && !mt.ReadOnly {
					t.Errorf("container %s: price-book mount %+v, want one read-only: %v", c.Name, mt, tc.wantBook)
				}
				if grid := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--grid") }); grid != tc.grid {
					t.Errorf("container %s: --grid passed %v, want %v", c.Name, grid, tc.grid)
				}
			}
		})
	}
	if _, err := helmTemplate(t, append(slices.Clone(base), "--set", "report.source=opencost")...); err == nil || !strings.Contains(err.Error(), `report.source "opencost": want ledger or dcgm-exporter`) {
		t.Errorf("report.source=opencost: error %v, want one naming the allowed sources", err)
	}
}
