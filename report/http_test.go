package report

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	pmodel "github.com/prometheus/common/model"
)

// fakePrometheus serves /api/v1/query_range from q, as Prometheus' HTTP API does.
func fakePrometheus(t *testing.T, q engine.Querier) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query_range" {
			http.NotFound(w, r)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sec := func(name string) time.Time {
			f, _ := strconv.ParseFloat(r.Form.Get(name), 64)
			return time.Unix(0, int64(math.Round(f*1e9))).UTC()
		}
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		m, warnings, err := q.QueryRange(r.Context(), r.Form.Get("query"), sec("start"), sec("end"), time.Duration(step*float64(time.Second)))
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "execution", "error": err.Error()})
			return
		}
		answer := map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": m}}
		if len(warnings) > 0 {
			answer["warnings"] = warnings
		}
		json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func httpConfig(t *testing.T, url, format string) Config {
	cfg := testConfig()
	cfg.PrometheusURL = url
	cfg.Format = format
	cfg.Out = filepath.Join(t.TempDir(), "report."+format)
	cfg.Timeout = 5 * time.Second
	return cfg
}

func TestRunOverHTTP(t *testing.T) {
	srv := fakePrometheus(t, fleetQuerier(testFleet(), time.Hour))
	cfg := httpConfig(t, srv.URL, FormatJSON)
	if err := Run(context.Background(), cfg, discard()); err != nil {
		t.Fatal(err)
	}
	r := readReportJSON(t, cfg.Out)
	want := (2*252 + 420 + 252) * 730.5 / 168 // as TestRecommendationsHandComputed
	if !near(r.FreedEURPerMonth, want) || len(r.Recommendations) != 4 {
		t.Errorf("over HTTP: %d recommendations freeing %.4f EUR/month, want 4 freeing %.4f", len(r.Recommendations), r.FreedEURPerMonth, want)
	}
}

func TestRunErrorsOverHTTP(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	badData := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"1:10: parse error: unexpected character"}`)
	}))
	defer badData.Close()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	empty := fakePrometheus(t, &fakeQuerier{})

	for _, tc := range []struct {
		name, url, want string
		timeout         time.Duration
	}{
		{"unreachable", closed.URL, "connection refused", 0},
		{"query error", badData.URL, "bad_data: 1:10: parse error", 0},
		{"server error", unavailable.URL, "503", 0},
		{"timeout", slow.URL, "within 200ms (--query.timeout)", 200 * time.Millisecond},
		{"no data", empty.URL, "no GPU data", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := httpConfig(t, tc.url, FormatHTML)
			if tc.timeout > 0 {
				cfg.Timeout = tc.timeout
			}
			err := Run(context.Background(), cfg, discard())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			t.Logf("error: %v", err)
			if _, statErr := os.Stat(cfg.Out); !os.IsNotExist(statErr) {
				t.Errorf("a failed run left %s behind (stat: %v)", cfg.Out, statErr)
			}
		})
	}
}

// warnOn adds an engine warning to the answers of the queries that contain
// match, as Thanos does when a store did not answer.
type warnOn struct {
	engine.Querier
	match, warning string
}

func (w warnOn) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	m, warnings, err := w.Querier.QueryRange(ctx, q, start, end, step)
	if strings.Contains(q, w.match) {
		warnings = append(warnings, w.warning)
	}
	return m, warnings, err
}

// TestEngineWarningsMakeThePartial: an engine that answers the EUR counters
// with a warning (a store down) leaves money out however complete the
// coverage looks: without --allow-partial the report fails with the engine's
// words; with it the report is marked partial and says them.
func TestEngineWarningsMakeThePartial(t *testing.T) {
	const words = "No StoreAPIs matched for this query"
	srv := fakePrometheus(t, warnOn{fleetQuerier(testFleet(), time.Hour), "gputally_cost_eur_total", words})
	cfg := httpConfig(t, srv.URL, FormatJSON)
	if err := Run(context.Background(), cfg, discard()); err == nil || !strings.Contains(err.Error(), words) || !strings.Contains(err.Error(), "--allow-partial") {
		t.Fatalf("error %v, want the engine's words and --allow-partial", err)
	}
	cfg.AllowPartial = true
	if err := Run(context.Background(), cfg, discard()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Partial  bool `json:"partial"`
		Coverage struct {
			Ratio float64 `json:"ratio"`
		} `json:"coverage"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Partial || r.Coverage.Ratio < 0.99 || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], words) {
		t.Errorf("partial %v at coverage %v, warnings %q: want partial for the engine's words alone", r.Partial, r.Coverage.Ratio, r.Warnings)
	}
}

func TestRunWithoutURL(t *testing.T) {
	cfg := testConfig()
	if err := Run(context.Background(), cfg, discard()); err == nil || !strings.Contains(err.Error(), "--prometheus.url") {
		t.Errorf("error %v, want one naming --prometheus.url", err)
	}
}

func TestWebhook(t *testing.T) {
	prom := fakePrometheus(t, fleetQuerier(testFleet(), time.Hour))
	type got struct {
		contentType string
		body        []byte
	}
	for _, tc := range []struct {
		name    string
		status  int
		wantErr string
	}{
		{"accepted", http.StatusOK, ""},
		{"server error", http.StatusInternalServerError, "webhook answered 500 Internal Server Error: no channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			posts := make(chan got, 1)
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				posts <- got{r.Header.Get("Content-Type"), b}
				if tc.status != http.StatusOK {
					http.Error(w, "no channel", tc.status)
				}
			}))
			defer hook.Close()
			cfg := httpConfig(t, prom.URL, FormatHTML)
			cfg.WebhookURLFile = filepath.Join(t.TempDir(), "url")
			if err := os.WriteFile(cfg.WebhookURLFile, []byte(hook.URL+"/hooks/secret-token\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := Run(context.Background(), cfg, discard())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "secret-token"):
				t.Errorf("error %q reveals the webhook URL", err)
			}
			if _, err := os.Stat(cfg.Out); err != nil {
				t.Errorf("report file not written: %v", err)
			}
			p := <-posts
			var payload map[string]any
			if err := json.Unmarshal(p.body, &payload); err != nil {
				t.Fatalf("payload %q is not JSON: %v", p.body, err)
			}
			text, ok := payload["text"].(string)
			if p.contentType != "application/json" || len(payload) != 1 || !ok ||
				!strings.HasPrefix(text, "# GPU utilization and cost report") || !strings.Contains(text, "| MIG 1g.10gb ×1 |") {
				t.Errorf("payload %s (content type %q), want {\"text\": <the Markdown report>}", p.body, p.contentType)
			}
		})
	}
}
