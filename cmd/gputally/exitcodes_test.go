package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExitCodeTable holds report, simulate history, generate and check-config to
// the one table of exit codes (README): 0 success, 1 a runtime failure (the
// engine, the network, the data it answered, a write that fails), 2 bad flags
// or files — found before the work starts, naming the flag or the file.
func TestExitCodeTable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "file")
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// An engine that refuses every query, and one that answers a ledger
	// counter with NaN.
	rejecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"parse error at char 1"}`)
	}))
	defer rejecting.Close()
	nan := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-0","state":"busy"},"values":[[1767571200,"NaN"]]}]}}`)
	}))
	defer nan.Close()
	report := func(args ...string) []string {
		return append([]string{"report", "--range=1h", "--end=2026-01-05T00:00:00Z", "--format=json", "--out=" + filepath.Join(dir, "report.json")}, args...)
	}
	book := filepath.Join("..", "..", "testdata", "prices", "fleet.yaml")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in the output
	}{
		{"report demo", []string{"report", "--demo", "--range=1h", "--format=json", "--out=" + filepath.Join(dir, "demo.json")}, 0, nil},
		{"report: the engine rejects the queries", report("--prometheus.url=" + rejecting.URL), 1, []string{"HTTP 400, bad_data: parse error at char 1"}},
		{"report: the engine answers NaN", report("--prometheus.url=" + nan.URL), 1, []string{"NaN", `UUID="GPU-0"`, "2026-01-05T00:00:00Z", "never writes NaN"}},
		{"report: --range not a duration", []string{"report", "--prometheus.url=" + nan.URL, "--range=abc", "--out=-"}, 2, []string{"--range", `"abc"`}},
		{"report: --prometheus.url not a URL", report("--prometheus.url=ftp://engine"), 2, []string{`prometheus url "ftp://engine"`}},
		{"report: --prometheus.http-config.file missing", report("--prometheus.url="+nan.URL, "--prometheus.http-config.file="+missing), 2, []string{missing}},
		{"report: --team-map missing", report("--prometheus.url="+nan.URL, "--team-map="+missing), 2, []string{missing}},
		{"report: --webhook.url-file missing", report("--prometheus.url="+nan.URL, "--webhook.url-file="+missing), 2, []string{"webhook: read url file", missing}},
		{"report: --out in a missing directory", []string{"report", "--prometheus.url=" + nan.URL, "--out=" + missing}, 2, []string{"write report", "no-such-dir"}},
		{"simulate history", []string{"simulate", "history", "--duration=2m", "--out=" + filepath.Join(dir, "h.om")}, 0, nil},
		{"simulate history: a write that fails", []string{"simulate", "history", "--duration=2m", "--out=/dev/full"}, 1, []string{"no space left on device"}},
		{"simulate history: --out in a missing directory", []string{"simulate", "history", "--duration=2m", "--out=" + missing}, 2, []string{"--out", missing}},
		{"simulate history: --summary in a missing directory", []string{"simulate", "history", "--duration=2m", "--out=" + filepath.Join(dir, "h2.om"), "--summary=" + missing}, 2, []string{"--summary", missing}},
		{"simulate history: --duration not a duration", []string{"simulate", "history", "--duration=abc"}, 2, []string{"--duration", `"abc"`}},
		{"generate rules", []string{"generate", "rules", "--out=" + filepath.Join(dir, "rules.yaml")}, 0, nil},
		{"generate rules: a write that fails", []string{"generate", "rules", "--out=/dev/full"}, 1, []string{"write rules", "no space left on device"}},
		{"generate rules: --out in a missing directory", []string{"generate", "rules", "--out=" + missing}, 2, []string{"--out", missing}},
		{"generate dashboards", []string{"generate", "dashboards", "--out=" + filepath.Join(dir, "dashboards")}, 0, nil},
		{"generate dashboards: --out under a file", []string{"generate", "dashboards", "--out=" + filepath.Join(aFile, "dashboards")}, 2, []string{"--out", "not a directory"}},
		{"check-config", []string{"check-config", book}, 0, nil},
		{"check-config: a missing file", []string{"check-config", missing}, 2, []string{missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, tc.args...)
			out, _ := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("still running after 2 minutes:\n%s", out)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); !os.IsNotExist(err) {
		t.Errorf("a failed report left its file behind (stat: %v)", err)
	}
}
