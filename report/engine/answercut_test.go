package engine

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/internal/hugeanswer"
)

// TestOverCapAnswerAbandoned: an answer far over the cap (256 MiB, made as it
// is written) is an *AnswerTooLargeError once the cap is read, and its
// connection is closed: the engine's write fails long before the answer
// ends, after the cap and what the sockets buffer.
func TestOverCapAnswerAbandoned(t *testing.T) {
	const capBytes = 1 << 20
	written := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n, err := io.Copy(w, hugeanswer.Reader(256<<20))
		if err == nil {
			n = -1 // written whole: never abandoned
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	q, _ := NewHTTPQuerier(srv.URL, HTTPOptions{MaxAnswerBytes: capBytes})
	_, _, err := query(t, q)
	var tooLarge *AnswerTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != capBytes {
		t.Fatalf("%v, want the *AnswerTooLargeError of the 1 MiB cap", err)
	}
	select {
	case n := <-written:
		// Loopback sockets buffer a few MiB at most on either side.
		if n < capBytes || n > 64<<20 {
			t.Errorf("the engine wrote %d bytes of its answer before the connection closed, want the cap and the sockets' buffers", n)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the engine is still writing: the connection of an answer over the cap was not closed")
	}
}

// TestOneStepOverCapNamesTheCap: an answer over the cap is asked again in
// halves, 4 → 2 → 1 steps; at one step it is an error naming the cap, the
// step and the flag that raises it.
func TestOneStepOverCapNamesTheCap(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	q := &tooLargeAbove{steps: 0}
	r := &Runner{q: q, maxPoints: 4}
	err := r.Run(t.Context(), "x", "x", start, start.Add(3*time.Hour), time.Hour, nil)
	var steps []int
	for _, c := range q.calls {
		steps = append(steps, int(c[1].Sub(c[0])/time.Hour)+1)
	}
	if len(steps) != 3 || steps[0] != 4 || steps[1] != 2 || steps[2] != 1 {
		t.Errorf("requests of %v steps, want 4, 2, 1", steps)
	}
	var tooLarge *AnswerTooLargeError
	for _, want := range []string{"larger than 100 bytes", "--query.max-answer-bytes", "even for the one step at 2026-01-05T00:00:00Z", "more memory"} {
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want an *AnswerTooLargeError saying %q", err, want)
		}
	}
}
