// Package faultengine is a Prometheus HTTP API for the report's tests that
// does what broken engines, proxies and gateways do. It answers range queries
// (…/api/v1/query_range, POST or GET) from a Querier — Prometheus' own PromQL
// engine over a store, or a fake — as Prometheus encodes them, and injects
// the faults a test asks for: into the answer's series (values, order,
// copies) or into its transport (a status, an HTML page, an answer cut off
// with or without framing, an answer that trickles).
//
// It imports no report package; the tests of report, report/engine and the sources use
// it.
package faultengine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
)

// Querier answers range queries; report/engine's queriers are Queriers.
type Querier interface {
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error)
}

// Fault changes the answers to the queries it matches.
type Fault struct {
	// Match selects the queries whose PromQL contains it; "": every query.
	Match string
	// Times is how many matching requests it changes, the first ones; 0:
	// every one.
	Times int
	// Answer (optional) changes the series of an answer the Querier gave.
	Answer func(m model.Matrix) model.Matrix
	// Write (optional) writes the HTTP answer itself, given the JSON the
	// engine would have sent (after Answer).
	Write func(w http.ResponseWriter, r *http.Request, body []byte)
}

// Server is a running fault-injecting engine: an *httptest.Server. It is
// safe for concurrent use.
type Server struct {
	*httptest.Server
	q      Querier
	mu     sync.Mutex
	faults []Fault
	used   []int    // requests each fault changed
	seen   []string // the queries asked, in order
}

// New starts a Server answering from q with faults; the first fault that
// matches a request (and has times left) applies. Close it when done.
func New(q Querier, faults ...Fault) *Server {
	s := &Server{q: q, faults: faults, used: make([]int, len(faults))}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Queries returns the queries asked so far, in the order they came.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// fault returns the fault for query, if any, and counts it as used.
func (s *Server) fault(query string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, query)
	for i, f := range s.faults {
		if strings.Contains(query, f.Match) && (f.Times == 0 || s.used[i] < f.Times) {
			s.used[i]++
			return &s.faults[i]
		}
	}
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/api/v1/query_range") {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	query := r.Form.Get("query")
	step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
	m, warnings, err := s.q.QueryRange(r.Context(), query, seconds(r.Form.Get("start")), seconds(r.Form.Get("end")), time.Duration(step*float64(time.Second)))
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "execution", "error": err.Error()})
		return
	}
	f := s.fault(query)
	if f != nil && f.Answer != nil {
		m = f.Answer(m)
	}
	answer := map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": m}}
	if len(warnings) > 0 {
		answer["warnings"] = warnings
	}
	body, err := json.Marshal(answer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if f != nil && f.Write != nil {
		f.Write(w, r, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// seconds parses a Prometheus API time in Unix seconds.
func seconds(s string) time.Time {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Unix(0, int64(math.Round(f*1e9))).UTC()
}

// Status answers with status and body: JSON when body is an object, else an
// HTML page.
func Status(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	}
}

// HTMLPage is the body of a proxy's page titled title.
func HTMLPage(title string) string {
	return "<!DOCTYPE html>\n<html><head><title>" + title + "</title></head><body><h1>" + title + "</h1></body></html>\n"
}

// CutUnframed sends the first n bytes of the answer with neither a
// Content-Length nor chunks, as an HTTP/1.0-style server or proxy does, and
// closes the connection cleanly: to the client the answer simply ends.
func CutUnframed(n int) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, body []byte) {
		cut(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", body[:min(n, len(body))])
	}
}

// CutFramed sends the first n bytes of the answer under a Content-Length of
// the whole, and closes the connection: the client sees the answer end early.
func CutFramed(n int) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, body []byte) {
		cut(w, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)), body[:min(n, len(body))])
	}
}

// cut writes head and body on w's connection, bypassing the server's
// framing, and closes it.
func cut(w http.ResponseWriter, head string, body []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("faultengine: hijack: %v", err)) // an httptest server's connections can be hijacked
	}
	defer conn.Close()
	_, _ = buf.WriteString(head)
	_, _ = buf.Write(body)
	_ = buf.Flush()
}

// Trickle sends the answer one byte every interval, flushed, until it is
// sent or the client goes away.
func Trickle(interval time.Duration) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		rc := http.NewResponseController(w)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := range body {
			if _, err := w.Write(body[i : i+1]); err != nil {
				return
			}
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}
}
