//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

// thanosBinary returns the thanos binary: $GPUTALLY_THANOS_BIN, or what
// tools/build-thanos.sh prints (it builds and caches the pinned version, at
// once when cached). Without it the test is skipped, or fails when the CI
// environment variable is set (.ci/run builds it).
func thanosBinary(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format+" (needed in CI)", args...)
		}
		t.Skipf(format, args...)
	}
	bin := os.Getenv("GPUTALLY_THANOS_BIN")
	if bin == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			t.Fatalf("go env GOMOD: %v", err)
		}
		script := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "tools", "build-thanos.sh")
		cmd := exec.Command("bash", script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		printed, err := cmd.Output()
		if err != nil {
			missing("no thanos: bash tools/build-thanos.sh: %v\n%s(or set GPUTALLY_THANOS_BIN)", err, stderr.String())
		}
		lines := strings.Fields(string(printed))
		if len(lines) == 0 {
			missing("no thanos: tools/build-thanos.sh printed no path")
		}
		bin = lines[len(lines)-1]
	}
	if _, err := os.Stat(bin); err != nil {
		missing("no thanos at %s: %v (run bash tools/build-thanos.sh or set GPUTALLY_THANOS_BIN)", bin, err)
	}
	return bin
}

// thanosReady waits until base+path answers 200.
func thanosReady(t *testing.T, what, base, path string) {
	t.Helper()
	promEventually(t, 2*time.Minute, 250*time.Millisecond, what+" ready", func() (bool, string) {
		_, err := promGet(t.Context(), base, path)
		return err == nil, fmt.Sprint(err)
	})
}

// thanosStore is a Prometheus serving a copy of some backfilled blocks, with
// its external labels, and a Thanos sidecar in front of it.
type thanosStore struct {
	grpc        string // the sidecar's StoreAPI address
	stopSidecar func()
}

