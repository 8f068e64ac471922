package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gputally/gputally/cost"
)

// TestBadInputExits2 holds the bad flags and files found when the exporter was
// tried as a careless operator would (issue 14): each exits 2 at once with one
// message naming the flag or file, never a panic, a hang or an OOM kill.
func TestBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "book.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hugeBook := write("huge.yaml", make([]byte, cost.MaxBookBytes+1))
	hugeScenario := write("huge-scenario.yaml", []byte(strings.Repeat("# padding\n", 500_000))) // 5 MB
	badWebConfig := write("web.yml", []byte("basic_auth_users:\n  alice: not-a-bcrypt-hash\n"))
	unknownWebKey := write("web2.yml", []byte("tls_server_confg: {}\n"))
	badBudgets := write("budgets.yaml", []byte("teams:\n  ml: {monthly_eur: 100}\n  web: {monthly_eur: -100}\n"))
	sim := []string{"exporter", "--backend=sim"}
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the message
	}{
		{"telemetry path without slash", append(sim, "--web.telemetry-path=metrics"), []string{"--web.telemetry-path", `"metrics"`}},
		{"empty telemetry path", append(sim, "--web.telemetry-path="), []string{"--web.telemetry-path", `""`}},
		{"telemetry path on health", append(sim, "--web.telemetry-path=/-/healthy"), []string{"--web.telemetry-path", "/-/"}},
		{"telemetry path with space", append(sim, "--web.telemetry-path=/a b"), []string{"--web.telemetry-path", `"/a b"`}},
		{"telemetry path with pattern", append(sim, "--web.telemetry-path=/{x}"), []string{"--web.telemetry-path"}},
		{"telemetry path not clean", append(sim, "--web.telemetry-path=/a/../metrics"), []string{"--web.telemetry-path", "clean"}},
		{"telemetry path of two slashes", append(sim, "--web.telemetry-path=//"), []string{"--web.telemetry-path", "clean"}},
		{"hostname not UTF-8", append(sim, "--hostname=node-\xff"), []string{"--hostname", "UTF-8"}},
		{"negative max requests", append(sim, "--web.max-requests=-1"), []string{"--web.max-requests"}},
		{"bad web config", append(sim, "--web.config.file="+badWebConfig), []string{"--web.config.file", badWebConfig}},
		{"unknown web config key", append(sim, "--web.config.file="+unknownWebKey), []string{"--web.config.file", unknownWebKey}},
		{"missing web config", append(sim, "--web.config.file="+filepath.Join(dir, "none.yml")), []string{"--web.config.file", "none.yml"}},
		{"web config is a device", append(sim, "--web.config.file=/dev/zero"), []string{"--web.config.file", "/dev/zero", "not a regular file"}},
		{"bad listen address", []string{"exporter", "--backend=sim", "--web.listen-address=no-port"}, []string{"--web.listen-address", "no-port"}},
		{"check-config on /dev/zero", []string{"check-config", "/dev/zero"}, []string{"/dev/zero", "not a regular file"}},
		{"check-config on a FIFO", []string{"check-config", fifo}, []string{fifo, "a FIFO"}},
		{"check-config on a huge file", []string{"check-config", hugeBook}, []string{hugeBook, "too large"}},
		{"price book on a FIFO", append(sim, "--cost.price-book="+fifo), []string{fifo, "a FIFO"}},
		{"scenario on /dev/zero", append(sim, "--sim.scenario=/dev/zero"), []string{"/dev/zero", "not a regular file"}},
		{"huge scenario", append(sim, "--sim.scenario="+hugeScenario), []string{hugeScenario, "too large"}},
		{"budgets on a FIFO", []string{"generate", "rules", "--budgets.file=" + fifo}, []string{"--budgets.file", fifo, "a FIFO"}},
		{"bad budget", []string{"generate", "rules", "--budgets.file=" + badBudgets}, []string{"--budgets.file", badBudgets, "line 3", "teams.web"}},
		{"team map on /dev/zero", []string{"generate", "rules", "--team-map=/dev/zero"}, []string{"--team-map", "/dev/zero", "not a regular file"}},
		{"relative runbook URL", []string{"generate", "rules", "--runbook.base-url=docs/runbooks"}, []string{"RunbookBaseURL", "docs/runbooks"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBadInput(t, nil, tc.args, tc.want...) })
	}
}

// checkBadInput runs the binary with args (env nil: this process's) and fails
// t unless it exits 2 within a minute with one clear error, no stack trace,
// naming every want. Generous: the machine running the tests may be loaded; a
// hang (a FIFO, /dev/zero) would last forever, not a minute.
func checkBadInput(t *testing.T, env, args []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("still running after a minute: a hang, not an error\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit code %d (%v), want 2; output:\n%s", code, err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("message lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "goroutine ") || countLines(out) > 3 {
		t.Errorf("want one clear error, got %d lines:\n%s", countLines(out), out)
	}
}
