package report

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/gputally/gputally/memlimit"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/hugeanswer"
)

// TestAnswerCap: the flag wins; without it a quarter of the memory limit
// shared by the answers in flight, at most 256 MiB, which is also the cap
// without a limit.
func TestAnswerCap(t *testing.T) {
	const mib = 1 << 20
	limit := func(n int64) memlimit.Limit { return memlimit.Limit{Bytes: n, From: "GOMEMLIMIT"} }
	for _, tc := range []struct {
		name     string
		flag     int64
		limit    memlimit.Limit
		inFlight int
		want     int64
	}{
		{"the flag wins", 100, limit(512 * mib), 2, 100},
		{"no limit", 0, memlimit.Limit{}, 2, 256 * mib},
		{"512 MiB, 2 in flight: 512 / 4 / 2", 0, limit(512 * mib), 2, 64 * mib},
		{"480 MiB, 2 in flight: 480 / 4 / 2", 0, limit(480 * mib), 2, 60 * mib},
		{"100 MiB, 1 in flight: 100 / 4", 0, limit(100 * mib), 1, 25 * mib},
		{"2 GiB, 2 in flight: 2048 / 4 / 2, the most", 0, limit(2048 * mib), 2, 256 * mib},
		{"64 GiB: at most 256 MiB", 0, limit(64 << 30), 2, 256 * mib},
	} {
		if got := AnswerCap(tc.flag, tc.limit, tc.inFlight); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestHugeAnswerRefusedWithinCap: under a 64 MiB memory limit, with the
// defaults (2 requests in flight), every answer is read up to 64 / 4 / 2 =
// 8 MiB (8,388,608 bytes): an engine answering each query with 256 MiB has
// each answer abandoned, never read whole, and the report ends in the error
// naming that cap and the flag, and says the cap it derived.
func TestHugeAnswerRefusedWithinCap(t *testing.T) {
	var mu sync.Mutex
	whole := 0 // answers written to their end
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.Copy(w, hugeanswer.Reader(256<<20)); err == nil {
			mu.Lock()
			whole++
			mu.Unlock()
		}
	}))
	defer srv.Close()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	cfg := testConfig()
	cfg.PrometheusURL = srv.URL
	cfg.Out = filepath.Join(t.TempDir(), "report.html")
	if cfg.MaxAnswerBytes != 0 || cfg.QueriesInFlight != 2 {
		t.Fatalf("defaults: max answer bytes %d, %d in flight; want 0 (derived) and 2", cfg.MaxAnswerBytes, cfg.QueriesInFlight)
	}
	var log bytes.Buffer
	err := Run(context.Background(), cfg, slog.New(slog.NewTextHandler(&log, nil)))
	var tooLarge *engine.AnswerTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 8<<20 ||
		!strings.Contains(err.Error(), "larger than 8388608 bytes (8.0 MiB, --query.max-answer-bytes), even for the one step") {
		t.Errorf("%v, want the *AnswerTooLargeError of the 8 MiB cap at one step, naming the flag", err)
	}
	if !strings.Contains(log.String(), "max_answer_bytes=8388608") || !strings.Contains(log.String(), "GOMEMLIMIT 64 MiB") {
		t.Errorf("log %q, want the cap derived from GOMEMLIMIT", log.String())
	}
	srv.Close() // waits for the handlers
	if whole > 0 {
		t.Errorf("%d answers of 256 MiB were read to their end, want each abandoned at the cap", whole)
	}
}
