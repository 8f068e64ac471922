//go:build fleetbench

package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// embedded runs the report over the fleet through the embedded engine in a
// child process (TestFleetEmbeddedChild) per --query.concurrency; it returns
// the table's rows.
func (f *fleetCase) embedded(t *testing.T, s fleetSettings) []string {
	var rows []string
	for i, conc := range s.concurrency {
		out := filepath.Join(t.TempDir(), "report.json")
		cmd := exec.Command(os.Args[0], "-test.run=^TestFleetEmbeddedChild$", "-test.v")
		cmd.Env = append(os.Environ(), "GPUTALLY_FLEET_CHILD="+out, fmt.Sprintf("GPUTALLY_FLEET_GPUS=%d", f.gpus),
			fmt.Sprintf("GPUTALLY_FLEET_DAYS=%d", f.days), fmt.Sprintf("GPUTALLY_FLEET_SCRAPE_SECONDS=%d", int(s.scrape.Seconds())),
			"GPUTALLY_FLEET_CONCURRENCY="+conc)
		var stdout strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &tailWriter{max: 4096}
		if err := cmd.Run(); err != nil {
			t.Fatalf("embedded child: %v\n%s\n%s", err, stdout.String(), cmd.Stderr.(*tailWriter).b)
		}
		peakRSS := uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024
		var res struct {
			Samples  int    `json:"samples"`
			BuildNS  int64  `json:"build_ns"`
			BuildRSS uint64 `json:"build_rss"`
			ReportNS int64  `json:"report_ns"`
			Load     string `json:"load"`
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "fleet-embedded: "); ok {
				if err := json.Unmarshal([]byte(v), &res); err != nil {
					t.Fatal(err)
				}
			}
		}
		wall, build := time.Duration(res.ReportNS), time.Duration(res.BuildNS)
		if wall == 0 {
			t.Fatalf("embedded child printed no result:\n%s", stdout.String())
		}
		t.Logf("embedded --query.concurrency=%s: store of %d samples built in %s (peak RSS %s by then), report %s, child peak RSS %s (load %s)",
			conc, res.Samples, build.Round(100*time.Millisecond), mib(res.BuildRSS), wall.Round(10*time.Millisecond), mib(peakRSS), res.Load)
		f.check(t, "embedded, --query.concurrency="+conc, out)
		budget := overBudget(t, "embedded", f.gpus, f.days, i == 0, wall, peakRSS)
		rows = append(rows, fmt.Sprintf("| %d × %d d | embedded (the store of report --demo) | %.1f M | store built in %s | %s once built (in the report process) | %s | %s | %s | %s | %s |",
			f.gpus, f.days, float64(res.Samples)/1e6, build.Round(100*time.Millisecond), mib(res.BuildRSS), conc, wall.Round(100*time.Millisecond), mib(peakRSS), budget, res.Load))
	}
	return rows
}

// profileReport writes, with dir set, a CPU profile of the report to
// dir/embedded.cpu and a heap profile to dir/embedded.heap each time the heap
// grows past its largest yet (so the last one is taken near the peak); the
// returned func stops both.
func profileReport(t *testing.T, dir string) func() {
	if dir == "" {
		return func() {}
	}
	cpu, err := os.Create(filepath.Join(dir, "embedded.cpu"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		t.Fatal(err)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/20 {
				peak = v
				if f, err := os.Create(filepath.Join(dir, "embedded.heap")); err == nil {
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		pprof.StopCPUProfile()
		cpu.Close()
	}
}

// TestFleetEmbeddedChild is the child process of an embedded fleet run: it
// builds the fleet's Store (GPUTALLY_FLEET_GPUS × GPUTALLY_FLEET_DAYS at
// GPUTALLY_FLEET_SCRAPE_SECONDS) as report --demo fills it, generates the
// report through the embedded engine as RunDemoStore does, writes its JSON to
// GPUTALLY_FLEET_CHILD and prints the times. Only a fleet run starts it.
func TestFleetEmbeddedChild(t *testing.T) {
	out := os.Getenv("GPUTALLY_FLEET_CHILD")
	if out == "" {
		t.Skip("the child of an embedded fleet run")
	}
	s := fleetFromEnv(t)
	f := &fleetCase{gpus: s.gpus[0], days: s.days[0], scrape: s.scrape}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	// The garbage collector's settings of report --demo while it simulates
	// (cmd/gputally, simulateIntoStore), unless the environment sets them.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		gc, limit := debug.SetGCPercent(400), debug.SetMemoryLimit(192<<20)
		defer debug.SetGCPercent(gc)
		defer debug.SetMemoryLimit(limit)
	}
	fams, _ := synthFleet(f.gpus, f.scrape, f.ticks())
	sb := NewStoreBuilder()
	if err := appendFleet(sb, fams, start, f.scrape, f.ticks()); err != nil {
		t.Fatal(err)
	}
	samples := sb.Samples()
	st := sb.Store()
	fams, sb = nil, nil
	build := time.Since(began)
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// And its queries' (cmd/gputally, reportGCPercent).
		debug.SetGCPercent(50)
		debug.SetMemoryLimit(math.MaxInt64)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	buildRSS := uint64(ru.Maxrss) * 1024
	conc, err := strconv.Atoi(s.concurrency[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Range, cfg.End = time.Duration(f.days)*24*time.Hour, start.Add(time.Duration(f.days)*24*time.Hour)
	cfg.Format, cfg.Out, cfg.QueriesInFlight = FormatJSON, out, conc
	load := loadAverage()
	stop := profileReport(t, os.Getenv("GPUTALLY_FLEET_PROFILE"))
	began = time.Now()
	if err := RunDemoStore(context.Background(), cfg, st, discard()); err != nil {
		t.Fatal(err)
	}
	report := time.Since(began)
	stop()
	b, _ := json.Marshal(map[string]any{"samples": samples, "build_ns": build.Nanoseconds(), "build_rss": buildRSS,
		"report_ns": report.Nanoseconds(), "load": load + " → " + loadAverage()})
	fmt.Printf("fleet-embedded: %s\n", b)
}
