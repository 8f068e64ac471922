//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// mimirGateway is what a Mimir- or Cortex-style gateway does to a client that
// no packaged engine here plays: it serves the Prometheus API under
// /prometheus, answers 401 to a request without the tenant header, refuses
// range queries of more than maxPoints points per series with Mimir's error,
// and can add warnings to its answers.
type mimirGateway struct {
	backend   *url.URL
	tenant    string
	maxPoints atomic.Int64
	warning   atomic.Pointer[string]
	requests  atomic.Int64
}

func (g *mimirGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	if r.Header.Get("X-Scope-OrgID") != g.tenant {
		http.Error(w, "no org id", http.StatusUnauthorized)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/prometheus/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if path == "api/v1/query_range" {
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		if points := int64(math.Floor((end-start)/step)) + 1; points > g.maxPoints.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)"}`, g.maxPoints.Load())
			return
		}
	}
	resp, err := http.PostForm(g.backend.JoinPath(path).String(), r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if warning := g.warning.Load(); warning != nil && resp.StatusCode == http.StatusOK {
		var env map[string]any
		if json.Unmarshal(answer, &env) == nil {
			env["warnings"] = []string{*warning}
			answer, _ = json.Marshal(env)
		}
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// TestReportThroughMimirStyleGateway: the report reaches a Prometheus behind a
// Mimir-style gateway with the tenant header from an HTTP client config file
// and the /prometheus prefix, and gives the EUR it gives straight from
// Prometheus; without the header it fails with the gateway's 401; a limit
// under its request size fails naming the flag that splits the work, which
// then passes; a warning of the gateway makes the report partial.
func TestReportThroughMimirStyleGateway(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	om, summary := filepath.Join(dir, "history.om"), filepath.Join(dir, "summary.json")
	runTool(t, gputally, "simulate", "history", "--duration=12h", "--scrape-interval=30s",
		"--start="+start.Format(time.RFC3339), "--out="+om, "--summary="+summary)
	var sum reportSummary
	readJSON(t, summary, &sum)
	ledger := sum.totalEUR()
	prom := promBackfilled(t, promtool, prometheus, om, dir)
	backend, err := url.Parse(prom)
	if err != nil {
		t.Fatal(err)
	}
	gw := &mimirGateway{backend: backend, tenant: "team-gpu"}
	gw.maxPoints.Store(11_000)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)

	httpConfig := filepath.Join(dir, "http.yml")
	if err := os.WriteFile(httpConfig, []byte("http_headers:\n  X-Scope-OrgID:\n    values: [team-gpu]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	report := func(t *testing.T, name, base string, extra ...string) (faultsReport, string, error) {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		args := append([]string{"report", "--prometheus.url=" + base, "--range=12h", "--end=" + start.Add(12*time.Hour).Format(time.RFC3339),
			"--format=json", "--out=" + out}, extra...)
		b, err := exec.Command(gputally, args...).CombinedOutput()
		var r faultsReport
		if err == nil {
			readJSON(t, out, &r)
		}
		return r, string(b), err
	}
	direct, log, err := report(t, "direct", prom)
	if err != nil {
		t.Fatalf("report straight from Prometheus: %v\n%s", err, log)
	}
	if got := direct.Fleet.Totals.CostEUR; math.Abs(got-ledger) > 1e-3*ledger {
		t.Fatalf("straight from Prometheus %.4f EUR, the ledger counted %.4f", got, ledger)
	}

	t.Run("tenant and prefix", func(t *testing.T) {
		r, log, err := report(t, "gateway", srv.URL+"/prometheus", "--prometheus.http-config.file="+httpConfig)
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		if r.Fleet.Totals.CostEUR != direct.Fleet.Totals.CostEUR || len(r.Namespaces) != len(direct.Namespaces) {
			t.Errorf("through the gateway %.6f EUR in %d namespaces, straight %.6f in %d",
				r.Fleet.Totals.CostEUR, len(r.Namespaces), direct.Fleet.Totals.CostEUR, len(direct.Namespaces))
		}
	})
	t.Run("no tenant", func(t *testing.T) {
		_, log, err := report(t, "no-tenant", srv.URL+"/prometheus")
		if err == nil || !strings.Contains(log, "HTTP 401") || !strings.Contains(log, "no org id") {
			t.Errorf("without the header: %v\n%s\nwant the gateway's 401", err, log)
		}
	})
	t.Run("points limit", func(t *testing.T) {
		gw.maxPoints.Store(10)
		defer gw.maxPoints.Store(11_000)
		_, log, err := report(t, "limited", srv.URL+"/prometheus", "--prometheus.http-config.file="+httpConfig)
		if err == nil || !strings.Contains(log, "exceeded maximum resolution of 10 points") || !strings.Contains(log, "--query.max-points") {
			t.Fatalf("over the gateway's limit: %v\n%s\nwant its error and the flag that splits the work", err, log)
		}
		r, log, err := report(t, "split", srv.URL+"/prometheus", "--prometheus.http-config.file="+httpConfig, "--query.max-points=10")
		if err != nil {
			t.Fatalf("with --query.max-points=10: %v\n%s", err, log)
		}
		if math.Abs(r.Fleet.Totals.CostEUR-direct.Fleet.Totals.CostEUR) > 1e-9*direct.Fleet.Totals.CostEUR {
			t.Errorf("in requests of 10 points %.6f EUR, straight %.6f", r.Fleet.Totals.CostEUR, direct.Fleet.Totals.CostEUR)
		}
	})
	t.Run("warnings", func(t *testing.T) {
		words := "some store-gateways were not reached"
		gw.warning.Store(&words)
		defer gw.warning.Store(nil)
		if _, log, err := report(t, "warned", srv.URL+"/prometheus", "--prometheus.http-config.file="+httpConfig); err == nil || !strings.Contains(log, words) {
			t.Errorf("a warned answer: %v\n%s\nwant a failure with the engine's words", err, log)
		}
		r, log, err := report(t, "warned-partial", srv.URL+"/prometheus", "--prometheus.http-config.file="+httpConfig, "--allow-partial")
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		if !r.Partial || !bytes.Contains([]byte(strings.Join(r.Warnings, "\n")), []byte(words)) {
			t.Errorf("partial %v, warnings %q: want a partial report naming the engine's words", r.Partial, r.Warnings)
		}
	})
}
