package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// BenchmarkScrapeStorm measures the exporter's peak resident memory (VmHWM)
// when 200 clients scrape the budget node at once, loopback only, each for a
// fixed number of rounds, for several --web.max-requests and with and without
// the chart's GOMEMLIMIT. It sizes the default concurrency and the chart's
// memory limit together (docs/reliability.md). Run it with -benchtime 1x:
//
//	go test -run '^$' -bench ScrapeStorm -benchtime 1x ./cmd/gputally
func BenchmarkScrapeStorm(b *testing.B) {
	const clients, rounds = 200, 10
	for _, maxRequests := range []int{5, 10, 20, 40} {
		for _, memLimit := range []string{"", "64MiB"} {
			name := fmt.Sprintf("max-requests=%d/GOMEMLIMIT=%s", maxRequests, cmpOr(memLimit, "off"))
			b.Run(name, func(b *testing.B) {
				b.Setenv("GOMEMLIMIT", memLimit)
				e := startExporter(b, "--backend=sim", "--sim.scenario=../../testdata/scenarios/budget-node.yaml",
					fmt.Sprintf("--web.max-requests=%d", maxRequests))
				waitFor(b, func() bool {
					n, _ := sum(e.scrape(b), "gputally_gpu_allocation", model.LabelSet{"sharing": "mig"})
					return n == 56
				})
				var ok, limited, failed int
				for b.Loop() {
					ok, limited, failed = storm(e.addr, clients, rounds)
				}
				b.StopTimer()
				hwm, err := peakRSS(e.cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(hwm/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(ok), "200s")
				b.ReportMetric(float64(limited), "503s")
				if failed > 0 {
					b.Errorf("%d scrapes failed outright (not 200 or 503)", failed)
				}
			})
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// storm runs clients concurrent scrapers of rounds scrapes each and counts
// the answers: 200, 503 (over --web.max-requests) and anything else.
func storm(addr string, clients, rounds int) (ok, limited, failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c := &http.Client{Timeout: 2 * time.Minute}
			for range rounds {
				code := 0
				if resp, err := c.Get("http://" + addr + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				switch code {
				case http.StatusOK:
					ok++
				case http.StatusServiceUnavailable:
					limited++
				default:
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, limited, failed
}

// peakRSS reads the peak resident set size of process pid, bytes.
func peakRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if rest, found := strings.CutPrefix(s.Text(), "VmHWM:"); found {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
