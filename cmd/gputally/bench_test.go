package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// BenchmarkExporterBudgetNode runs the exporter on the design's budget node
// (8 GPUs × 7 MIG instances, 56 pods; testdata/scenarios/budget-node.yaml),
// times its scrapes over HTTP and reports its resident memory after them
// (budget: ≤ 40 MiB) and the CPU it used. The resident memory is split, from
// /proc, into anonymous pages (heap, stacks, runtime) and pages of the binary
// file (its code and read-only data), and the size of the binary's code and
// read-only data is reported next to it: the file part follows that size, not
// the code the exporter runs (docs/performance.md).
func BenchmarkExporterBudgetNode(b *testing.B) {
	e := startExporter(b, "--backend=sim", "--sim.scenario=../../testdata/scenarios/budget-node.yaml")
	waitFor(b, func() bool {
		n, _ := sum(e.scrape(b), "gputally_gpu_allocation", model.LabelSet{"sharing": "mig"})
		return n == 56
	})
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get("http://" + e.addr + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.StopTimer()
	samples := e.scrape(b)
	rss, _ := sum(samples, "process_resident_memory_bytes", nil)
	cpu, _ := sum(samples, "process_cpu_seconds_total", nil)
	series, _ := sum(samples, "gputally_gpu_allocation", model.LabelSet{"sharing": "mig"})
	b.ReportMetric(rss/(1<<20), "RSS-MiB")
	if anon, file, err := rssSplit(e.cmd.Process.Pid); err == nil {
		b.ReportMetric(anon/(1<<20), "RSS-anon-MiB")
		b.ReportMetric(file/(1<<20), "RSS-file-MiB")
	}
	if loaded, err := loadedSize(binary); err == nil {
		b.ReportMetric(loaded/(1<<20), "binary-loaded-MiB")
	} else {
		b.Logf("binary size: %v", err)
	}
	b.ReportMetric(cpu, "exporter-cpu-s")
	b.ReportMetric(series, "mig-holders")
}

// loadedSize returns the bytes of the ELF binary at path that are mapped
// read-only or executable to run it: its code and read-only data (loadable
// segments without write permission). Its symbol table and DWARF are not
// among them.
func loadedSize(path string) (float64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W == 0 {
			n += p.Filesz
		}
	}
	return float64(n), nil
}

// rssSplit returns the anonymous and file-backed resident memory of process
// pid in bytes, from /proc/<pid>/status (RssAnon, RssFile).
func rssSplit(pid int) (anon, file float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	found := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		var into *float64
		switch name {
		case "RssAnon":
			into = &anon
		case "RssFile":
			into = &file
		default:
			continue
		}
		kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", sc.Text(), err)
		}
		*into = kib * 1024
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no RssAnon and RssFile", pid)
	}
	return anon, file, nil
}
