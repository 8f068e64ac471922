package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkReportDemo runs `gputally report --demo` on the built-in node (8
// GPUs, scraped every 60 s, the defaults) as a new user would: the built
// binary in its own process. ns/op is the wall time of one run; it reports
// the peak resident memory of the run's process and the CPU it used (the
// budgets and figures: docs/performance.md, "report --demo"). The 14-day run next to the 7-day
// one gives what one more GPU-week costs.
func BenchmarkReportDemo(b *testing.B) {
	for _, r := range []string{"7d", "14d"} {
		b.Run(r, func(b *testing.B) {
			runBinary(b, "report", "--demo", "--range="+r, "--format=html", "--out="+filepath.Join(b.TempDir(), "report.html"))
		})
	}
}

// BenchmarkSimulateHistoryWeek runs `gputally simulate history` for the
// built-in node's week at 30 s scrapes (the defaults), writing its
// OpenMetrics to /dev/null: ns/op is the wall time, and the peak resident
// memory must not grow with the period, as it streams (the budgets and
// figures: docs/performance.md, "simulate history").
func BenchmarkSimulateHistoryWeek(b *testing.B) {
	for _, d := range []string{"1d", "7d"} {
		b.Run(d, func(b *testing.B) {
			runBinary(b, "simulate", "history", "--duration="+d, "--out=/dev/null")
		})
	}
}

// runBinary runs the gputally binary with args once per iteration and
// reports the peak resident memory of its processes and their CPU per run.
func runBinary(b *testing.B, args ...string) {
	var peak, cpu float64
	for b.Loop() {
		cmd := exec.Command(binary, args...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("gputally %v: %v\n%s", args, err, msg)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		peak = max(peak, float64(ru.Maxrss)/1024) // Linux: KiB
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
}
