//go:build soak

// Package soak runs the exporter for minutes on a simulated node where
// holders come and go, the kubelet and the backend fail and a GPU is lost, and
// checks that it stays flat and its ledger stays whole (`make soak`). It is
// not part of `make check`: it takes minutes of wall clock by design.
package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const (
	sampleInterval = 100 * time.Millisecond
	scrapeInterval = time.Second
	retention      = 15 * time.Second
	// warmUp covers every fault of testdata/scenarios/soak.yaml (the last, the
	// lost GPU, at 80 s) and the retention window of the holders it ends.
	warmUp = 120 * time.Second
	// scrapeBound is the slowest scrape the soak accepts: half the scrape
	// interval, so scrapes never overlap. BenchmarkScrape puts a scrape of the
	// budget node's ~1,250 series at 4-5 ms of CPU; the bound leaves 100× for
	// a 2-core machine shared with other builds and a GC cycle in the way.
	scrapeBound = scrapeInterval / 2
	// flatWithin is how much resident memory and goroutines may grow from the
	// first minute after warm-up to the last minute.
	flatWithin = 0.10
)

// TestSoak runs `gputally exporter --backend=sim` on soak.yaml for
// GPUTALLY_SOAK_DURATION (default 5m, at least warm-up + 2 minutes), scrapes
// it every second over loopback and checks: resident memory and goroutines
// flat after warm-up, ended holders' series gone after the retention window,
// no *_total series decreasing, device-seconds per GPU growing by the elapsed
// time within 1 %, no scrape slower than scrapeBound.
func TestSoak(t *testing.T) {
	duration := 5 * time.Minute
	if v := os.Getenv("GPUTALLY_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GPUTALLY_SOAK_DURATION: %v", err)
		}
		duration = d
	}
	if duration < warmUp+2*time.Minute {
		t.Fatalf("a soak needs at least %s (warm-up and two minutes to compare), got %s", warmUp+2*time.Minute, duration)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gputally")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gputally")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "exporter.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	exporter := exec.CommandContext(ctx, bin, "exporter", "--backend=sim",
		"--sim.scenario="+filepath.Join(root, "testdata/scenarios/soak.yaml"),
		"--collector.interval="+sampleInterval.String(),
		"--collector.ended-series-retention="+retention.String(),
		"--attribution.interval=1s", "--attribution.stale-after=10s",
		"--web.listen-address="+addr)
	exporter.Stdout, exporter.Stderr = logFile, logFile
	if err := exporter.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = exporter.Process.Signal(os.Interrupt)
		_ = exporter.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("exporter log (tail):\n%s", tail(string(b), 40))
			}
		}
	}()

	url := "http://" + addr + "/metrics"
	client := &http.Client{Timeout: 10 * time.Second}
	start := waitReady(t, client, url)
	tr := newTracker(retention, 3*scrapeInterval)
	var rows []row
	tick := time.NewTicker(scrapeInterval)
	defer tick.Stop()
	for now := start; now.Sub(start) < duration; now = <-tick.C {
		// The answer holds the snapshot of a sample taken before the request
		// reached the exporter, one sample interval at most: the tracker
		// dates it by the request's start.
		at := time.Now()
		took, fams, err := scrape(client, url)
		if err != nil {
			t.Fatalf("scrape at %s: %v", now.Sub(start).Round(time.Second), err)
		}
		rss, err := residentBytes(exporter.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		goroutines := -1.0
		if f := fams["go_goroutines"]; f != nil && len(f.GetMetric()) == 1 {
			goroutines = f.GetMetric()[0].GetGauge().GetValue()
		}
		tr.observe(at, fams)
		rows = append(rows, row{at: at.Sub(start), took: took, rss: rss, goroutines: goroutines, series: countSeries(fams)})
	}
	elapsed, growth := tr.checkGrowth(0.01)
	rep := summarize(rows)
	t.Logf("soak: %s of scrapes (%d) after warm-up %s; sample interval %s, retention %s", elapsed.Round(time.Second), len(rows), warmUp, sampleInterval, retention)
	t.Logf("scrape duration: p50 %s, p99 %s, max %s (bound %s); series per scrape %d-%d",
		rep.p50, rep.p99, rep.maxTook, scrapeBound, rep.minSeries, rep.maxSeries)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average at the end (1, 5, 15 min): %s on %d CPUs", strings.Join(strings.Fields(string(load))[:3], ", "), runtime.NumCPU())
	}
	for _, r := range rep.slowest {
		t.Logf("slow scrape at %s: %s", r.at.Round(time.Second), r.took.Round(time.Millisecond))
	}
	t.Logf("resident memory: first minute after warm-up max %.1f MiB, last minute max %.1f MiB (%+.1f %%), overall peak %.1f MiB",
		mib(rep.rssFirst), mib(rep.rssLast), pct(rep.rssFirst, rep.rssLast), mib(rep.rssPeak))
	t.Logf("goroutines: first minute after warm-up max %.0f, last minute max %.0f (%+.1f %%)",
		rep.grFirst, rep.grLast, pct(rep.grFirst, rep.grLast))
	t.Logf("holders ended: %d, each retained at most %s-%s (window %s); series that left and came back: %d; *_total decreases: %d",
		tr.holdersEnded, tr.retainedMin.Round(time.Millisecond), tr.retainedMax.Round(time.Millisecond), retention, tr.reappeared, tr.decreases)
	worst := 0.0
	for g, s := range growth {
		d := (s - elapsed.Seconds()) / elapsed.Seconds()
		if d < 0 {
			d = -d
		}
		worst = max(worst, d)
		t.Logf("device-seconds %s: %.3f over %.3f s", g, s, elapsed.Seconds())
	}
	t.Logf("device-seconds per GPU vs elapsed: worst %.4f %% apart (tolerance 1 %%)", worst*100)

	for _, p := range tr.problems {
		t.Error(p)
	}
	if len(growth) != 8 {
		t.Errorf("device-seconds seen for %d GPUs, want the scenario's 8", len(growth))
	}
	if tr.holdersEnded == 0 {
		t.Error("no holder ended during the soak: the scenario's churn did not happen")
	}
	if rep.maxTook > scrapeBound {
		t.Errorf("slowest scrape %s, bound %s", rep.maxTook, scrapeBound)
	}
	if grown := pct(rep.rssFirst, rep.rssLast); grown > flatWithin*100 {
		t.Errorf("resident memory grew %.1f %% after warm-up (at most %.0f %%)", grown, flatWithin*100)
	}
	if rep.grFirst <= 0 {
		t.Error("no go_goroutines in the scrapes")
	} else if grown := pct(rep.grFirst, rep.grLast); grown > flatWithin*100 {
		t.Errorf("goroutines grew %.1f %% after warm-up (at most %.0f %%)", grown, flatWithin*100)
	}
}

