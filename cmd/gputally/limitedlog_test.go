package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimitedLog: within an interval only the first write is a line; the next
// line after it says how many were dropped.
func TestLimitedLog(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	now := time.Unix(1000, 0)
	l := newLimitedLog(logger, slog.LevelError, "scrape failed", 10*time.Second, func() time.Time { return now })
	for range 40 { // one timed-out scrape: one error per metric family
		l.Println("error encoding and sending metric family:", "http: Handler timeout")
	}
	now = now.Add(9999 * time.Millisecond)
	l.Println("still inside the interval")
	now = now.Add(time.Millisecond)
	l.Println("next interval")
	want := `level=ERROR msg="scrape failed" err="error encoding and sending metric family: http: Handler timeout"
level=ERROR msg="scrape failed" err="next interval" suppressed=40
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
}
