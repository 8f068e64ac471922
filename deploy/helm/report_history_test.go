package helm_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestReportHistory: with report.history.keep every report run follows up
// the newest earlier report on the volume (--baseline=/reports: the image
// has no shell, the binary finds it), the JSON is written even when the
// formats do not name it, and the JSON run alone deletes all but keep
// reports; with 0 no run reads or deletes a report.
func TestReportHistory(t *testing.T) {
	base := []string{"--set", "report.enabled=true", "--set", "report.prometheusURL=http://prometheus:9090"}
	for _, tc := range []struct {
		name    string
		args    []string
		formats []string
		keep    string // --baseline.keep of the json run; "" none
	}{
		{"default", nil, []string{"html", "json", "md"}, "12"},
		{"json named", []string{"--set-json", `report.formats=["json","md"]`, "--set", "report.history.keep=4"}, []string{"json", "md"}, "4"},
		{"off", []string{"--set", "report.history.keep=0"}, []string{"html", "md"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, append(slices.Clone(base), tc.args...)...)
			var cj batchv1.CronJob
			decodeOne(t, m, "CronJob", &cj)
			pod := cj.Spec.JobTemplate.Spec.Template.Spec
			formats := map[string]corev1.Container{}
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				for _, a := range c.Args {
					if f, ok := strings.CutPrefix(a, "--format="); ok {
						formats[f] = c
					}
				}
			}
			if got := slices.Sorted(maps.Keys(formats)); !slices.Equal(got, tc.formats) {
				t.Fatalf("formats %v, want %v", got, tc.formats)
			}
			for f, c := range formats {
				follows := slices.Contains(c.Args, "--baseline=/reports")
				var keep []string
				for _, a := range c.Args {
					if k, ok := strings.CutPrefix(a, "--baseline.keep="); ok {
						keep = append(keep, k)
					}
				}
				wantKeep := []string(nil)
				if f == "json" && tc.keep != "" {
					wantKeep = []string{tc.keep}
				}
				if follows != (tc.keep != "") || !slices.Equal(keep, wantKeep) {
					t.Errorf("%s run: follows up %v, keeps %v; want %v and %v (args %v)", f, follows, keep, tc.keep != "", wantKeep, c.Args)
				}
			}
		})
	}
}
