// Package hugeanswer makes the answers of a Prometheus-compatible API to a
// range query at any size, gigabytes included, as they are read: never held
// in memory. They are the answers the report's cap on an answer
// (--query.max-answer-bytes) is for.
package hugeanswer

import (
	"fmt"
	"io"
	"strconv"
)

const (
	head = `{"status":"success","data":{"resultType":"matrix","result":[`
	tail = `]}}`
	// samplesPerSeries is the samples of each series: a day of 15-minute steps.
	samplesPerSeries = 96
	// firstTime is the time of each series' first sample, 2026-01-05T00:00:00Z.
	firstTime = 1767571200
)

// Reader returns a matrix answer of exactly size bytes (or of the least a
// matrix of one series takes, when size is less): copies of a
// dcgm-exporter-like series of 96 samples, each with its own UUID, then as
// much white space as makes the size. Not safe for concurrent use.
func Reader(size int64) io.Reader {
	return &reader{left: max(size, int64(len(head)+len(series(nil, 0))+len(tail)))}
}

type reader struct {
	left    int64  // bytes still to be read
	pending []byte // made, not yet read
	buf     []byte // the piece being made, reused
	series  int    // series made
	ended   bool   // the tail is made
}

func (r *reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.left > 0 {
		if len(r.pending) == 0 {
			r.next()
		}
		c := copy(p[n:], r.pending)
		r.pending, r.left, n = r.pending[c:], r.left-int64(c), n+c
	}
	if n == 0 && r.left == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// next makes the answer's next piece: its head, a series while one more
// fits, white space, its tail.
func (r *reader) next() {
	switch {
	case r.series == 0:
		r.buf = series(append(r.buf[:0], head...), 0)
		r.pending = r.buf
		r.series++
	case r.ended:
		panic("hugeanswer: read past the end") // left says the answer is over
	default:
		r.buf = series(append(r.buf[:0], ','), r.series)
		if r.left-int64(len(r.buf)) >= int64(len(tail)) {
			r.pending = r.buf
			r.series++
			return
		}
		// What is left is shorter than a series and the tail: pad it.
		pad := r.left - int64(len(tail))
		if pad == 0 {
			r.pending, r.ended = []byte(tail), true
			return
		}
		r.buf = r.buf[:0]
		for range min(pad, 64<<10) {
			r.buf = append(r.buf, ' ')
		}
		r.pending = r.buf
	}
}

// series appends the text of series i to b.
func series(b []byte, i int) []byte {
	b = fmt.Appendf(b, `{"metric":{"__name__":"DCGM_FI_PROF_GR_ENGINE_ACTIVE","UUID":"GPU-%012d","gpu":"%d","Hostname":"node-%06d",`+
		`"modelName":"NVIDIA H100 80GB HBM3","namespace":"ml-team-%d","pod":"train-%09d","container":"main","job":"dcgm-exporter",`+
		`"instance":"10.0.%d.%d:9400"},"values":[`, i, i%8, i/8, i%7, i, i/8%256, i/2048%256)
	for s := range samplesPerSeries {
		if s > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, firstTime+int64(s)*900, 10)
		// A value 0.000000–0.999999: 1,000,000 + the fraction, written from its second digit.
		b = append(b, `,"0.`...)
		b = strconv.AppendInt(b, int64(1_000_000+(i*7919+s*104729)%1_000_000), 10)
		b = append(b[:len(b)-7], b[len(b)-6:]...)
		b = append(b, `"]`...)
	}
	return append(b, "]}"...)
}
