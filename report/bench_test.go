package report

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
)

// BenchmarkReport1000GPUs7Days generates a report over 1,000 GPUs × 7 days of
// exporter history (synth_test.go, 30 s scrapes unless
// GPUTALLY_BENCH_SCRAPE_SECONDS says otherwise; GPUTALLY_BENCH_GPUS changes
// the fleet) through the embedded PromQL engine. It reports the samples stored,
// the heap the store holds, the peak heap the report adds to it (sampled
// every 5 ms) and the process's peak RSS (store building included).
func BenchmarkReport1000GPUs7Days(b *testing.B) {
	benchReport(b, benchEnv("GPUTALLY_BENCH_GPUS", 1000), time.Duration(benchEnv("GPUTALLY_BENCH_SCRAPE_SECONDS", 30))*time.Second, 7)
}

// BenchmarkReportRange generates the same fleet's report over 7 and over 28
// days (GPUTALLY_BENCH_GPUS, 100 by default; 60 s scrapes unless
// GPUTALLY_BENCH_SCRAPE_SECONDS says otherwise), the peak heap the report
// adds to the store and the peak RSS of each. In process the engine's
// working set, which grows with the range, is the report's too; the
// dataset's part of it does not grow (docs/performance.md).
func BenchmarkReportRange(b *testing.B) {
	gpus, scrape := benchEnv("GPUTALLY_BENCH_GPUS", 100), time.Duration(benchEnv("GPUTALLY_BENCH_SCRAPE_SECONDS", 60))*time.Second
	for _, days := range []int{7, 28} {
		b.Run(fmt.Sprintf("%dd", days), func(b *testing.B) { benchReport(b, gpus, scrape, days) })
	}
}

// benchEnv reads a positive count from the environment variable name, else def.
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// liveHeap returns the heap's live objects, in bytes, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	return heap[0].Value.Uint64()
}

// benchReport builds gpus × days of the synthetic fleet scraped every
// scrape into the embedded store and generates the report over it once per
// iteration.
func benchReport(b *testing.B, gpus int, scrape time.Duration, days int) {
	rng := time.Duration(days) * 24 * time.Hour
	ticks := int(rng / scrape)
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	fams, _ := synthFleet(gpus, scrape, ticks)
	sb := NewStoreBuilder()
	if err := appendFleet(sb, fams, start, scrape, ticks); err != nil {
		b.Fatal(err)
	}
	samples := sb.Samples()
	st := sb.Store()
	fams, sb = nil, nil
	storeHeap := liveHeap()

	cfg := DefaultConfig()
	cfg.End, cfg.Range = start.Add(rng), rng
	q := engine.NewEmbeddedQuerier(st, 10*time.Minute, discard())
	done, peak := sampleHeapPeak()
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
	runtime.KeepAlive(st)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MiB") // Linux: KiB
	}
	b.ReportMetric(float64(samples), "samples")
	b.ReportMetric(float64(storeHeap)/(1<<20), "store-heap-MiB")
}

// sampleHeapPeak samples the live heap every 5 ms until done is closed,
// then sends the most it saw on peak: above the store's heap, what the
// report itself holds (its queries, results and analysis).
func sampleHeapPeak() (done chan struct{}, peak chan uint64) {
	done, peak = make(chan struct{}), make(chan uint64, 1)
	go func() {
		var most uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-done:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	return done, peak
}
