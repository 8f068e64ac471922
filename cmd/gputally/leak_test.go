package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// openFDs counts the open file descriptors of this process.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// TestExporterLeaksNothing runs the exporter in this process, scrapes it, stops
// it, and checks that its goroutines and file descriptors are gone.
func TestExporterLeaksNothing(t *testing.T) {
	// The runtime's signal loop starts with the first signal.Notify and never
	// ends; start it before counting.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	signal.Stop(sig)
	http.DefaultClient.CloseIdleConnections()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"exporter", "--backend=sim", "--collector.interval=100ms", "--web.listen-address=" + addr}, &logs, &logs, nil)
	}()
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for range 20 {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exporter exited %d:\n%s", code, &logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exporter did not stop within 15s of its context ending")
	}
	// Connections close asynchronously; poll until the counts come back.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines || openFDs(t) > fds {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("leak: goroutines %d (before %d), fds %d (before %d)\n%s",
				runtime.NumGoroutine(), goroutines, openFDs(t), fds, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond) // waiting on the runtime, not on our code
	}
}
