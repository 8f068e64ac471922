package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
)

const oneSeries = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-0"},"values":[[1700000000,"1"]]}]}}`

// engine is an httptest server answering range queries with answer(attempt).
func engine(t *testing.T, answer func(r *http.Request, attempt int) (int, string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body := answer(r, int(attempts.Add(1)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &attempts
}

func query(t *testing.T, q *HTTPQuerier) (pmodel.Matrix, []string, error) {
	t.Helper()
	start := time.Unix(1700000000, 0)
	return q.QueryRange(context.Background(), "up", start, start.Add(time.Hour), time.Minute)
}

// TestQuerierURLAndParameters: the path prefix is kept, and every request
// asks the engine not to answer partially and (Thanos) for raw data.
func TestQuerierURLAndParameters(t *testing.T) {
	var got *http.Request
	srv, _ := engine(t, func(r *http.Request, _ int) (int, string) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		got = r
		return 200, oneSeries
	})
	for _, prefix := range []string{"/prometheus", "/select/0/prometheus/"} {
		q, err := NewHTTPQuerier(srv.URL+prefix, HTTPOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := query(t, q); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(prefix, "/") + "/api/v1/query_range"; got.URL.Path != want {
			t.Errorf("path %s, want %s", got.URL.Path, want)
		}
		for k, want := range map[string]string{"partial_response": "false", "deny_partial_response": "1", "max_source_resolution": "0s",
			"query": "up", "start": "1700000000", "end": "1700003600", "step": "60", "timeout": "2m"} {
			if v := got.PostForm.Get(k); v != want {
				t.Errorf("%s=%q, want %q", k, v, want)
			}
		}
		if ua := got.Header.Get("User-Agent"); ua != "gputally-report" {
			t.Errorf("User-Agent %q", ua)
		}
	}
	if _, err := NewHTTPQuerier("http://user:secret@engine:9090", HTTPOptions{}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("credentials in the URL: %v, want an error that does not repeat them", err)
	}
}

// TestQuerierPartialAnswers: warnings, VictoriaMetrics' isPartial and infos
// that say data is missing come back as the words that make a report
// partial; an info about a counter's name does not.
func TestQuerierPartialAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, envelope string
		want           []string
	}{
		{"complete", `"infos":["PromQL info: metric might not be a counter, name does not end in _total"],`, nil},
		{"warnings", `"warnings":["No StoreAPIs matched for this query"],`, []string{"No StoreAPIs matched for this query"}},
		{"isPartial", `"isPartial":true,`, []string{"the engine marked its answer partial (isPartial: a storage node did not answer)"}},
		{"infos", `"infos":["store-gateway unavailable: some blocks were not queried"],`, []string{"store-gateway unavailable: some blocks were not queried"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := engine(t, func(*http.Request, int) (int, string) {
				return 200, strings.Replace(oneSeries, `{"status":"success",`, `{"status":"success",`+tc.envelope, 1)
			})
			q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{})
			m, warnings, err := query(t, q)
			if err != nil || len(m) != 1 {
				t.Fatalf("%v, %d series", err, len(m))
			}
			if !slices.Equal(warnings, tc.want) {
				t.Errorf("warnings %q, want %q", warnings, tc.want)
			}
		})
	}
}

