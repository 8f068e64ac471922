package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/team"
)

// TestGenerateRulesFromFlags holds `generate rules` to alerts.Generate with the
// options its flags name: the team map and budgets files, the team label and
// the runbooks' URL.
func TestGenerateRulesFromFlags(t *testing.T) {
	const (
		teams   = "../../alerts/testdata/teams.yaml"
		budgets = "../../alerts/testdata/budgets.yaml"
	)
	out := filepath.Join(t.TempDir(), "rules.yaml")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"generate", "rules", "--out=" + out, "--team-map=" + teams, "--team-label=app.kubernetes.io/team",
		"--budgets.file=" + budgets, "--runbook.base-url=https://wiki.example.com/runbooks"}, &stdout, &stderr, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	opts := alerts.DefaultOptions()
	opts.TeamLabel = "app.kubernetes.io/team"
	opts.RunbookBaseURL = "https://wiki.example.com/runbooks"
	if opts.Teams, err = team.LoadMap(teams); err != nil {
		t.Fatal(err)
	}
	if opts.Budgets, err = alerts.LoadBudgets(budgets); err != nil {
		t.Fatal(err)
	}
	want, err := alerts.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generate rules wrote\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{`team: ml-research`, `namespace: sandbox`, `label_app_kubernetes_io_team`, `https://wiki.example.com/runbooks/GPUBudgetSpent.md`} {
		if !bytes.Contains(got, []byte(s)) {
			t.Errorf("rules lack %q", s)
		}
	}
}

// TestGenerateReadsNames: generate's --collector.dcgm-exporter-names picks the
// names the rules and dashboards read: the committed 4.8 files for 4.8, and
// for transition rules that read both (the new names, or the old with the
// driver label ignored); an unknown value is bad input.
func TestGenerateReadsNames(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"generate", "rules", "--out=" + rules, "--collector.dcgm-exporter-names=4.8"},
		{"generate", "dashboards", "--out=" + dir, "--collector.dcgm-exporter-names=4.8"},
	} {
		if code := run(t.Context(), args, &stdout, &stderr, nil); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	for got, want := range map[string]string{rules: "../../alerts/generated/4.8/gputally-rules.yaml", filepath.Join(dir, "node-gpu.json"): "../../dashboards/generated/4.8/node-gpu.json"} {
		a, errA := os.ReadFile(got)
		b, errB := os.ReadFile(want)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v, %v)", got, want, errA, errB)
		}
	}
	if code := run(t.Context(), []string{"generate", "rules", "--out=" + rules, "--collector.dcgm-exporter-names=transition"}, &stdout, &stderr, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"DCGM_FI_DEV_GPU_TEMP_CELSIUS or ignoring(DCGM_FI_DRIVER_VERSION, DCGM_FI_SYSTEM_DRIVER_VERSION) DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL / 100"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("transition rules lack %q", s)
		}
	}
	checkBadInput(t, nil, []string{"generate", "rules", "--collector.dcgm-exporter-names=4.9"}, "--collector.dcgm-exporter-names", `"4.9"`)
}
