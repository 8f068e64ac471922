//go:build fleetbench

package report

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gputally/gputally/report/internal/hugeanswer"
)

// hugeAnswerBytes is the answer the engine of TestFleetReportHugeAnswer gives
// to every query: 3 GB.
const hugeAnswerBytes = 3_000_000_000

// TestFleetReportHugeAnswer runs the `gputally report` binary with its
// defaults under GOMEMLIMIT=480MiB (the chart's 512Mi limit, less a margin)
// against an engine that answers every query with 3 GB of matrix, made as it
// is written (report/internal/hugeanswer), Content-Length set. The report
// must end with the error naming the cap and its flag, exit 1, and peak at
// most 512 MiB resident (getrusage of the child); it prints the peak, the
// wall time and the bytes the engine wrote. docs/performance.md has the row:
//
//	go test -tags fleetbench -count=1 -run FleetReportHugeAnswer -v ./report/
func TestFleetReportHugeAnswer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gputally")
	build := exec.Command("go", "build", "-o", bin, "../cmd/gputally")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var requests, written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(hugeAnswerBytes))
		n, _ := io.Copy(w, hugeanswer.Reader(hugeAnswerBytes))
		written.Add(n)
	}))
	defer srv.Close()
	cmd := exec.Command(bin, "report", "--prometheus.url="+srv.URL, "--format=json", "--out="+filepath.Join(t.TempDir(), "report.json"))
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=480MiB")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	wall := time.Since(began)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", err)
	}
	for _, want := range []string{"even for the one step", "--query.max-answer-bytes", "max_answer_bytes=62914560"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("standard error does not say %q:\n%s", want, stderr.String())
		}
	}
	peak := uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024 // Linux: KiB
	t.Logf("a 3 GB answer to every query, GOMEMLIMIT=480MiB, defaults: %v, wall %s, peak RSS %s, %d requests, %.1f MiB of answers written by the engine (load %s); standard error:\n%s",
		err, wall.Round(10*time.Millisecond), mib(peak), requests.Load(), float64(written.Load())/(1<<20), loadAverage(), stderr.String())
	if peak > 512<<20 {
		t.Errorf("peak RSS %s, over the 512 MiB budget", mib(peak))
	}
}
