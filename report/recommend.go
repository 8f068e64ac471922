package report

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/report/model"
)

// recommend fills r.Recommendations, r.Packing, r.Apply and the headline
// (docs/report.md): drain, release, time-slicing and MIG, in that order, each
// among the holdings and GPUs no earlier recommendation covers.
func (a *adviser) recommend(r *Report, d *model.Dataset) {
	r.HoursPerMonth = model.HoursPerMonth
	p := newPlan(r, d)
	a.drainNodes(r, p)
	a.releaseIdle(r, p)
	ts := a.timeSlicing(r, p)
	layouts := a.migSizing(r, p)
	slices.SortStableFunc(r.Recommendations, func(x, y Recommendation) int {
		return cmp.Or(cmp.Compare(y.FreedEURPerMonth, x.FreedEURPerMonth), cmp.Compare(y.ReclaimableEURPerMonth, x.ReclaimableEURPerMonth),
			cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Target, y.Target))
	})
	for _, rec := range r.Recommendations {
		r.FreedEURPerMonth += rec.FreedEURPerMonth
		r.ReclaimableEURPerMonth += rec.ReclaimableEURPerMonth
	}
	r.Apply.MIGParted, r.Apply.MIGPartedLabels = migPartedConfig(p, layouts)
	r.Apply.TimeSlicing, r.Apply.TimeSlicingLabels, r.Apply.TimeSlicingSharing = timeSlicingConfig(r, p, ts)
	r.Apply.Kueue = kueueYAML(a.quotas(d), a.headroom, d.Step)
}

// dnsName turns s into a DNS-1123 label.
func dnsName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	if len(out) > 63 {
		out = strings.Trim(out[:63], "-")
	}
	if out == "" {
		out = "x"
	}
	return out
}

func mustYAML(v any) string {
	var sb strings.Builder
	enc := yaml.NewEncoder(&sb)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		// The values are built here from plain types; encoding cannot fail.
		panic(fmt.Sprintf("encode yaml: %v", err))
	}
	return sb.String()
}

// Files WriteApply writes.
const (
	ApplyMIGPartedFile   = "mig-parted.yaml"
	ApplyTimeSlicingFile = "device-plugin-time-slicing.yaml"
	ApplyKueueFile       = "kueue.yaml"
	ApplyLabelsFile      = "label-nodes.sh"
)

// WriteApply writes the configuration of a into dir (created if missing): the
// mig-parted config, the device plugin ConfigMap and the Kueue objects as
// YAML files, and the node label commands as a shell script; files with
// nothing to apply are not written.
func WriteApply(dir string, a *Apply) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	var labels strings.Builder
	if len(a.MIGPartedLabels)+len(a.TimeSlicingLabels) > 0 {
		labels.WriteString("#!/bin/sh\n# Node labels that select the configuration gputally's report wrote next to this file.\nset -e\n")
		for _, s := range a.TimeSlicingSharing {
			labels.WriteString("# warning: " + s + "\n")
		}
		for _, l := range append(slices.Clone(a.MIGPartedLabels), a.TimeSlicingLabels...) {
			labels.WriteString(l + "\n")
		}
	}
	for _, f := range []struct {
		name, text string
		perm       os.FileMode
	}{
		{ApplyMIGPartedFile, a.MIGParted, 0o644},
		{ApplyTimeSlicingFile, a.TimeSlicing, 0o644},
		{ApplyKueueFile, a.Kueue, 0o644},
		{ApplyLabelsFile, labels.String(), 0o755},
	} {
		if f.text == "" {
			continue
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.text), f.perm); err != nil {
			return fmt.Errorf("write configuration %s: %w", path, err)
		}
	}
	return nil
}