// TestQuerierRetries: 429, 502, 503 and 504 are sent again, at most Retries
// times; a refusal of the query itself is not; an engine limit names the
// flags that split the work.
func TestQuerierRetries(t *testing.T) {
	busy := `{"status":"error","errorType":"unavailable","error":"too many outstanding requests"}`
	for _, tc := range []struct {
		name         string
		answers      []int // statuses of attempts 1, 2, …; the last repeats
		wantAttempts int32
		wantErr      string
	}{
		{"recovers", []int{503, 429, 200}, 3, ""},
		{"gateway", []int{502, 504, 200}, 3, ""},
		{"gives up", []int{503}, 3, "refused up for now: HTTP 503, unavailable: too many outstanding requests"},
		{"bad query", []int{400}, 1, "rejected up: HTTP 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, attempts := engine(t, func(_ *http.Request, n int) (int, string) {
				status := tc.answers[min(n, len(tc.answers))-1]
				if status == 200 {
					return 200, oneSeries
				}
				return status, busy
			})
			q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Retries: 2, Backoff: time.Millisecond})
			_, _, err := query(t, q)
			if got := attempts.Load(); got != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tc.wantAttempts)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	srv, _ := engine(t, func(*http.Request, int) (int, string) {
		return 422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`
	})
	q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{})
	if _, _, err := query(t, q); err == nil || !strings.Contains(err.Error(), "--query.max-samples") {
		t.Errorf("engine limit: %v, want the flags that split the work", err)
	}
}

// TestQuerierAnswerCap: an answer one byte over the cap is an
// *AnswerTooLargeError naming the cap and the query; one at the cap is read.
func TestQuerierAnswerCap(t *testing.T) {
	srv, _ := engine(t, func(*http.Request, int) (int, string) { return 200, oneSeries })
	for _, tc := range []struct {
		limit int64
		large bool
	}{{int64(len(oneSeries)), false}, {int64(len(oneSeries)) - 1, true}} {
		q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{MaxAnswerBytes: tc.limit})
		_, _, err := query(t, q)
		var tooLarge *AnswerTooLargeError
		if errors.As(err, &tooLarge) != tc.large {
			t.Errorf("cap %d: %v", tc.limit, err)
		}
		if tc.large && (tooLarge.Limit != tc.limit || tooLarge.Query != "up" || !strings.Contains(err.Error(), "--query.max-answer-bytes")) {
			t.Errorf("cap %d: %v", tc.limit, err)
		}
	}
}

// TestHTTPClientConfig: a prometheus/common HTTP client config file gives the
// querier its tenant header and basic auth (password from a file relative
// to the config); unknown keys are errors.
func TestHTTPClientConfig(t *testing.T) {
	srv, _ := engine(t, func(r *http.Request, _ int) (int, string) {
		user, pass, ok := r.BasicAuth()
		if r.Header.Get("X-Scope-OrgID") != "team-a" || !ok || user != "report" || pass != "s3cret" {
			return 401, `{"status":"error","errorType":"unauthorized","error":"no org id"}`
		}
		return 200, oneSeries
	})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("password", "s3cret\n")
	good := write("good.yml", "basic_auth: {username: report, password_file: password}\nhttp_headers:\n  X-Scope-OrgID: {values: [team-a]}\n")
	client, err := LoadHTTPClient(good)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Client: client})
	if _, _, err := query(t, q); err != nil {
		t.Errorf("with the config: %v", err)
	}
	q, _ = NewHTTPQuerier(srv.URL, HTTPOptions{})
	if _, _, err := query(t, q); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("without the config: %v, want the engine's 401", err)
	}
	if _, err := LoadHTTPClient(write("bad.yml", "bearer_tokn: x\n")); err == nil || !strings.Contains(err.Error(), "bearer_tokn") {
		t.Errorf("unknown key: %v", err)
	}
}

// tooLargeAbove is a Querier whose answers over more than steps steps are
// too large to read.
type tooLargeAbove struct {
	steps int
	calls [][2]time.Time
}

func (q *tooLargeAbove) QueryRange(_ context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	q.calls = append(q.calls, [2]time.Time{start, end})
	if int(end.Sub(start)/step)+1 > q.steps {
		return nil, nil, &AnswerTooLargeError{Limit: 100, Query: query}
	}
	return pmodel.Matrix{}, nil, nil
}

// TestRunnerSplitsTooLargeAnswers: a request whose answer is too large is
// asked again in halves until it fits; every step is still asked once; an
// answer too large at one step is the error.
func TestRunnerSplitsTooLargeAnswers(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	q := &tooLargeAbove{steps: 3}
	r := &Runner{q: q, maxPoints: 12}
	if err := r.Run(context.Background(), "x", "x", start, start.Add(11*time.Hour), time.Hour, func(pmodel.Matrix) {}); err != nil {
		t.Fatal(err)
	}
	// 12 → 6 → 3 steps, then 3 at a time: the 12 steps in four answers.
	var answered []int
	next := start
	for _, c := range q.calls {
		n := int(c[1].Sub(c[0])/time.Hour) + 1
		if n > 3 {
			continue
		}
		if !c[0].Equal(next) {
			t.Errorf("answer from %s, want from %s", c[0], next)
		}
		next = c[1].Add(time.Hour)
		answered = append(answered, n)
	}
	if !slices.Equal(answered, []int{3, 3, 3, 3}) || len(q.calls) != 6 {
		t.Errorf("answers of %v steps in %d calls, want 4 of 3 after halving 12 → 6 → 3", answered, len(q.calls))
	}
	r = &Runner{q: &tooLargeAbove{steps: 0}, maxPoints: 12}
	err := r.Run(context.Background(), "x", "x", start, start.Add(3*time.Hour), time.Hour, func(pmodel.Matrix) {})
	var tooLarge *AnswerTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Errorf("one step too large: %v, want the AnswerTooLargeError", err)
	}
}

// TestDecodeAnswer: the answer is decoded as it is read, whatever the order
// of its keys and the keys an engine adds; a result that is not a matrix,
// text that is not the API's JSON, and an HTML page (named by its title) are
// errors that say so.
func TestDecodeAnswer(t *testing.T) {
	series := `{"metric":{"UUID":"GPU-0"},"values":[[1700000000,"1"],[1700000060,"2.5"]]}`
	for _, tc := range []struct {
		name, body string
		status     int
		series     int    // want this many series (no error)
		wantErr    string // or an error containing this
	}{
		{"prometheus", `{"status":"success","data":{"resultType":"matrix","result":[` + series + `,` + series + `]}}`, 200, 2, ""},
		{"result before its type, stats after", `{"data":{"result":[` + series + `],"resultType":"matrix","stats":{"seriesFetched":"1","x":[1,{"y":[]}]}},"status":"success"}`, 200, 1, ""},
		{"empty", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, 200, 0, ""},
		{"null result", `{"status":"success","data":{"resultType":"matrix","result":null}}`, 200, 0, ""},
		{"null data", `{"status":"success","data":null}`, 200, 0, "no result, want a matrix"},
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"1"]}]}}`, 200, 0, `a "vector" result, want a matrix`},
		{"vector, type last", `{"status":"success","data":{"result":[{"metric":{},"value":[1700000000,"1"]}],"resultType":"vector"}}`, 200, 0, `a "vector" result, want a matrix`},
		{"scalar", `{"status":"success","data":{"result":[1700000000,"1"],"resultType":"scalar"}}`, 200, 0, "a matrix that does not decode"},
		{"truncated", `{"status":"success","data":{"resultType":"matrix","result":[` + series[:30], 200, 0, "does not decode"},
		{"not json", `proxy error`, 200, 0, "an answer that is not JSON"},
		{"a login page", "\n <!DOCTYPE html><html><head><TITLE>Sign in –\n  SSO</TITLE></head>…", 200, 0, `an HTML page ("Sign in – SSO"), not the Prometheus API's JSON`},
		{"an untitled page", `<html>proxy error</html>`, 200, 0, "an HTML page, not the Prometheus API's JSON"},
		{"an array", `[1,2]`, 200, 0, "an answer that is not JSON"},
		{"error in a 200", `{"status":"error","errorType":"execution","error":"boom"}`, 200, 0, "HTTP 200, execution: boom"},
		{"error", `{"status":"error","errorType":"bad_data","error":"parse error"}`, 400, 0, "HTTP 400, bad_data: parse error"},
		{"proxy page", `<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>`, 502, 0, `HTTP 502: an HTML page ("502 Bad Gateway")`},
		{"proxy text", `upstream connect error`, 502, 0, "HTTP 502: upstream connect error"},
	} {
		m, _, err := decodeAnswer(tc.status, strings.NewReader(tc.body))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		case tc.wantErr == "" && len(m) != tc.series:
			t.Errorf("%s: %d series, want %d", tc.name, len(m), tc.series)
		case tc.series > 0 && (len(m[0].Values) != 2 || m[0].Values[1].Value != 2.5 || m[0].Metric["UUID"] != "GPU-0"):
			t.Errorf("%s: first series %v, want GPU-0's two samples", tc.name, m[0])
		}
	}
}

