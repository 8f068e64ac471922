package main

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/model"
)

// BenchmarkExporterBudgetNode runs the exporter on the design's budget node
// (8 GPUs × 7 MIG instances, 56 pods; testdata/scenarios/budget-node.yaml),
// times its scrapes over HTTP and reports its resident memory after them
// (budget: ≤ 40 MiB) and the CPU it used.
func BenchmarkExporterBudgetNode(b *testing.B) {
	e := startExporter(b, "--backend=sim", "--sim.scenario=../../testdata/scenarios/budget-node.yaml")
	waitFor(b, func() bool {
		n, _ := sum(e.scrape(b), "gpuledger_gpu_allocation", model.LabelSet{"sharing": "mig"})
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
	series, _ := sum(samples, "gpuledger_gpu_allocation", model.LabelSet{"sharing": "mig"})
	b.ReportMetric(rss/(1<<20), "RSS-MiB")
	b.ReportMetric(cpu, "exporter-cpu-s")
	b.ReportMetric(series, "mig-holders")
}
