package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
)

// authFailLogEvery is the least time between two log lines about failed
// basic-auth attempts (docs/reliability.md).
const authFailLogEvery = 10 * time.Second

// maxLoggedUserBytes caps the user name a failed attempt's log line repeats:
// the name is the client's, and a request header may hold a megabyte.
const maxLoggedUserBytes = 64

// webServers serves one handler on every listener of the exporter, one
// *http.Server per listener, each through exporter-toolkit's web.Serve, which
// adds TLS, basic authentication, rate_limit and headers from --web.config.file.
// exporter-toolkit's own ListenAndServe instead runs Serve concurrently on one
// *http.Server, each goroutine writing its Handler and TLSConfig: a data race.
// Its methods are safe for concurrent use.
type webServers struct {
	servers []*http.Server
	serving sync.WaitGroup // the goroutines running web.Serve
	// errc receives each web.Serve's error; buffered for all, never blocks.
	errc chan error
}

// listenWeb opens the listeners flags name: systemd's sockets with
// --web.systemd-socket, else each --web.listen-address, "vsock://:PORT" on
// vsock and anything else on TCP, as exporter-toolkit's ListenAndServe does. A
// bad or busy address is bad input (exit 2); on any error the listeners already
// opened are closed.
func listenWeb(flags *web.FlagConfig, logger *slog.Logger) ([]net.Listener, error) {
	if flags.WebSystemdSocket != nil && *flags.WebSystemdSocket {
		logger.Info("Listening on systemd activated listeners instead of port listeners.")
		all, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("systemd socket activation: %w", err)
		}
		var listeners []net.Listener
		for _, l := range all {
			if l != nil { // a passed descriptor that is not a listening socket
				listeners = append(listeners, l)
			}
		}
		if len(listeners) == 0 {
			return nil, errors.New("--web.systemd-socket: no socket activation file descriptors found")
		}
		return listeners, nil
	}
	if flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return nil, badInput(web.ErrNoListeners)
	}
	var listeners []net.Listener
	for _, address := range *flags.WebListenAddresses {
		l, err := listen(address)
		if err != nil {
			for _, opened := range listeners {
				opened.Close()
			}
			return nil, badInput(fmt.Errorf("--web.listen-address %s: %w", address, err))
		}
		listeners = append(listeners, l)
	}
	return listeners, nil
}

// listen opens one --web.listen-address.
func listen(address string) (net.Listener, error) {
	if !strings.HasPrefix(address, "vsock://") {
		return net.Listen("tcp", address)
	}
	port, err := vsockPort(address)
	if err != nil {
		return nil, err
	}
	return vsock.Listen(port, nil)
}

// vsockPort returns the port of a "vsock://:PORT" address.
func vsockPort(address string) (uint32, error) {
	uri, err := url.Parse(address)
	if err != nil {
		return 0, err
	}
	_, portStr, err := net.SplitHostPort(uri.Host)
	if err != nil {
		return 0, err
	}
	port, err := strconv.ParseUint(portStr, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("vsock port %q: %w", portStr, err)
	}
	return uint32(port), nil
}

// serveWeb serves h on each listener, with newHTTPServer's timeouts for
// scrapeTimeout, and records failed basic-auth attempts in authFailed. It
// returns at once; web.Serve's errors arrive on errc, and each listener is
// closed when its server stops.
func serveWeb(listeners []net.Listener, h http.Handler, scrapeTimeout time.Duration, flags *web.FlagConfig, logger *slog.Logger, authFailed *authFailures) *webServers {
	s := &webServers{errc: make(chan error, len(listeners))}
	for _, l := range listeners {
		srv := newHTTPServer(h, scrapeTimeout)
		s.servers = append(s.servers, srv)
		watched := &authWatchListener{Listener: l, wrap: func() {
			srv.Handler = authFailureHandler{next: srv.Handler, failed: authFailed}
		}}
		s.serving.Go(func() {
			err := web.Serve(watched, srv, flags, logger)
			l.Close() // web.Serve returns before serving on a bad config file
			s.errc <- err
		})
	}
	return s
}

// Shutdown shuts every server down gracefully (http.Server.Shutdown) and waits
// for its web.Serve to return, all until ctx ends.
func (s *webServers) Shutdown(ctx context.Context) error {
	var (
		mu   sync.Mutex
		errs []error
		all  sync.WaitGroup
	)
	for _, srv := range s.servers {
		all.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	all.Wait()
	served := make(chan struct{})
	go func() {
		s.serving.Wait()
		close(served)
	}()
	select {
	case <-served:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("wait for the servers to stop: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// Close closes every server at once (http.Server.Close), for when one failed.
func (s *webServers) Close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

// authWatchListener wraps its server's Handler with an authFailureHandler on
// its first Accept.
//
// Why in Accept: exporter-toolkit's web.Serve (v0.20.0) replaces
// server.Handler with its own unexported handler, which answers 401 to failed
// basic authentication before ours runs, and offers no hook. web.Serve then
// calls server.Serve or server.ServeTLS, which calls this Accept (through
// tls.Listener's) from the same goroutine, after the toolkit set its handler
// and before the first connection, whose goroutine reads server.Handler, can
// exist. So the wrap sees the toolkit's handler, sits outside it, and
// happens-before every read of it, without a lock. Tests
// (TestAuthFailuresLogged, TestAuthFailuresLoggedOverTLS) fail if a toolkit
// upgrade changes this order.
type authWatchListener struct {
	net.Listener
	once sync.Once
	wrap func()
}

// Accept wraps the handler on its first call, then accepts.
func (l *authWatchListener) Accept() (net.Conn, error) {
	l.once.Do(l.wrap)
	return l.Listener.Accept()
}

// authFailures records failed basic-auth attempts: each one counts in total,
// and log writes at most one line per authFailLogEvery, naming the client's
// address and the user name it gave, never the password. Safe for concurrent use.
type authFailures struct {
	log   *limitedLog
	total prometheus.Counter
}

// newAuthFailures logs to logger at WARN, reading the time from now (time.Now
// when nil). Register total to serve it.
func newAuthFailures(logger *slog.Logger, now func() time.Time) *authFailures {
	return &authFailures{
		log: newLimitedLog(logger, slog.LevelWarn, "basic auth failed", authFailLogEvery, now),
		total: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gputally_web_auth_failures_total",
			Help: "Requests that carried basic-auth credentials and were answered 401.",
		}),
	}
}

// record counts and logs one failed attempt from remote by user.
func (a *authFailures) record(remote, user string) {
	a.total.Inc()
	a.log.log("remote", remote, "user", truncateUTF8(user, maxLoggedUserBytes))
}

// authFailureHandler records a failed basic-auth attempt: a request that
// carried credentials answered 401. A request without credentials (a
// browser's first) is not an attempt. Safe for concurrent use.
type authFailureHandler struct {
	next   http.Handler
	failed *authFailures
}

func (h authFailureHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, _, carried := r.BasicAuth()
	if !carried {
		h.next.ServeHTTP(w, r)
		return
	}
	h.next.ServeHTTP(&authFailureWriter{ResponseWriter: w, failed: func() {
		h.failed.record(r.RemoteAddr, user)
	}}, r)
}

// authFailureWriter calls failed when its response's status is 401, before
// the status goes out: the attempt is recorded before the client can see the
// answer.
type authFailureWriter struct {
	http.ResponseWriter
	failed func()
}

func (w *authFailureWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.failed()
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer (Flush,
// deadlines); promhttp writes through Header and Write only.
func (w *authFailureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// truncateUTF8 returns at most n bytes of s, cut at a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
