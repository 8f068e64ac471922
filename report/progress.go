package report

import (
	"fmt"
	"io"
	"os"
)

// Progress writes a progress line to a writer: on a terminal one line redrawn
// in place, elsewhere (a log file, a pod's log) one line per update. A
// Progress on a nil writer, and a nil *Progress, write nothing. It is not safe
// for concurrent use.
type Progress struct {
	w      io.Writer
	redraw bool
	drawn  bool // a redrawn line is open
}

// NewProgress returns a Progress on w, which may be nil.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, redraw: isTerminal(w)}
}

// Redraws reports whether each update replaces the previous one on screen, so
// that frequent updates cost no lines.
func (p *Progress) Redraws() bool { return p != nil && p.redraw }

// Update shows line.
func (p *Progress) Update(line string) {
	switch {
	case p == nil || p.w == nil:
	case p.redraw:
		fmt.Fprintf(p.w, "\r%-72s", line)
		p.drawn = true
	default:
		fmt.Fprintln(p.w, line)
	}
}

// End ends a redrawn line, so that what follows starts on a line of its own.
func (p *Progress) End() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// isTerminal reports whether w is a character device (a terminal), where a
// progress line can be redrawn; in a log file or a pod's log it cannot.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
