package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// limitedLog writes one message at most once per interval and counts the
// writes it drops in between; the next line it writes says how many
// ("suppressed"). A fault that repeats for every metric family of every scrape
// (a scrape that timed out) costs one log line per interval, not megabytes.
// Safe for concurrent use.
type limitedLog struct {
	logger *slog.Logger
	level  slog.Level
	msg    string
	every  time.Duration
	now    func() time.Time

	mu         sync.Mutex
	next       time.Time // the earliest time of the next line
	suppressed int       // writes dropped since the last line
}

// newLimitedLog logs msg at level at most once per every, reading the time from
// now (time.Now when nil).
func newLimitedLog(logger *slog.Logger, level slog.Level, msg string, every time.Duration, now func() time.Time) *limitedLog {
	if now == nil {
		now = time.Now
	}
	return &limitedLog{logger: logger, level: level, msg: msg, every: every, now: now}
}

// log writes msg with args unless a line was written less than the interval ago.
func (l *limitedLog) log(args ...any) {
	l.mu.Lock()
	now := l.now()
	if now.Before(l.next) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.suppressed, l.next = 0, now.Add(l.every)
	l.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	l.logger.Log(context.Background(), l.level, l.msg, args...)
}

// Println implements promhttp.Logger: the error text goes in the "err" attribute.
func (l *limitedLog) Println(v ...any) {
	l.log("err", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
