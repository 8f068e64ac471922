package report

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gputally/gputally/report/source"
)

// BenchmarkReport1000GPUs7Days generates a report over 1,000 GPUs × 7 days of
// exporter history (synth_test.go, 30 s scrapes unless
// GPUTALLY_BENCH_SCRAPE_SECONDS says otherwise; GPUTALLY_BENCH_GPUS changes
// the fleet) through the embedded PromQL engine. It reports the samples stored,
// the heap the store holds, the peak heap the report adds to it (sampled
// every 5 ms) and the process's peak RSS (store building included).
func BenchmarkReport1000GPUs7Days(b *testing.B) {
	gpus, scrape := 1000, 30*time.Second
	if v, err := strconv.Atoi(os.Getenv("GPUTALLY_BENCH_GPUS")); err == nil && v > 0 {
		gpus = v
	}
	if v, err := strconv.Atoi(os.Getenv("GPUTALLY_BENCH_SCRAPE_SECONDS")); err == nil && v > 0 {
		scrape = time.Duration(v) * time.Second
	}
	ticks := int(7 * 24 * time.Hour / scrape)
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	fams, _ := synthFleet(gpus, scrape, ticks)
	sb := NewStoreBuilder()
	if err := appendFleet(sb, fams, start, scrape, ticks); err != nil {
		b.Fatal(err)
	}
	samples := sb.Samples()
	st := sb.Store()
	fams, sb = nil, nil
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	storeHeap := heap[0].Value.Uint64()

	cfg := DefaultConfig()
	cfg.End = start.Add(7 * 24 * time.Hour)
	q := source.NewEngineQuerier(st, 10*time.Minute, discard())
	// Sample the live heap while the report runs: its peak above the store's
	// heap is what the report itself holds (its queries, results and analysis).
	done := make(chan struct{})
	peak := make(chan uint64, 1)
	go func() {
		var max uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > max {
				max = v
			}
			select {
			case <-done:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		r, err := Generate(context.Background(), cfg, cfg.ledger(q), discard())
		if err != nil {
			b.Fatal(err)
		}
		if r.GPUs != gpus {
			b.Fatalf("report counts %d GPUs, want %d", r.GPUs, gpus)
		}
	}
	b.StopTimer()
	close(done)
	if p := <-peak; p > storeHeap {
		b.ReportMetric(float64(p-storeHeap)/(1<<20), "report-peak-heap-MiB")
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MiB") // Linux: KiB
	}
	b.ReportMetric(float64(samples), "samples")
	b.ReportMetric(float64(storeHeap)/(1<<20), "store-heap-MiB")
}
