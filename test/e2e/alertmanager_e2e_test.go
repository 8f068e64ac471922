//go:build e2e

package e2e

import (
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/team"
)

// TestAlertsReachTheirTeam runs the whole alerting path on loopback: `gputally
// exporter --backend=sim` on test/e2e/testdata/alerts-scenario.yaml, a fake
// kube-state-metrics serving one pod's team label, a real Prometheus with the
// rules `generate rules` writes for a team map and budgets (windows and `for:`
// shortened through alerts.Options), Debian's prometheus-alertmanager with the
// chart's example configuration (deploy/helm/gputally/files/alertmanager.yaml,
// only its timings and receivers' URLs changed), and a webhook receiver of the
// test's own. It checks that the idle alert of an idle pod reaches its team's
// receiver with its runbook_url and EUR figure, that a pod without a team
// routes by its namespace, that a lost GPU's idle alert is inhibited, that a
// team over its budget gets GPUBudgetSpent and a team under it does not, and
// that the idle alert's resolved notification arrives once the pod has ended.
func TestAlertsReachTheirTeam(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	alertmanager := alertmanagerPath(t)
	amtool := promLookPath(t, "amtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	ctx := t.Context()

	hooks := newWebhookRecorder(t)
	ksm := serveText(t, "# TYPE kube_pod_labels gauge\n"+
		`kube_pod_labels{namespace="research",pod="notebook-0",uid="0b0c",label_team="ml-research"} 1`+"\n")

	amAddr := promFreeAddr(t)
	amConfig := filepath.Join(dir, "alertmanager.yml")
	writeAlertmanagerConfig(t, amConfig, hooks.url)
	if out, err := exec.Command(amtool, "check-config", amConfig).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	promStartProcess(t, alertmanager, "--config.file="+amConfig, "--storage.path="+filepath.Join(dir, "am"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=warn")
	am := "http://" + amAddr

	opts := alerts.DefaultOptions()
	// Pending from the second scrape on, the idle alerts fire at about 42s:
	// the lost GPU's well after its GPULostAccruingCost (about 22s) and
	// before its idle time before the loss (up to 20s) leaves the window; the
	// notebook's before the pod ends at 50s, over a window full of samples.
	opts.IdleWindow, opts.IdleFor = 30*time.Second, 40*time.Second
	opts.BudgetStep = 5 * time.Second
	opts.TeamLabel = "team"
	var err error
	if opts.Teams, err = team.ParseMap([]byte("teams:\n  web: [frontend]\n")); err != nil {
		t.Fatal(err)
	}
	// One idle H100 costs about 1.2 EUR an hour, 0.0016 EUR a step: the
	// notebook's team spends its budget within seconds, web never spends 1000.
	opts.Budgets = alerts.Budgets{Teams: map[string]alerts.Budget{"ml-research": {MonthlyEUR: 0.01}, "web": {MonthlyEUR: 1000}}}
	rules, err := alerts.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	exporterAddr := promFreeAddr(t)
	rulesPath, configPath := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "prometheus.yml")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%q]
`, rulesPath, amAddr, opts.ExporterJob, exporterAddr, ksm)
	for path, content := range map[string][]byte{rulesPath: rules, configPath: []byte(config)} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	promAddr := promFreeAddr(t)
	prom := "http://" + promAddr
	promStartProcess(t, prometheus, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promEventually(t, 60*time.Second, 250*time.Millisecond, "prometheus and alertmanager ready", func() (bool, string) {
		if _, err := promGet(ctx, prom, "/-/ready"); err != nil {
			return false, err.Error()
		}
		_, err := promGet(ctx, am, "/-/ready")
		return err == nil, fmt.Sprint(err)
	})
	// The lost GPU's idle alert is active in Alertmanager only for a few
	// seconds: watch for it from the start.
	inhibited := watchInhibited(t, am, `alertname="GPUAllocatedButIdle"`, `pod="scratch-0"`)
	// The scenario's clock starts with the exporter: start it once Prometheus
	// scrapes, so that the idle seconds before the GPU is lost are scraped.
	promStartProcess(t, gputally, "exporter", "--backend=sim", "--sim.scenario=testdata/alerts-scenario.yaml",
		"--web.listen-address="+exporterAddr)

	gpuCost := func(uuid string) float64 {
		v, err := promScalar(ctx, prom, fmt.Sprintf(`sum(gputally_gpu_hourly_cost_eur{UUID=%q})`, uuid))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("idle pod reaches its team with runbook and EUR", func(t *testing.T) {
		a := hooks.await(t, "ml-research", "firing", map[string]string{"alertname": "GPUAllocatedButIdle", "pod": "notebook-0"})
		if a.Labels["team"] != "ml-research" || a.Labels["namespace"] != "research" {
			t.Errorf("labels %v: want team ml-research (kube_pod_labels) and namespace research", a.Labels)
		}
		checkRunbook(t, a)
		m := regexp.MustCompile(`costs (\d+\.\d\d) EUR per hour`).FindStringSubmatch(a.Annotations["description"])
		if m == nil {
			t.Fatalf("description %q states no EUR per hour", a.Annotations["description"])
		}
		// The whole GPU is the notebook's and idle: its idle EUR per hour is
		// the GPU's rate (less what the window's edges lose), not a part of it.
		eur, _ := strconv.ParseFloat(m[1], 64)
		if full := gpuCost(a.Labels["UUID"]); eur < 0.75*full || eur > 1.1*full {
			t.Errorf("idle cost %.2f EUR/h for a GPU that costs %.4f EUR/h", eur, full)
		}
	})

	t.Run("pod without a team routes by namespace", func(t *testing.T) {
		a := hooks.await(t, "web", "firing", map[string]string{"alertname": "GPUAllocatedButIdle", "pod": "play-0"})
		if _, ok := a.Labels["team"]; ok || a.Labels["namespace"] != "sandbox" {
			t.Errorf("labels %v: want namespace sandbox and no team", a.Labels)
		}
		hooks.await(t, "platform", "firing", map[string]string{"alertname": "GPULostAccruingCost", "gpu": "1"})
	})

	t.Run("lost GPU's idle alert is inhibited", func(t *testing.T) {
		// Alertmanager held it (Prometheus sends only firing alerts) and
		// named an alert that muted it: the GPU's GPULostAccruingCost.
		var a amAlert
		promEventually(t, 2*time.Minute, time.Second, "scratch-0's idle alert suppressed", func() (bool, string) {
			var ok bool
			a, ok = inhibited()
			return ok, fmt.Sprintf("last seen %+v", a)
		})
		if a.Labels["team"] != "web" {
			t.Errorf("labels %v: want team web (team map)", a.Labels)
		}
	})

	t.Run("team over budget", func(t *testing.T) {
		a := hooks.await(t, "ml-research", "firing", map[string]string{"alertname": "GPUBudgetSpent", "budget_percent": "100"})
		if a.Labels["team"] != "ml-research" || a.Labels["severity"] != "critical" {
			t.Errorf("labels %v", a.Labels)
		}
		checkRunbook(t, a)
		if d := a.Annotations["description"]; !strings.Contains(d, "team ml-research has spent ") || !strings.Contains(d, "of its budget of 0.01 EUR") {
			t.Errorf("description %q", d)
		}
	})

	t.Run("resolved when the pod has ended", func(t *testing.T) {
		hooks.await(t, "ml-research", "resolved", map[string]string{"alertname": "GPUAllocatedButIdle", "pod": "notebook-0"})
		// By now (over a minute after the lost GPU's idle alert fired) its
		// notification would have come.
		for _, n := range hooks.all() {
			for _, a := range n.Alerts {
				if a.Labels["pod"] == "scratch-0" && a.Labels["alertname"] == "GPUAllocatedButIdle" {
					t.Errorf("receiver %s got the lost GPU's idle alert: %v", n.Receiver, a.Labels)
				}
				if a.Labels["alertname"] == "GPUBudgetSpent" && a.Labels["team"] != "ml-research" {
					t.Errorf("receiver %s got a budget alert of a team under budget: %v", n.Receiver, a.Labels)
				}
			}
		}
	})
}

// checkRunbook fails t unless a links its runbook in this repository.
func checkRunbook(t *testing.T, a webhookAlert) {
	t.Helper()
	if want := alerts.DefaultRunbookBaseURL + "/" + a.Labels["alertname"] + ".md"; a.Annotations["runbook_url"] != want {
		t.Errorf("%s: runbook_url %q, want %q", a.Labels["alertname"], a.Annotations["runbook_url"], want)
	}
}

// alertmanagerPath finds Debian's prometheus-alertmanager, or alertmanager.
func alertmanagerPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return promLookPath(t, "prometheus-alertmanager")
}

// writeAlertmanagerConfig writes the chart's example configuration to path
// with every receiver's webhook URL pointed at base/<receiver> and timings
// short enough for a test; routes and inhibitions stay as shipped.
func writeAlertmanagerConfig(t *testing.T, path, base string) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/helm/gputally/files/alertmanager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	route := cfg["route"].(map[string]any)
	route["group_wait"], route["group_interval"], route["repeat_interval"] = "1s", "2s", "1h"
	for _, r := range cfg["receivers"].([]any) {
		rc := r.(map[string]any)
		rc["webhook_configs"] = []any{map[string]any{"url": base + "/" + rc["name"].(string), "send_resolved": true}}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// serveText serves body as a Prometheus text exposition on loopback and
// returns its address.
func serveText(t *testing.T, body string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, body)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// webhookAlert is an alert of Alertmanager's webhook payload.
type webhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// notification is one webhook call: the receiver is the URL's path.
type notification struct {
	Receiver string
	Alerts   []webhookAlert `json:"alerts"`
}

// webhookRecorder is the test's webhook receiver: it keeps every notification
// Alertmanager posts to url/<receiver>. Safe for concurrent use.
type webhookRecorder struct {
	url  string
	mu   sync.Mutex
	seen []notification
}

func newWebhookRecorder(t *testing.T) *webhookRecorder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &webhookRecorder{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var n notification
		if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.Receiver = strings.TrimPrefix(req.URL.Path, "/")
		r.mu.Lock()
		r.seen = append(r.seen, n)
		r.mu.Unlock()
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *webhookRecorder) all() []notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notification(nil), r.seen...)
}

// await waits (up to three minutes: the rules' windows, Alertmanager's group
// timings, a loaded machine) for an alert with status and every label of want
// at receiver, and returns it.
func (r *webhookRecorder) await(t *testing.T, receiver, status string, want map[string]string) webhookAlert {
	t.Helper()
	var found webhookAlert
	promEventually(t, 3*time.Minute, 500*time.Millisecond, fmt.Sprintf("%s %v at %s", status, want, receiver), func() (bool, string) {
		var got []string
		for _, n := range r.all() {
			for _, a := range n.Alerts {
				got = append(got, fmt.Sprintf("%s:%s/%s/%s", n.Receiver, a.Labels["alertname"], a.Labels["pod"], a.Status))
				if n.Receiver != receiver || a.Status != status {
					continue
				}
				match := true
				for k, v := range want {
					match = match && a.Labels[k] == v
				}
				if match {
					found = a
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("notifications so far: %v", got)
	})
	return found
}

// watchInhibited polls Alertmanager at base every half second until the test
// ends for an alert matching filters, and returns a function that reports the
// first one seen inhibited (false, and the last one seen, before that).
func watchInhibited(t *testing.T, base string, filters ...string) func() (amAlert, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var (
		mu    sync.Mutex
		last  amAlert
		found bool
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			as, err := amAlerts(ctx, base, filters...)
			mu.Lock()
			for _, a := range as {
				if !found {
					last = a
					found = err == nil && a.Status.State == "suppressed" && len(a.Status.InhibitedBy) > 0
				}
			}
			stop := found
			mu.Unlock()
			if stop {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() (amAlert, bool) {
		mu.Lock()
		defer mu.Unlock()
		return last, found
	}
}

// amAlert is an alert of Alertmanager's /api/v2/alerts.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// amAlerts returns the alerts Alertmanager holds that match every filter.
func amAlerts(ctx context.Context, base string, filters ...string) ([]amAlert, error) {
	q := url.Values{}
	for _, f := range filters {
		q.Add("filter", f)
	}
	body, err := promGet(ctx, base, "/api/v2/alerts?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var as []amAlert
	if err := json.Unmarshal(body, &as); err != nil {
		return nil, fmt.Errorf("decode alerts: %w", err)
	}
	return as, nil
}