// TestQuerierBusyNamesConcurrency: an engine that keeps refusing requests
// for its load names the flag that sends fewer at once.
func TestQuerierBusyNamesConcurrency(t *testing.T) {
	srv, _ := engine(t, func(*http.Request, int) (int, string) {
		return 429, `{"status":"error","errorType":"unavailable","error":"too many outstanding requests"}`
	})
	q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Retries: -1})
	if _, _, err := query(t, q); err == nil || !strings.Contains(err.Error(), "--query.concurrency") {
		t.Errorf("busy engine: %v, want the flag that sends fewer requests at once", err)
	}
}

// TestLimitHintNamesFlags: the engines' words for their own limits name the
// flags that split the work; other refusals do not.
func TestLimitHintNamesFlags(t *testing.T) {
	for _, tc := range []struct {
		text string
		hint bool
	}{
		{"query processing would load too many samples into memory in query execution", true},                                                 // Prometheus
		{"cannot select more than -search.maxSamplesPerQuery=1000000 samples; possible solutions: increase -search.maxSamplesPerQuery", true}, // VictoriaMetrics
		{"too many points for the given step=1s, start=0 and end=100000: 100001; cannot exceed -search.maxPointsPerTimeseries=30000", true},
		{"the number of matching timeseries exceeds 300000; either narrow down the search or increase -search.maxUniqueTimeseries", true},
		{"the query exceeded the maximum number of chunks fetched from ingesters", true}, // Mimir
		{"parse error at char 4: unexpected identifier", false},
	} {
		got := limitHint(&engineError{status: 422, text: tc.text})
		if got != "" != tc.hint || tc.hint && !strings.Contains(got, "--query.max-samples") {
			t.Errorf("%q: hint %q, want one naming the flags: %t", tc.text, got, tc.hint)
		}
	}
}
