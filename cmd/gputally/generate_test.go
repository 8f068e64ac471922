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
