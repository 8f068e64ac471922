//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promLookPath finds a tool the test needs. Without it the test is skipped, or
// fails when the CI environment variable is set.
func promLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found in PATH (needed in CI): %v", name, err)
		}
		t.Skipf("%s not found in PATH: %v", name, err)
	}
	return p
}

// promFreeAddr returns a loopback address with a port that was free a moment ago.
func promFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// promBuildGputally builds ./cmd/gputally of this module into a temporary
// directory and returns the binary's path.
func promBuildGputally(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(t.TempDir(), "gputally")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gputally")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gputally: %v\n%s", err, out)
	}
	return bin
}

// promStartProcess starts name with args, its output in a log file, and stops
// it when the test ends (interrupt, then kill after 10s). On failure the log's
// tail is printed.
func promStartProcess(t *testing.T, name string, args ...string) {
	t.Helper()
	promStartStoppable(t, name, args...)
}

// promStartStoppable is promStartProcess for a process the test may also stop
// itself: stop interrupts it (kill after 10 s) and waits; cleanup calls it
// too, and calls after the first do nothing.
func promStartStoppable(t *testing.T, name string, args ...string) (stop func()) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(func() {
		stop()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s %s log tail:\n%s", filepath.Base(name), strings.Join(args, " "), b)
		}
	})
	return stop
}

// promEventually calls check every interval until it returns true or timeout
// passes; then it fails the test with check's last message.
func promEventually(t *testing.T, timeout, interval time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, msg := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, timeout, msg)
		}
		<-tick.C
	}
}

// promGet fetches base+path and returns the body of a 200 answer.
func promGet(ctx context.Context, base, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// promSample is one series of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

// promVector runs an instant query against the Prometheus at base.
func promVector(ctx context.Context, base, query string) ([]promSample, error) {
	body, err := promGet(ctx, base, "/api/v1/query?query="+url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode query answer: %w", err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", query, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", query, r.Data.ResultType)
	}
	return r.Data.Result, nil
}

// promInstant runs an instant query and returns the number of series.
func promInstant(ctx context.Context, base, query string) (int, error) {
	v, err := promVector(ctx, base, query)
	return len(v), err
}

// promScalar runs an instant query that must return exactly one series and
// returns its value.
func promScalar(ctx context.Context, base, query string) (float64, error) {
	v, err := promVector(ctx, base, query)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("query %q: %d series, want 1", query, len(v))
	}
	s, ok := v[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("query %q: value %v is not a string", query, v[0].Value[1])
	}
	return strconv.ParseFloat(s, 64)
}

// promAlert is an alert of /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

// promAlerts returns the pending and firing alerts of the Prometheus at base.
func promAlerts(ctx context.Context, base string) ([]promAlert, error) {
	body, err := promGet(ctx, base, "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode alerts: %w", err)
	}
	return r.Data.Alerts, nil
}

// promBackfilled backfills the OpenMetrics file om into a new Prometheus data
// directory under dir (promtool tsdb create-blocks-from openmetrics), serves
// it with prometheus and returns its base URL once it is ready.
func promBackfilled(t *testing.T, promtool, prometheus, om, dir string) string {
	t.Helper()
	return promBackfilledFiles(t, promtool, prometheus, dir, om)
}

// promBackfilledFiles is promBackfilled of several OpenMetrics files, each
// backfilled in turn into the same data directory.
func promBackfilledFiles(t *testing.T, promtool, prometheus, dir string, oms ...string) string {
	t.Helper()
	return promBackfilledBlocks(t, promtool, prometheus, dir, "", oms...)
}

// promBackfilledBlocks is promBackfilledFiles with blocks of at most maxBlock
// (promtool's --max-block-duration; "": its default of 2h). Day-long blocks
// backfill a day about four times faster.
func promBackfilledBlocks(t *testing.T, promtool, prometheus, dir, maxBlock string, oms ...string) string {
	t.Helper()
	return promBackfilledKept(t, promtool, prometheus, dir, maxBlock, "100y", oms...)
}

// promBackfilledKept is promBackfilledBlocks with Prometheus keeping what
// its retention (--storage.tsdb.retention.time) keeps; "": its default, 15
// days before the newest block's end.
func promBackfilledKept(t *testing.T, promtool, prometheus, dir, maxBlock, retention string, oms ...string) string {
	t.Helper()
	data := filepath.Join(dir, "prometheus")
	for _, om := range oms {
		args := []string{"tsdb", "create-blocks-from", "openmetrics"}
		if maxBlock != "" {
			args = append(args, "--max-block-duration="+maxBlock)
		}
		runTool(t, promtool, append(args, om, data)...)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := promFreeAddr(t)
	args := []string{"--config.file=" + config, "--storage.tsdb.path=" + data, "--web.listen-address=" + addr}
	if retention != "" {
		args = append(args, "--storage.tsdb.retention.time="+retention)
	}
	promStartProcess(t, prometheus, args...)
	base := "http://" + addr
	promEventually(t, 5*time.Minute, 250*time.Millisecond, "prometheus ready", func() (bool, string) {
		_, err := promGet(t.Context(), base, "/-/ready")
		return err == nil, fmt.Sprint(err)
	})
	return base
}

// vmStarted starts victoria (VictoriaMetrics) with its data under dir and
// returns its base URL once it is ready; vmImport fills it.
func vmStarted(t *testing.T, victoria, dir string) string {
	t.Helper()
	addr := promFreeAddr(t)
	promStartProcess(t, victoria, "-storageDataPath="+filepath.Join(dir, "victoria-metrics"), "-httpListenAddr="+addr,
		"-retentionPeriod=100y", "-search.disableCache")
	base := "http://" + addr
	promEventually(t, 2*time.Minute, 250*time.Millisecond, "victoria-metrics ready", func() (bool, string) {
		_, err := promGet(t.Context(), base, "/health")
		return err == nil, fmt.Sprint(err)
	})
	return base
}
