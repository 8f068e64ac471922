package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkReportDemo runs `gpuledger report --demo` on the built-in node (a
// simulated week scraped every 60 s, the defaults) as a new user would: the
// built binary in its own process. ns/op is the wall time of one run
// (budget: ≤ 5 s); it reports the peak resident memory of the run's process
// (budget: ≤ 300 MiB) and the CPU it used.
func BenchmarkReportDemo(b *testing.B) {
	out := filepath.Join(b.TempDir(), "report.html")
	var peak, cpu float64
	for b.Loop() {
		cmd := exec.Command(binary, "report", "--demo", "--format=html", "--out="+out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("report --demo: %v\n%s", err, msg)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		peak = max(peak, float64(ru.Maxrss)/1024) // Linux: KiB
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
}
