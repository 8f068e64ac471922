package main

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
)

// The bcrypt hash (cost 4) of authPassword, the password of user "alice".
const (
	authHash     = "$2a$04$UDiodlbLOeS9KKDWFlGBiOuIucrgXO03wTN/Y6QixIHOSZHy.6R8G"
	authPassword = "s3cret-pass"
)

// authServers is the exporter's web serving (listenWeb and serveWeb) for a
// test, with a metrics registry behind it.
type authServers struct {
	urls   []string     // one per listener: scheme, host and port
	client *http.Client // trusts the test's certificate
	log    *syncBuffer  // the failed-attempt log only, without times
	now    atomic.Int64 // the failed-attempt log's clock, Unix nanoseconds
	failed *authFailures
}

// serveAuth serves a registry holding one counter on n loopback listeners,
// with webConfig's settings, until the test ends. certPool is nil for HTTP.
func serveAuth(t *testing.T, n int, webConfig string, certPool *x509.CertPool) *authServers {
	t.Helper()
	a := &authServers{log: &syncBuffer{}}
	a.now.Store(time.Unix(1000, 0).UnixNano())
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:0"
	}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}
	toolkitLog := slog.New(slog.DiscardHandler)
	listeners, err := listenWeb(flags, toolkitLog)
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http"
	if certPool != nil {
		scheme = "https"
	}
	for _, l := range listeners {
		a.urls = append(a.urls, scheme+"://"+l.Addr().String())
	}
	reg := prometheus.NewRegistry()
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_requests_total", Help: "A counter behind basic auth."})
	counter.Add(7)
	reg.MustRegister(counter)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	logger := slog.New(slog.NewTextHandler(a.log, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, attr slog.Attr) slog.Attr {
			if attr.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return attr
		},
	}))
	a.failed = newAuthFailures(logger, func() time.Time { return time.Unix(0, a.now.Load()) })
	servers := serveWeb(listeners, mux, 10*time.Second, flags, toolkitLog, a.failed)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certPool}}
	a.client = &http.Client{Transport: transport, Timeout: time.Minute}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := servers.Shutdown(ctx); err != nil {
			t.Errorf("shut down: %v", err)
		}
		for range listeners {
			if err := <-servers.errc; err != http.ErrServerClosed {
				t.Errorf("serve: %v, want %v", err, http.ErrServerClosed)
			}
		}
	})
	return a
}

// advance moves the failed-attempt log's clock on by d.
func (a *authServers) advance(d time.Duration) { a.now.Add(int64(d)) }

// get requests /metrics from the i-th listener with the given credentials
// (none when user is empty) and returns the status and the body, gunzipped.
func (a *authServers) get(t *testing.T, i int, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.urls[i]+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	req.Header.Set("Accept-Encoding", "gzip") // promhttp's compressed path
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// wantFailures fails the test unless gputally_web_auth_failures_total is n.
func (a *authServers) wantFailures(t *testing.T, n float64) {
	t.Helper()
	if got := testutil.ToFloat64(a.failed.total); got != n {
		t.Errorf("gputally_web_auth_failures_total %v, want %v", got, n)
	}
}

// lines returns the failed-attempt log's lines.
func (a *authServers) lines() []string {
	return strings.Split(strings.TrimSuffix(a.log.String(), "\n"), "\n")
}

// writeWebConfig writes a web config with user alice and extra (YAML) and
// returns its path.
func writeWebConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, []byte(extra+"basic_auth_users:\n  alice: "+authHash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// failedLine matches the log line of a failed attempt by user, with the
// suppressed count when it is not empty.
func failedLine(user, suppressed string) *regexp.Regexp {
	s := `^level=WARN msg="basic auth failed" remote=127\.0\.0\.1:\d+ user=` + regexp.QuoteMeta(user)
	if suppressed != "" {
		s += " suppressed=" + suppressed
	}
	return regexp.MustCompile(s + "$")
}

// TestAuthFailuresLogged: a wrong password is answered 401 and logged once,
// naming the user and not the password; more inside the interval are counted,
// not logged, and the next line says how many; the right password, and no
// credentials at all, are not logged. It fails if exporter-toolkit stops
// installing its handler before the first Accept (authWatchListener).
func TestAuthFailuresLogged(t *testing.T) {
	a := serveAuth(t, 1, writeWebConfig(t, t.TempDir(), ""), nil)

	if code, _ := a.get(t, 0, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", code)
	}
	if got := a.log.String(); got != "" {
		t.Fatalf("no credentials logged:\n%s", got)
	}
	code, body := a.get(t, 0, "alice", authPassword)
	if code != http.StatusOK || !strings.Contains(body, "test_requests_total 7") {
		t.Fatalf("right password: %d, want 200 and the counter\n%s", code, body)
	}
	if got := a.log.String(); got != "" {
		t.Fatalf("right password logged:\n%s", got)
	}
	a.wantFailures(t, 0)

	if code, _ := a.get(t, 0, "alice", "wrong-guess-0"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	lines := a.lines()
	if len(lines) != 1 || !failedLine("alice", "").MatchString(lines[0]) {
		t.Fatalf("after one wrong password, log:\n%s\nwant one line matching %s", a.log, failedLine("alice", ""))
	}
	a.wantFailures(t, 1)
	// 9 more inside the interval, one by an unknown user, all answered 401.
	for i := range 9 {
		user := "alice"
		if i == 4 {
			user = "mallory"
		}
		a.advance(time.Second - time.Millisecond)
		if code, _ := a.get(t, 0, user, "wrong-guess-"+strconv.Itoa(i+1)); code != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i+1, code)
		}
	}
	if n := len(a.lines()); n != 1 {
		t.Fatalf("%d lines inside the interval, want 1:\n%s", n, a.log)
	}
	a.wantFailures(t, 10) // counted, unlike logged, every time
	// The right password inside the interval neither logs nor counts.
	if code, _ := a.get(t, 0, "alice", authPassword); code != http.StatusOK {
		t.Fatalf("right password after failures: %d, want 200", code)
	}
	a.wantFailures(t, 10)
	a.advance(authFailLogEvery)
	if code, _ := a.get(t, 0, "mallory", "x"); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d, want 401", code)
	}
	lines = a.lines()
	if len(lines) != 2 || !failedLine("mallory", "9").MatchString(lines[1]) {
		t.Fatalf("log:\n%s\nwant a second line matching %s", a.log, failedLine("mallory", "9"))
	}
	a.wantFailures(t, 11)
	if strings.Contains(a.log.String(), "wrong-guess") || strings.Contains(a.log.String(), authPassword) {
		t.Errorf("the log holds a password:\n%s", a.log)
	}
}

