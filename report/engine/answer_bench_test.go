package engine

import (
	"runtime"
	"testing"

	"github.com/gputally/gputally/report/internal/hugeanswer"
)

// BenchmarkDecodeAnswer decodes a 64 MiB matrix answer made as it is read
// (report/internal/hugeanswer: dcgm-exporter-like series of 96 samples). It
// reports what the decoded answer holds live per byte of its text
// (live-B/answer-B, after a GC, the matrix kept): the memory one answer in
// flight costs per byte of --query.max-answer-bytes, which sizes the cap's
// default (AnswerCap). docs/performance.md has the figures.
//
//	go test -run '^$' -bench DecodeAnswer -benchmem ./report/engine
func BenchmarkDecodeAnswer(b *testing.B) {
	const size = 64 << 20
	var live float64
	b.SetBytes(size)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, _, err := decodeAnswer(200, hugeanswer.Reader(size))
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = float64(after.HeapAlloc-before.HeapAlloc) / size
		runtime.KeepAlive(m)
	}
	b.ReportMetric(live, "live-B/answer-B")
}
