package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/sim"
)

// heldCollector blocks every Collect until release is closed, announcing each
// on entered: it keeps scrapes in flight for as long as a test wants. It then
// gives 30 metric families, as a real scrape gives many.
type heldCollector struct {
	entered chan struct{}
	release chan struct{}
	descs   []*prometheus.Desc
}

func newHeldCollector() *heldCollector {
	h := &heldCollector{entered: make(chan struct{}, 100), release: make(chan struct{})}
	for i := range 30 {
		h.descs = append(h.descs, prometheus.NewDesc(fmt.Sprintf("held_%d", i), "A gauge behind a held Collect.", nil, nil))
	}
	return h
}

func (h *heldCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range h.descs {
		ch <- d
	}
}

func (h *heldCollector) Collect(ch chan<- prometheus.Metric) {
	h.entered <- struct{}{}
	<-h.release
	for _, d := range h.descs {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 1)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveRoutes serves the exporter's routes for c over loopback, with held
// registered, and returns the server and the log.
func serveRoutes(t *testing.T, c *exporterCommand, held prometheus.Collector) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	backend, err := sim.New(sim.Default(), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	book, err := newPriceBook("", "", collector.Inventory{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(held)
	srv := httptest.NewServer(c.routes(reg, collector.NewSampler(backend, collector.SamplerOptions{}), book, logger))
	t.Cleanup(srv.Close)
	return srv, logs
}

// TestMaxRequests: with --web.max-requests=2 and two scrapes in flight, a third
// is answered 503 at once; the two held ones then complete with 200.
func TestMaxRequests(t *testing.T) {
	held := newHeldCollector()
	srv, _ := serveRoutes(t, &exporterCommand{metricsPath: "/metrics", maxRequests: 2}, held)
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	<-held.entered
	<-held.entered // both slots taken
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Limit of concurrent requests reached (2)") {
		t.Errorf("third scrape: %s %q, want 503 naming the limit", resp.Status, body)
	}
	close(held.release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("held scrape answered %d, want 200", code)
		}
	}
}

// TestScrapeTimeout: a scrape whose collection outlasts --web.scrape-timeout is
// answered 503 while the collection still runs (the collector here never
// returns before the answer, so there is no race to lose however loaded the
// machine), and the failed writes that follow log one line, not one per metric
// family.
func TestScrapeTimeout(t *testing.T) {
	held := newHeldCollector()
	srv, logs := serveRoutes(t, &exporterCommand{metricsPath: "/metrics", scrapeTimeout: 200 * time.Millisecond}, held)
	start := time.Now()
	const scrapes = 5
	for range scrapes {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Exceeded configured timeout") {
			t.Fatalf("scrape: %s %q, want 503 after the timeout", resp.Status, body)
		}
	}
	for range scrapes {
		<-held.entered
	}
	close(held.release) // the collections end and write into timed-out answers
	waitFor(t, func() bool { return strings.Contains(logs.String(), "scrape failed") })
	lines := strings.Count(logs.String(), "scrape failed")
	if limit := 1 + int(time.Since(start)/scrapeErrorLogEvery); lines > limit {
		t.Errorf("%d log lines for %d timed-out scrapes in %s, want at most %d:\n%s", lines, scrapes, time.Since(start), limit, logs)
	}
}

// TestHTTPServerTimeouts: the server cuts off slow and idle connections.
func TestHTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), 10*time.Second)
	if srv.ReadHeaderTimeout != 10*time.Second || srv.IdleTimeout != 2*time.Minute || srv.WriteTimeout != 40*time.Second {
		t.Errorf("timeouts: read header %s, idle %s, write %s; want 10s, 2m, 40s", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.WriteTimeout)
	}
	if srv := newHTTPServer(http.NotFoundHandler(), 0); srv.WriteTimeout != 0 || srv.IdleTimeout == 0 {
		t.Errorf("no scrape timeout: write %s, idle %s; want 0 and still an idle timeout", srv.WriteTimeout, srv.IdleTimeout)
	}
}

// TestIdleConnectionsDoNotStarveScrapes holds hundreds of idle connections to
// the exporter (half never send a request, half made one and keep the
// connection alive) and scrapes meanwhile: every scrape succeeds. A silent
// connection is then closed by the server (the read-header timeout), not kept
// forever. Loopback only; every loop is bounded.
func TestIdleConnectionsDoNotStarveScrapes(t *testing.T) {
	e := startExporter(t, "--backend=sim", "--collector.interval=100ms")
	const idle = 300
	conns := make([]net.Conn, 0, idle)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range idle {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 1 { // one keep-alive request, then silence
			fmt.Fprintf(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			resp.Body.Close()
		}
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		resp, err := client.Get("http://" + e.addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d with %d idle connections held: %v", i, idle, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d with %d idle connections held: %s", i, idle, resp.Status)
		}
	}
	// The server closes a connection that never sent a request after
	// readHeaderTimeout: the read ends with EOF long before our deadline.
	silent := conns[0]
	if err := silent.SetReadDeadline(time.Now().Add(readHeaderTimeout + time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent connection: read %v, want EOF (closed by the server)", err)
	}
}

// TestCheckMetricsPath: the paths a scraper may use pass; the ones that
// crashed the mux, could never be reached or hid an endpoint do not.
func TestCheckMetricsPath(t *testing.T) {
	for _, p := range []string{"/metrics", "/", "/gpu/metrics", "/metrics/", "/v1.2_x~y-z"} {
		if err := checkMetricsPath(p); err != nil {
			t.Errorf("checkMetricsPath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "metrics", "/a b", "/{x}", "/a/../b", "/a/./b", "//", "//metrics", "/-/healthy", "/-/reload", "/-", "/métrics", "/m?x=1", "/m#f"} {
		if err := checkMetricsPath(p); err == nil {
			t.Errorf("checkMetricsPath(%q) = nil, want an error", p)
		}
	}
}