// row is what one scrape measured; at counts from the first answered scrape.
type row struct {
	at, took   time.Duration
	rss        uint64
	goroutines float64
	series     int
}

type summary struct {
	p50, p99, maxTook          time.Duration
	slowest                    []row // the scrapes over scrapeBound, at most five
	minSeries, maxSeries       int
	rssFirst, rssLast, rssPeak float64
	grFirst, grLast            float64
}

// summarize compares the first minute after warm-up with the last minute.
func summarize(rows []row) summary {
	var s summary
	end := rows[len(rows)-1].at
	took := make([]time.Duration, 0, len(rows))
	s.minSeries = rows[0].series
	for _, r := range rows {
		took = append(took, r.took)
		s.minSeries, s.maxSeries = min(s.minSeries, r.series), max(s.maxSeries, r.series)
		s.rssPeak = max(s.rssPeak, float64(r.rss))
		switch {
		case r.at >= warmUp && r.at < warmUp+time.Minute:
			s.rssFirst, s.grFirst = max(s.rssFirst, float64(r.rss)), max(s.grFirst, r.goroutines)
		case r.at > end-time.Minute:
			s.rssLast, s.grLast = max(s.rssLast, float64(r.rss)), max(s.grLast, r.goroutines)
		}
	}
	for _, r := range rows {
		if r.took > scrapeBound && len(s.slowest) < 5 {
			s.slowest = append(s.slowest, r)
		}
	}
	slices.Sort(took)
	s.p50, s.p99, s.maxTook = took[len(took)/2], took[len(took)*99/100], took[len(took)-1]
	return s
}

// scrape GETs url and parses the answer; took is the time to the last byte of
// the answer, the parsing not included.
func scrape(client *http.Client, url string) (took time.Duration, fams map[string]*dto.MetricFamily, err error) {
	begin := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took = time.Since(begin)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err = parser.TextToMetricFamilies(bytes.NewReader(body))
	return took, fams, err
}

// waitReady polls the exporter until it answers (a start-up deadline, not a
// synchronisation: the soak measures from the first answer).
func waitReady(t *testing.T, client *http.Client, url string) time.Time {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not answer %s within a minute: %v", url, err)
		}
	}
	panic("unreachable")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// residentBytes reads VmRSS of a process from /proc (Linux).
func residentBytes(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kib * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func countSeries(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, f := range fams {
		n += len(f.GetMetric())
	}
	return n
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

func mib(b float64) float64 { return b / (1 << 20) }

// pct is how much b is above a, in percent of a.
func pct(a, b float64) float64 { return (b - a) / a * 100 }