// TestAuthFailuresLoggedOverTLS: the same wrap works when exporter-toolkit
// serves TLS (ServeTLS accepts through tls.Listener).
func TestAuthFailuresLoggedOverTLS(t *testing.T) {
	dir := t.TempDir()
	pool := writeTestCert(t, dir)
	a := serveAuth(t, 1, writeWebConfig(t, dir, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"), pool)
	if !strings.HasPrefix(a.urls[0], "https://") {
		t.Fatalf("url %s", a.urls[0])
	}
	if code, _ := a.get(t, 0, "alice", authPassword); code != http.StatusOK {
		t.Fatalf("right password: %d, want 200", code)
	}
	if code, _ := a.get(t, 0, "alice", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	if lines := a.lines(); len(lines) != 1 || !failedLine("alice", "").MatchString(lines[0]) {
		t.Errorf("log:\n%s\nwant one line matching %s", a.log, failedLine("alice", ""))
	}
	a.wantFailures(t, 1)
}

// TestAuthFailuresLoggedOnEveryListener: with two --web.listen-address values
// both serve, with one server each (no shared *http.Server for the race
// detector to catch), and both log failures into the one rate-limited log.
func TestAuthFailuresLoggedOnEveryListener(t *testing.T) {
	a := serveAuth(t, 2, writeWebConfig(t, t.TempDir(), ""), nil)
	for i := range a.urls {
		if code, _ := a.get(t, i, "alice", authPassword); code != http.StatusOK {
			t.Fatalf("listener %d, right password: %d, want 200", i, code)
		}
	}
	for i := range a.urls {
		if code, _ := a.get(t, i, "alice", "wrong"); code != http.StatusUnauthorized {
			t.Fatalf("listener %d, wrong password: %d, want 401", i, code)
		}
		if lines := a.lines(); len(lines) != i+1 || !failedLine("alice", "").MatchString(lines[i]) {
			t.Fatalf("after a failure on listener %d, log:\n%s", i, a.log)
		}
		a.advance(authFailLogEvery)
	}
	a.wantFailures(t, 2)
}

// TestListenWebBadAddress: a bad or busy address is bad input, and the
// listeners opened before it are closed.
func TestListenWebBadAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free := freeAddr(t)
	for _, bad := range []string{"no-port", busy.Addr().String(), "vsock://:notaport"} {
		addrs := []string{free, bad}
		systemd := false
		webConfig := ""
		_, err := listenWeb(&web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}, slog.New(slog.DiscardHandler))
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want bad input naming it", bad, err)
		}
		// The first address was opened and must be free again.
		l, err := net.Listen("tcp", free)
		if err != nil {
			t.Fatalf("after %s, %s is still taken: %v", bad, free, err)
		}
		l.Close()
	}
}

// TestTruncateUTF8 cuts at a rune boundary.
func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"alice", 64, "alice"},
		{"alice", 3, "ali"},
		{"aé", 2, "a"}, // é is two bytes
		{"aé", 3, "aé"},
	} {
		if got := truncateUTF8(c.in, c.n); got != c.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its key to
// dir/cert.pem and dir/key.pem and returns a pool trusting it.
func writeTestCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "gputally test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestSystemdSocketActivation: with --web.systemd-socket the exporter serves on
// the socket it is handed as systemd hands it (fd 3, LISTEN_FDS, LISTEN_PID),
// behind basic authentication, and logs a failed attempt there too.
func TestSystemdSocketActivation(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	f, err := l.(*net.TCPListener).File() // a duplicate: the child's fd 3
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	webConfig := writeWebConfig(t, t.TempDir(), "")
	// The shell's pid is the exporter's after exec, as LISTEN_PID must be.
	cmd := exec.Command("/bin/sh", "-c", `export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"`,
		binary, "exporter", "--backend=sim", "--web.systemd-socket", "--web.config.file="+webConfig)
	cmd.ExtraFiles = []*os.File{f}
	logs := startLogged(t, cmd)
	waitFor(t, func() bool { return getFrom(t, addr, "/-/healthy", "alice", authPassword, nil) == http.StatusOK })
	if code := getFrom(t, addr, "/-/healthy", "alice", "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	// The line is written before the 401 is sent, but reaches logs through a pipe.
	waitFor(t, func() bool { return strings.Contains(logs.String(), `msg="basic auth failed"`) })
	if !strings.Contains(logs.String(), "systemd activated listeners") {
		t.Errorf("no word of systemd's listeners in the log:\n%s", logs)
	}
}

// startLogged starts cmd with its output in the returned buffer and kills it
// when t ends.
func startLogged(t *testing.T, cmd *exec.Cmd) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return logs
}
