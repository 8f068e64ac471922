//go:build e2e

package e2e

import (
	"math"
	"path/filepath"
	"testing"
	"time"
)

// TestReportAcrossHostnameSpellings: a node's exporter wrote `Hostname` for
// half a day (as dcgm-exporter up to 4.8.2 and gputally's
// --collector.legacy-hostname-label do) and, after an upgrade that restarted
// it, `hostname`. Backfilled into a real Prometheus, the day is reported as
// the node's 5 GPUs, not 10, on one node — also for the pods that started
// only after the upgrade (data/ingest-0 from 6 h, the later jobs) — with the
// EUR the two ledgers counted.
func TestReportAcrossHostnameSpellings(t *testing.T) {
	prometheus := promLookPath(t, "prometheus")
	promtool := promLookPath(t, "promtool")
	gputally := promBuildGputally(t)
	dir := t.TempDir()
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	upgrade := start.Add(4 * time.Hour) // on a block boundary: the two backfills do not overlap
	end := start.Add(24 * time.Hour)

	var ledger float64 // EUR both exporters counted
	ledgerNS := map[string]float64{}
	var files []string
	for _, half := range []struct {
		name     string
		from, to time.Time
		flags    []string
	}{
		{"legacy", start, upgrade, []string{"--collector.legacy-hostname-label"}},
		{"current", upgrade, end, nil},
	} {
		om, summary := filepath.Join(dir, half.name+".om"), filepath.Join(dir, half.name+".json")
		runTool(t, gputally, append([]string{"simulate", "history", "--scenario=" + shortJobsScenario,
			"--duration=" + half.to.Sub(half.from).String(), "--scrape-interval=30s",
			"--start=" + half.from.Format(time.RFC3339), "--out=" + om, "--summary=" + summary}, half.flags...)...)
		var sum reportSummary
		readJSON(t, summary, &sum)
		for _, s := range sum.Series {
			ledger += s.EUR
			ledgerNS[s.Namespace] += s.EUR
		}
		files = append(files, om)
	}
	prom := promBackfilledFiles(t, promtool, prometheus, dir, files...)

	out := filepath.Join(dir, "report.json")
	runTool(t, gputally, "report", "--prometheus.url="+prom, "--range=24h", "--end="+end.Format(time.RFC3339),
		"--allow-partial", "--format=json", "--out="+out)
	var r struct {
		faultsReport
		GPUs     int `json:"gpus"`
		Holdings []struct {
			Namespace string `json:"namespace"`
			Pod       string `json:"pod"`
			Node      string `json:"node"`
		} `json:"holdings"`
	}
	readJSON(t, out, &r)
	if r.GPUs != 5 {
		t.Errorf("%d GPUs, want the node's 5: a device must be one GPU under both spellings", r.GPUs)
	}
	if len(r.Coverage.Nodes) != 1 || r.Coverage.Nodes[0].Node != "jobs-node" {
		t.Errorf("coverage nodes %+v, want jobs-node alone", r.Coverage.Nodes)
	}
	ingest := false
	for _, h := range r.Holdings {
		ingest = ingest || h.Pod == "ingest-0"
		if h.Node != "jobs-node" {
			t.Errorf("holding %s/%s on node %q, want jobs-node", h.Namespace, h.Pod, h.Node)
		}
	}
	if !ingest {
		t.Error("data/ingest-0, which started after the upgrade, is not among the holdings")
	}
	if got := r.Fleet.Totals.CostEUR; math.Abs(got-ledger) > 1e-3*ledger {
		t.Errorf("fleet %.4f EUR, the ledgers counted %.4f", got, ledger)
	}
	for _, ns := range r.Namespaces {
		if want := ledgerNS[ns.Name]; math.Abs(ns.Totals.CostEUR-want) > 1e-3*want+1e-9 {
			t.Errorf("namespace %q: %.4f EUR, the ledgers counted %.4f", ns.Name, ns.Totals.CostEUR, want)
		}
	}
	if len(r.Namespaces) < 5 {
		t.Errorf("only %d namespaces: is the day simulated?", len(r.Namespaces))
	}
}
