package main

import (
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gputally/gputally/smallfile"
)

// Timeouts of the exporter's HTTP server (docs/reliability.md). A client that
// opens a connection and sends no request, or sends its headers a byte at a
// time, is cut off after readHeaderTimeout; a keep-alive connection no request
// uses is closed after idleTimeout, longer than any usual scrape interval so
// that Prometheus keeps reusing its connection; a client that reads its answer
// too slowly is cut off writeMargin after the scrape timeout.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	writeMargin       = 30 * time.Second
)

// maxWebConfigBytes caps the --web.config.file read at start-up, bytes.
const maxWebConfigBytes = 1 << 20

// newHTTPServer returns the exporter's server with the timeouts above; a
// scrape may take scrapeTimeout (0: no limit, and no write timeout either).
func newHTTPServer(h http.Handler, scrapeTimeout time.Duration) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
	if scrapeTimeout > 0 {
		srv.WriteTimeout = scrapeTimeout + writeMargin
	}
	return srv
}

// metricsPathRE is the path --web.telemetry-path may take: unreserved URL
// characters and slashes, so the pattern means the same to http.ServeMux as to
// the scraper that requests it.
var metricsPathRE = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)

// checkMetricsPath refuses a telemetry path that would crash the mux, never be
// reached, or hide another endpoint.
func checkMetricsPath(p string) error {
	trimmed := strings.TrimSuffix(p, "/")
	switch {
	case !metricsPathRE.MatchString(p):
		return fmt.Errorf("--web.telemetry-path %q: want an absolute URL path such as /metrics (letters, digits, . _ ~ - and /)", p)
	case strings.Contains(p, "//") || (trimmed != "" && path.Clean(trimmed) != trimmed):
		return fmt.Errorf("--web.telemetry-path %q: want a clean path (no //, . or .. segments)", p)
	case p == "/-" || strings.HasPrefix(p, "/-/"):
		return fmt.Errorf("--web.telemetry-path %q: /-/ holds the health, readiness and reload endpoints", p)
	}
	return nil
}

// checkHostname refuses a --hostname that is not valid UTF-8. Prometheus label
// values must be UTF-8: with such a value every series carrying the Hostname
// label would be dropped from each scrape while /metrics still answered 200.
// The name is refused rather than repaired so that the label always equals the
// node's real name, which dashboards join on.
func checkHostname(h string) error {
	if !utf8.ValidString(h) {
		return fmt.Errorf("--hostname %q is not valid UTF-8 (Prometheus label values must be)", h)
	}
	return nil
}

// checkWebConfig reads the --web.config.file once, capped and regular files
// only, and validates it, so a bad file is a start-up error naming it.
func checkWebConfig(file string) error {
	if file == "" {
		return nil
	}
	if _, err := smallfile.Read(file, maxWebConfigBytes); err != nil {
		return fmt.Errorf("--web.config.file: %w", err)
	}
	if err := web.Validate(file); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", file, err)
	}
	return nil
}