// thanosStoreOf copies blocks into dir/name, serves them with prometheus
// (external label prometheus_replica=replica; local compaction off, as
// Thanos asks of a sidecar's Prometheus) and starts a sidecar on it.
func thanosStoreOf(t *testing.T, prometheus, thanos, dir, name, replica string, blocks []string) thanosStore {
	t.Helper()
	data := filepath.Join(dir, name, "data")
	for _, b := range blocks {
		if err := os.CopyFS(filepath.Join(data, filepath.Base(b)), os.DirFS(b)); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, name, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global:\n  external_labels:\n    prometheus_replica: "+replica+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := promFreeAddr(t)
	promStartProcess(t, prometheus, "--config.file="+config, "--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=100y", "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h",
		"--web.listen-address="+promAddr)
	thanosReady(t, "prometheus "+name, "http://"+promAddr, "/-/ready")
	grpcAddr, httpAddr := promFreeAddr(t), promFreeAddr(t)
	stop := promStartStoppable(t, thanos, "sidecar", "--prometheus.url=http://"+promAddr, "--tsdb.path="+data,
		"--grpc-address="+grpcAddr, "--http-address="+httpAddr, "--grpc-grace-period=0s", "--http-grace-period=0s")
	thanosReady(t, "sidecar "+name, "http://"+httpAddr, "/-/ready")
	return thanosStore{grpc: grpcAddr, stopSidecar: stop}
}

// thanosEndpoints is the --endpoint.sd-config of a querier over addrs.
func thanosEndpoints(strict bool, addrs ...string) string {
	var items []string
	for _, a := range addrs {
		items = append(items, fmt.Sprintf("{address: %q, strict: %t}", a, strict))
	}
	return "{endpoints: [" + strings.Join(items, ", ") + "]}"
}

// thanosStores reads a querier's /api/v1/stores: the last health-check error
// of each store it knows ("" when healthy), by address.
func thanosStores(ctx context.Context, base string) (map[string]string, error) {
	body, err := promGet(ctx, base, "/api/v1/stores")
	if err != nil {
		return nil, err
	}
	var r struct {
		Data map[string][]struct {
			Name      string  `json:"name"`
			LastError *string `json:"lastError"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	stores := map[string]string{}
	for _, list := range r.Data {
		for _, s := range list {
			stores[s.Name] = ""
			if s.LastError != nil {
				stores[s.Name] = *s.LastError
			}
		}
	}
	return stores, nil
}

// thanosQuerier starts a querier (its HTTP API at the returned base URL,
// under prefix when not empty) with the endpoint config and extra flags, and
// waits until its health checks passed for every address of want.
func thanosQuerier(t *testing.T, thanos, prefix, endpoints string, want []string, extra ...string) string {
	t.Helper()
	httpAddr, grpcAddr := promFreeAddr(t), promFreeAddr(t)
	args := append([]string{"query", "--http-address=" + httpAddr, "--grpc-address=" + grpcAddr,
		"--grpc-grace-period=0s", "--http-grace-period=0s", "--endpoint.sd-config=" + endpoints}, extra...)
	if prefix != "" {
		args = append(args, "--web.route-prefix="+prefix)
	}
	promStartProcess(t, thanos, args...)
	base := "http://" + httpAddr + prefix
	promEventually(t, 2*time.Minute, 250*time.Millisecond, "querier over "+strings.Join(want, ", "), func() (bool, string) {
		stores, err := thanosStores(t.Context(), base)
		if err != nil {
			return false, err.Error()
		}
		for _, w := range want {
			if e, ok := stores[w]; !ok || e != "" {
				return false, fmt.Sprintf("stores %v", stores)
			}
		}
		return true, ""
	})
	return base
}

// thanosFrontend starts a query-frontend over downstream with the split
// interval and returns its base URL.
func thanosFrontend(t *testing.T, thanos, downstream, split string) string {
	t.Helper()
	addr := promFreeAddr(t)
	promStartProcess(t, thanos, "query-frontend", "--http-address="+addr, "--http-grace-period=0s",
		"--query-frontend.downstream-url="+downstream, "--query-range.split-interval="+split)
	base := "http://" + addr
	thanosReady(t, "query-frontend", base, "/-/ready")
	return base
}

// thanosMetric is the value of the sample line of a /metrics page that
// starts with series (name and labels as written).
func thanosMetric(t *testing.T, base, series string) float64 {
	t.Helper()
	body, err := promGet(t.Context(), base, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	t.Fatalf("%s/metrics has no %s", base, series)
	return 0
}

// thanosAnswer is what a querier answers a range query asked as the report
// asks it (POST, partial_response=false), in short: its HTTP status, status,
// warnings, and the times of the points of its series.
type thanosAnswer struct {
	code     int
	Status   string   `json:"status"`
	Error    string   `json:"error"`
	Warnings []string `json:"warnings"`
	Data     struct {
		Result []struct {
			Values [][2]any `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

func thanosQueryRange(t *testing.T, base, query string, start, end time.Time, step time.Duration) thanosAnswer {
	t.Helper()
	form := url.Values{
		"query": {query}, "start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)},
		"step": {strconv.Itoa(int(step.Seconds()))}, "partial_response": {"false"}, "max_source_resolution": {"0s"},
	}
	resp, err := http.PostForm(base+"/api/v1/query_range", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := thanosAnswer{code: resp.StatusCode}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return a
}

// last is the time of the newest point of the answer.
func (a thanosAnswer) last() time.Time {
	var newest float64
	for _, s := range a.Data.Result {
		for _, v := range s.Values {
			if f, ok := v[0].(float64); ok && f > newest {
				newest = f
			}
		}
	}
	return time.Unix(int64(newest), 0).UTC()
}

// TestReportThroughThanos proves the report against a real Thanos (v0.40.1,
// built by tools/build-thanos.sh) on loopback. One simulated day of the
// short-jobs scenario is backfilled once, and its blocks are served by four
// Prometheus servers (Debian's 2.42), each with a Thanos sidecar:
//
//   - a and b, an HA pair: the whole day each, external label
//     prometheus_replica a and b;
//   - am and pm: the day's blocks before and from 12:00, both labelled
//     prometheus_replica=a, as a sidecar and a store gateway serve one
//     Prometheus' recent and older data.
//
// Over them: a querier with --query.replica-label=prometheus_replica, two
// query-frontends in front of it (split by 24 h, Thanos' default, and by
// 2 h), a querier over the pair without the replica label, and two queriers
// over am and pm (the endpoints not strict, as --endpoint makes them, and
// strict; the strict one under the route prefix /thanos). The cases:
//
//   - through the deduplicating querier and both frontends the report gives
//     the ledger's own EUR (fleet and per namespace) within 0.1 %; its
//     requests lie within UTC days, so the 24 h frontend passes them whole,
//     and the 2 h one cuts them up without changing a cent (1e-9);
//   - without the replica label the report must give the same (skipped until
//     the report deduplicates HA pairs itself: today it gives 2.000×);
//   - with pm's sidecar stopped, the report over am and pm is never silently
//     the half: the not-strict querier drops the store at its next health
//     check and answers without a word, and the report fails for its
//     coverage (the GPUs have no data from 12:00); the strict querier answers
//     200 with a warning despite partial_response=false, and the report fails
//     too; with --allow-partial both are marked partial, the strict one
//     quoting Thanos' words;
//   - with b's sidecar stopped the deduplicating querier still gives the
//     ledger's EUR, not partial.
//
// It takes about 75 s on 2 shared cores: 30 s to build gputally, simulate,
// backfill (one promtool run, about 15 s) and start the 14 processes; 12
// reports of 1 to 4.5 s; up to 10 s for a querier's health check to see each
// stopped sidecar fail. The thanos build comes before (cached by
// tools/build-thanos.sh; about 3 minutes the first time).
func TestReportThroughThanos(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	needScenario(t, shortJobsScenario)
	thanos := thanosBinary(t)
	began := time.Now()
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	noon, end := start.Add(12*time.Hour), start.Add(24*time.Hour)

	om, summary := filepath.Join(dir, "history.om"), filepath.Join(dir, "summary.json")
	runTool(t, gputally, "simulate", "history", "--scenario="+shortJobsScenario, "--duration=24h", "--scrape-interval=30s",
		"--start="+start.Format(time.RFC3339), "--out="+om, "--summary="+summary)
	var sum reportSummary
	readJSON(t, summary, &sum)
	var ledger float64
	ledgerNS := map[string]float64{}
	for _, s := range sum.Series {
		ledger += s.EUR
		ledgerNS[s.Namespace] += s.EUR
	}

	// One backfill; its 2 h blocks split at noon for am and pm.
	backfill := filepath.Join(dir, "backfill")
	runTool(t, promtool, "tsdb", "create-blocks-from", "openmetrics", om, backfill)
	entries, err := os.ReadDir(backfill)
	if err != nil {
		t.Fatal(err)
	}
	var all, morning, afternoon []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b := filepath.Join(backfill, e.Name())
		var meta struct {
			MinTime int64 `json:"minTime"`
		}
		readJSON(t, filepath.Join(b, "meta.json"), &meta)
		all = append(all, b)
		if meta.MinTime < noon.UnixMilli() {
			morning = append(morning, b)
		} else {
			afternoon = append(afternoon, b)
		}
	}
	if len(morning) == 0 || len(afternoon) == 0 {
		t.Fatalf("blocks %v: want some before and some after noon", all)
	}
	a := thanosStoreOf(t, prometheus, thanos, dir, "a", "a", all)
	b := thanosStoreOf(t, prometheus, thanos, dir, "b", "b", all)
	am := thanosStoreOf(t, prometheus, thanos, dir, "am", "a", morning)
	pm := thanosStoreOf(t, prometheus, thanos, dir, "pm", "a", afternoon)

	pair := []string{a.grpc, b.grpc}
	dedup := thanosQuerier(t, thanos, "", thanosEndpoints(false, pair...), pair, "--query.replica-label=prometheus_replica")
	frontend := thanosFrontend(t, thanos, dedup, "24h")
	frontend2h := thanosFrontend(t, thanos, dedup, "2h")
	noDedup := thanosQuerier(t, thanos, "", thanosEndpoints(false, pair...), pair)
	halves := []string{am.grpc, pm.grpc}
	loose := thanosQuerier(t, thanos, "", thanosEndpoints(false, halves...), halves)
	strict := thanosQuerier(t, thanos, "/thanos", thanosEndpoints(true, halves...), halves)
	t.Logf("build, simulation, backfill and 14 processes up: %.1f s", time.Since(began).Seconds())

	report := func(t *testing.T, name, base string, extra ...string) (faultsReport, string, error) {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		args := append([]string{"report", "--prometheus.url=" + base, "--range=24h", "--end=" + end.Format(time.RFC3339),
			"--format=json", "--out=" + out}, extra...)
		began := time.Now()
		b, err := exec.Command(gputally, args...).CombinedOutput()
		t.Logf("report %s: %.1f s", name, time.Since(began).Seconds())
		var r faultsReport
		if err == nil {
			readJSON(t, out, &r)
		}
		return r, string(b), err
	}
	// reportOK runs a report that must succeed, not partial.
	reportOK := func(t *testing.T, name, base string) faultsReport {
		t.Helper()
		r, log, err := report(t, name, base)
		if err != nil {
			t.Fatalf("report through %s: %v\n%s", name, err, log)
		}
		if r.Partial || len(r.Warnings) > 0 {
			t.Errorf("report through %s: partial %v, warnings %q", name, r.Partial, r.Warnings)
		}
		return r
	}
	// equalsLedger asserts the fleet's and every namespace's EUR within 0.1 %
	// of the ledger's, and logs the fleet's ratio.
	equalsLedger := func(t *testing.T, name string, r faultsReport) {
		t.Helper()
		got := r.Fleet.Totals.CostEUR
		t.Logf("%s: fleet %.4f EUR = %.4f× the ledger's %.4f", name, got, got/ledger, ledger)
		if math.Abs(got-ledger) > 1e-3*ledger {
			t.Errorf("%s: fleet %.4f EUR, the ledger counted %.4f", name, got, ledger)
		}
		seen := map[string]bool{}
		for _, ns := range r.Namespaces {
			seen[ns.Name] = true
			if want := ledgerNS[ns.Name]; math.Abs(ns.Totals.CostEUR-want) > 1e-3*want+1e-9 {
				t.Errorf("%s: namespace %q %.4f EUR, the ledger counted %.4f", name, ns.Name, ns.Totals.CostEUR, want)
			}
		}
		for ns, eur := range ledgerNS {
			if ns != "" && eur > 0 && !seen[ns] {
				t.Errorf("%s: namespace %q (%.4f EUR in the ledger) is not in the report", name, ns, eur)
			}
		}
		if len(r.Namespaces) < 5 {
			t.Errorf("%s: only %d namespaces: is the day there?", name, len(r.Namespaces))
		}
	}

	t.Run("querier with the replica label", func(t *testing.T) {
		equalsLedger(t, "querier", reportOK(t, "querier", dedup))
	})
	t.Run("query-frontend", func(t *testing.T) {
		const queries, pieces = `thanos_query_frontend_queries_total{op="query_range"}`, `thanos_frontend_split_queries_total{tripperware="query_range"}`
		var eur []float64
		for _, f := range []struct{ name, base string }{{"frontend-24h", frontend}, {"frontend-2h", frontend2h}} {
			r := reportOK(t, f.name, f.base)
			equalsLedger(t, f.name, r)
			eur = append(eur, r.Fleet.Totals.CostEUR)
			q, p := thanosMetric(t, f.base, queries), thanosMetric(t, f.base, pieces)
			t.Logf("%s: %.0f requests of the report, %.0f sent to the querier", f.name, q, p)
			switch {
			case q == 0:
				t.Errorf("%s received no range query", f.name)
			case f.base == frontend && p != q:
				t.Errorf("%s cut %.0f requests into %.0f: the report's requests should lie within UTC days", f.name, q, p)
			case f.base == frontend2h && p <= q:
				t.Errorf("%s sent %.0f requests for %.0f: it should have cut the day's requests into 2 h pieces", f.name, p, q)
			}
		}
		if len(eur) == 2 && math.Abs(eur[1]-eur[0]) > 1e-9*eur[0] {
			t.Errorf("in 2 h pieces %.9f EUR, whole %.9f", eur[1], eur[0])
		}
	})
	t.Run("HA pair without the replica label", func(t *testing.T) {
		r, log, err := report(t, "no-replica-label", noDedup)
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, ns := range r.Namespaces {
			if want := ledgerNS[ns.Name]; want > 0 {
				lo, hi = min(lo, ns.Totals.CostEUR/want), max(hi, ns.Totals.CostEUR/want)
			}
		}
		t.Logf("without --query.replica-label the report gives %.4f× the ledger's EUR (%.4f of %.4f), %.4f× to %.4f× per namespace",
			r.Fleet.Totals.CostEUR/ledger, r.Fleet.Totals.CostEUR, ledger, lo, hi)
		equalsLedger(t, "no-replica-label", r)
	})
	t.Run("store stopped", func(t *testing.T) {
		// Both halves there: the day is whole through either querier.
		equalsLedger(t, "halves", reportOK(t, "halves", loose))
		equalsLedger(t, "halves-strict", reportOK(t, "halves-strict", strict))

		pm.stopSidecar()
		for _, q := range []string{loose, strict} {
			promEventually(t, time.Minute, 250*time.Millisecond, "the querier at "+q+" sees "+pm.grpc+" fail", func() (bool, string) {
				stores, err := thanosStores(t.Context(), q)
				if err != nil {
					return false, err.Error()
				}
				return stores[pm.grpc] != "", fmt.Sprintf("stores %v", stores)
			})
		}
		// What Thanos 0.40.1 answers, asked as the report asks.
		const probe = "count(gputally_cost_eur_total)"
		if ans := thanosQueryRange(t, loose, probe, start, end, time.Hour); ans.code != http.StatusOK || ans.Status != "success" ||
			len(ans.Warnings) != 0 || ans.last().After(noon.Add(5*time.Minute)) {
			t.Errorf("not strict: HTTP %d %s %q, warnings %q, data up to %s; want a silent 200 with the morning alone (Thanos 0.40.1 skips a store whose health check failed)",
				ans.code, ans.Status, ans.Error, ans.Warnings, ans.last())
		}
		ans := thanosQueryRange(t, strict, probe, start, end, time.Hour)
		if ans.code != http.StatusOK || ans.Status != "success" || len(ans.Warnings) == 0 || !strings.Contains(ans.Warnings[0], pm.grpc) {
			t.Errorf("strict: HTTP %d %s %q, warnings %q; want 200 with a warning naming %s (Thanos 0.40.1 warns despite partial_response=false)",
				ans.code, ans.Status, ans.Error, ans.Warnings, pm.grpc)
		}
		t.Logf("strict querier, partial_response=false: HTTP %d, warnings %q", ans.code, ans.Warnings)

		for _, q := range []struct {
			name, base string
			thanosSays bool // whether Thanos warns
		}{{"halves", loose, false}, {"halves-strict", strict, true}} {
			_, log, err := report(t, q.name+"-stopped", q.base)
			if err == nil || !strings.Contains(log, "coverage 50.0 %") || !strings.Contains(log, "--allow-partial") {
				t.Errorf("%s, pm stopped: %v\n%s\nwant a failure for the missing afternoon", q.name, err, log)
			}
			r, log, err := report(t, q.name+"-stopped-partial", q.base, "--allow-partial")
			if err != nil {
				t.Fatalf("%s, pm stopped, --allow-partial: %v\n%s", q.name, err, log)
			}
			ratio := r.Fleet.Totals.CostEUR / ledger
			t.Logf("%s, pm stopped, --allow-partial: %.4f× the ledger's EUR, partial %v, warnings %q", q.name, ratio, r.Partial, r.Warnings)
			warned := strings.Join(r.Warnings, "\n")
			if !r.Partial || !strings.Contains(warned, "coverage 50.0 %") {
				t.Errorf("%s: %.4f× the ledger's EUR, partial %v: want a partial report saying what is missing", q.name, ratio, r.Partial)
			}
			if q.thanosSays && !strings.Contains(warned, "fetch series for") {
				t.Errorf("%s: warnings %q: want Thanos' words", q.name, r.Warnings)
			}
			if ratio > 0.9 {
				t.Errorf("%s: %.4f× the ledger's EUR with the afternoon missing: is pm stopped?", q.name, ratio)
			}
		}
		t.Run("the failure names Thanos' words", func(t *testing.T) {
			_, log, err := report(t, "halves-strict-stopped-words", strict)
			if err == nil || !strings.Contains(log, "fetch series for") {
				t.Errorf("strict querier, pm stopped: %v\n%s\nwant a failure quoting Thanos' warning", err, log)
			}
		})
	})
	t.Run("one replica of the pair stopped", func(t *testing.T) {
		b.stopSidecar()
		promEventually(t, time.Minute, 250*time.Millisecond, "the querier sees "+b.grpc+" fail", func() (bool, string) {
			stores, err := thanosStores(t.Context(), dedup)
			if err != nil {
				return false, err.Error()
			}
			return stores[b.grpc] != "", fmt.Sprintf("stores %v", stores)
		})
		equalsLedger(t, "querier, b stopped", reportOK(t, "querier-b-stopped", dedup))
	})
}
