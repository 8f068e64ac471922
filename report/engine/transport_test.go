package engine

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/internal/faultengine"
	pmodel "github.com/prometheus/common/model"
)

// oneAnswer answers every query with one series of one sample.
type oneAnswer struct{}

func (oneAnswer) QueryRange(context.Context, string, time.Time, time.Time, time.Duration) (pmodel.Matrix, []string, error) {
	return pmodel.Matrix{{Metric: pmodel.Metric{"UUID": "GPU-0"}, Values: []pmodel.SamplePair{pair(1700000000, 1)}}}, nil, nil
}

// faulty starts a fault-injecting engine over q.
func faulty(t *testing.T, q faultengine.Querier, faults ...faultengine.Fault) *faultengine.Server {
	t.Helper()
	srv := faultengine.New(q, faults...)
	t.Cleanup(srv.Close)
	return srv
}

// TestCutAnswersRetried: an answer cut off after 40 bytes is sent again
// whether it was framed (a Content-Length it falls short of) or not (no
// Content-Length, no chunks: the connection just closes, and the JSON ends
// early); once: the second attempt reads it; always: three attempts with two
// retries, then an error saying it was cut off, and after how many bytes.
// Before: an unframed cut failed at once with "unexpected EOF".
func TestCutAnswersRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(http.ResponseWriter, *http.Request, []byte)
		want string
	}{
		{"unframed", faultengine.CutUnframed(40), "was cut off after 40 bytes, before its JSON ended"},
		{"framed", faultengine.CutFramed(40), "was cut off after 40 bytes: unexpected EOF"},
	} {
		t.Run(tc.name+" once", func(t *testing.T) {
			srv := faulty(t, oneAnswer{}, faultengine.Fault{Times: 1, Write: tc.cut})
			q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Retries: 2, Backoff: time.Millisecond})
			m, _, err := query(t, q)
			if err != nil || len(m) != 1 || len(srv.Queries()) != 2 {
				t.Errorf("%d series after %d attempts, error %v; want 1 after 2", len(m), len(srv.Queries()), err)
			}
		})
		t.Run(tc.name+" always", func(t *testing.T) {
			srv := faulty(t, oneAnswer{}, faultengine.Fault{Write: tc.cut})
			q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Retries: 2, Backoff: time.Millisecond})
			_, _, err := query(t, q)
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(srv.Queries()) != 3 {
				t.Errorf("%d attempts, error %v; want 3 and one saying %q", len(srv.Queries()), err, tc.want)
			}
		})
	}
}

// TestTrickleStoppedAtQueryTimeout: an answer that trickles, a byte every
// 20 ms, is cut off at the query's timeout (300 ms) and not asked again — the
// same query would take as long — and the error names --query.timeout.
// Before: retried four times, about 10 minutes a request at the default 2 m,
// "context deadline exceeded".
func TestTrickleStoppedAtQueryTimeout(t *testing.T) {
	srv := faulty(t, oneAnswer{}, faultengine.Fault{Write: faultengine.Trickle(20 * time.Millisecond)})
	q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{Timeout: 300 * time.Millisecond, Retries: 2, Backoff: time.Millisecond})
	_, _, err := query(t, q)
	if err == nil || !strings.Contains(err.Error(), "did not finish its answer to up (") || !strings.Contains(err.Error(), "within 300ms (--query.timeout)") ||
		len(srv.Queries()) != 1 {
		t.Errorf("%d attempts, error %v; want 1 and one naming --query.timeout", len(srv.Queries()), err)
	}
}

// TestEngineNamedByItsURL: errors name the engine by the URL it was given
// less the query endpoint — with the host's slash when the URL has no path
// (before: "http://hostapi/v1/query_range"), with its path prefix — and
// never show a query string, which may hold a token; the requests still
// carry it.
func TestEngineNamedByItsURL(t *testing.T) {
	var rawQuery string
	srv := faulty(t, oneAnswer{}, faultengine.Fault{Write: func(w http.ResponseWriter, r *http.Request, _ []byte) {
		rawQuery = r.URL.RawQuery
		faultengine.Status(http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"no"}`)(w, r, nil)
	}})
	for _, tc := range []struct{ base, want string }{
		{srv.URL, "the engine at " + srv.URL + " rejected up: HTTP 400"},
		{srv.URL + "/", "the engine at " + srv.URL + " rejected up"},
		{srv.URL + "/select/0/prometheus/", "the engine at " + srv.URL + "/select/0/prometheus rejected up"},
		{srv.URL + "/?token=s3cret", "the engine at " + srv.URL + " rejected up"},
	} {
		q, err := NewHTTPQuerier(tc.base, HTTPOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = query(t, q)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "api/v1") {
			t.Errorf("%s: error %v, want one saying %q", tc.base, err, tc.want)
		}
	}
	if rawQuery != "token=s3cret" {
		t.Errorf("the request's query string %q, want the URL's", rawQuery)
	}
	closed := faultengine.New(oneAnswer{})
	closed.Close()
	q, _ := NewHTTPQuerier(closed.URL+"/?token=s3cret", HTTPOptions{Retries: -1})
	if _, _, err := query(t, q); err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable: %v, want connection refused without the token", err)
	}
}
