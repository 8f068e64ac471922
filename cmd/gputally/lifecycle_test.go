package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalsDuringStartup sends SIGHUPs to the exporter from the moment its
// simulated kubelet exists (well inside start-up, long before it is ready)
// until it is ready: it must survive them all, and a SIGTERM then stops it
// with exit 0 and its temporary directory removed. Before the fix SIGHUP's
// default action killed the process and left the directory behind.
func TestSignalsDuringStartup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			addr := freeAddr(t)
			cmd := exec.Command(binary, "exporter", "--backend=sim", "--collector.interval=100ms", "--web.listen-address="+addr)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var logs syncBuffer // written by the process while a failing test may read it
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var exitErr error
			exited := make(chan struct{})
			go func() {
				exitErr = cmd.Wait()
				close(exited)
			}()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			waitExit := func() {
				t.Helper()
				select {
				case <-exited:
					if exitErr != nil {
						t.Fatalf("exit: %v, want 0\n%s", exitErr, &logs)
					}
				case <-time.After(time.Minute):
					t.Fatalf("still running a minute after SIGTERM\n%s", &logs)
				}
			}
			// Wait for the kubelet's directory: from then on the process is
			// inside the exporter's start-up.
			deadline := time.Now().Add(time.Minute)
			for entries, _ := os.ReadDir(tmp); len(entries) == 0; entries, _ = os.ReadDir(tmp) {
				if time.Now().After(deadline) {
					t.Fatalf("no temporary directory after a minute\n%s", &logs)
				}
				time.Sleep(time.Millisecond) // polling a process we do not control
			}
			if sig == syscall.SIGTERM {
				_ = cmd.Process.Signal(sig)
				waitExit()
				assertEmpty(t, tmp)
				return
			}
			for sent := 0; ; sent++ {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatalf("after %d SIGHUPs: %v\n%s", sent, err, &logs)
				}
				select {
				case <-exited:
					t.Fatalf("the exporter died of SIGHUP number %d during start-up: %v\n%s", sent+1, exitErr, &logs)
				default:
				}
				if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("not ready after a minute\n%s", &logs)
				}
				time.Sleep(time.Millisecond) // polling a process we do not control
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			waitExit()
			assertEmpty(t, tmp)
		})
	}
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}

// TestFIFOPriceBookNeitherHangsReloadNorShutdown replaces a good price book by
// a FIFO nobody writes: POST /-/reload answers 500 at once (it used to hang
// forever), SIGHUP is refused the same way, and SIGTERM still stops the process.
func TestFIFOPriceBookNeitherHangsReloadNorShutdown(t *testing.T) {
	book := filepath.Join(t.TempDir(), "book.yaml")
	if err := os.WriteFile(book, []byte(strings.Replace(bookH100, "%s", "30000", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, "--backend=sim", "--collector.interval=100ms", "--cost.price-book="+book)
	if err := os.Remove(book); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(book, 0o644); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute} // a hang ends the test, not the suite
	reload := func() {
		t.Helper()
		resp, err := client.Post("http://"+e.addr+"/-/reload", "", nil)
		if err != nil {
			t.Fatalf("reload of a FIFO: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "a FIFO") {
			t.Errorf("reload of a FIFO answered %s %q, want 500 naming the FIFO", resp.Status, body)
		}
	}
	reload()
	// A reload holds the book's lock: had the SIGHUP's reload hung on the
	// FIFO, the next POST would hang behind it.
	if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reload()
	if v, _ := sum(e.scrape(t), "gputally_config_last_reload_successful", nil); v != 0 {
		t.Errorf("gputally_config_last_reload_successful %v after a FIFO, want 0", v)
	}
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.exited:
		if e.exitErr != nil {
			t.Errorf("exit after SIGTERM: %v, want 0\n%s", e.exitErr, e.logs)
		}
	case <-time.After(time.Minute):
		t.Fatal("still running a minute after SIGTERM: shutdown waits on something")
	}
}

// TestReloadMethods: /-/reload answers 405 with Allow: POST to anything but POST.
func TestReloadMethods(t *testing.T) {
	e := startExporter(t, "--backend=sim", "--collector.interval=100ms")
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, err := http.NewRequest(method, "http://"+e.addr+"/-/reload", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s /-/reload: %s, Allow %q; want 405, Allow POST", method, resp.Status, resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Post("http://"+e.addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /-/reload: %s, want 200", resp.Status)
	}
}

// TestValidWebConfigStarts: the start-up check of --web.config.file accepts a
// good file, and the exporter then serves behind its basic authentication on
// each of two listen addresses, logging and counting a failed attempt
// (webserve_test.go tests the logging in detail).
func TestValidWebConfigStarts(t *testing.T) {
	// exporter-toolkit's bcrypt hash (cost 10) of "fakepassword".
	const hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("basic_auth_users:\n  alice: "+hash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, addr2 := freeAddr(t), freeAddr(t)
	logs := startLogged(t, exec.Command(binary, "exporter", "--backend=sim", "--web.listen-address="+addr, "--web.listen-address="+addr2, "--web.config.file="+webConfig))
	get := func(user, pass string) int {
		return getFrom(t, addr, "/-/ready", user, pass, nil)
	}
	waitFor(t, func() bool { return get("alice", "fakepassword") == http.StatusOK })
	if code := getFrom(t, addr2, "/-/ready", "alice", "fakepassword", nil); code != http.StatusOK {
		t.Errorf("second listen address: %d, want 200", code)
	}
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code := get("alice", "guess"); code != http.StatusUnauthorized {
		t.Errorf("with a wrong password: %d, want 401", code)
	}
	// The line is written before the 401 is sent, but reaches logs through a pipe.
	waitFor(t, func() bool { return strings.Contains(logs.String(), `msg="basic auth failed"`) })
	if l := logs.String(); !regexp.MustCompile(`level=WARN .*msg="basic auth failed" remote=127\.0\.0\.1:\d+ user=alice\n`).MatchString(l) || strings.Count(l, "basic auth failed") != 1 || strings.Contains(l, "guess") {
		t.Errorf("want one WARN line naming alice and not the password:\n%s", l)
	}
	var metrics strings.Builder
	if code := getFrom(t, addr2, "/metrics", "alice", "fakepassword", &metrics); code != http.StatusOK {
		t.Fatalf("/metrics: %d, want 200", code)
	}
	if !strings.Contains(metrics.String(), "\ngputally_web_auth_failures_total 1\n") {
		t.Errorf("want gputally_web_auth_failures_total 1 in:\n%s", metrics.String())
	}
}

// getFrom requests path from addr over HTTP with basic-auth credentials (none
// when user is empty) and returns the status, 0 when the request failed or
// got no answer within 10s (a listener nobody accepts on); the body goes to
// body when not nil.
func getFrom(t *testing.T, addr, path, user, pass string, body io.Writer) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if body != nil {
		if _, err := io.Copy(body, resp.Body); err != nil {
			return 0
		}
	}
	return resp.StatusCode
}
