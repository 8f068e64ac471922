package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// corpusReport reads a corpus file (testdata/real) through the
// dcgm-exporter source: its samples as one scrape every 30 s over an hour
// (a console listing, which has no values, read as 0), no
// kube-state-metrics, every GPU at dayOneBook's 2.00 EUR/h.
func corpusReport(t *testing.T, samples []corpusSample) (*Report, error) {
	t.Helper()
	b := NewStoreBuilder()
	for at := dayOneStart; !at.After(dayOneStart.Add(time.Hour)); at = at.Add(30 * time.Second) {
		for _, s := range samples {
			v := s.value
			if math.IsNaN(v) {
				v = 0
			}
			if err := b.Append(labels.FromMap(s.labels), at.UnixMilli(), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := dayOneConfig(t)
	cfg.Range, cfg.End = time.Hour, dayOneStart.Add(time.Hour)
	return dayOneReport(t, b.Store(), cfg)
}

// TestRealDCGMExporterOutputRead: the report's reading of every corpus
// file, an hour of it, worked out from the file by hand: the nodes, the
// holdings and their EUR (a whole GPU's hour 2.00; an H100 1g.10gb
// instance a seventh of it by the compute weight, 0.2857), the hours no
// holder had — unallocated where nothing shows work, unknown where a GPU
// without a holder shows it and kube-state-metrics cannot say whose it is
// — or the error that refuses it, and the warnings the shapes call for.
// Of the files that only show fields the source does not read (clocks, a
// decoder), the refusal says there is no data.
func TestRealDCGMExporterOutputRead(t *testing.T) {
	type read struct {
		err         string
		nodes       []string
		holdings    []string // "namespace/pod/container EUR", sorted
		unallocated float64  // hours
		unknown     float64
		warns       [][]string
	}
	noData := read{err: "no GPU data: no dcgm-exporter samples"}
	want := map[string]read{
		// The exporter's pods on the 15 GPUs vllm does not hold: no holder.
		"nvidia-aicr-h100-gpu-util.json": {nodes: []string{"gpu-node-1", "gpu-node-2"}, holdings: []string{"dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5/main 2.0000"},
			unallocated: 15, warns: [][]string{{"2 pod(s) labelled on GPUs", "gpu-operator/nvidia-dcgm-exporter-g2fjs, gpu-operator/nvidia-dcgm-exporter-wqqqn", "scrape target", "no holder"}}},
		"nvidia-aicr-h100.prom": {nodes: []string{"gpu-node-1"}, holdings: []string{"dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5/main 2.0000"}, unallocated: 7},
		// A quarter of an A100 40GB: 0.50 EUR; the whole one's profile 2.00.
		"vks-grid-a100-10c.prom": {nodes: []string{"conformance-test-np1-qcqc8-bpdtl-wv2gs"}, unallocated: 1, warns: [][]string{{"GRID A100-10C", "10/40"}}},
		"vks-grid-a100-40c.prom": {nodes: []string{"test-ai-1-node-pool-40c-d5ds8-br9r6-9tb2c"}, unallocated: 1, warns: [][]string{{"GRID A100-40C", "40/40"}}},
		// GR 0.156 busy, 5120 MiB in use, no pod, no kube-state-metrics.
		"ericsson-ccd-t4.prom":     {nodes: []string{"cp-bm14r7"}, unknown: 1},
		"dcgm-exporter-490.prom":   {nodes: []string{"computeinstance-e00c1p6dpy98xytphp"}, holdings: []string{"default/dcgmproftester2/dcgmproftester2 2.0000"}, unallocated: 2},
		"dcgm-exporter-pr736.prom": noData, // FB_FREE, ENC, DEC only
		// The node from node, not the exporter's pod in Hostname.
		"gpu-operator-472.series":       {nodes: []string{"aks-gpunp-66230965-vmss000000"}, unallocated: 1},
		"dcgm-exporter-277.series":      {nodes: []string{"node-1"}, unallocated: 1},
		"dcgm-exporter-58.prom":         noData, // SM_CLOCK only
		"dcgm-exporter-188.prom":        {err: "dcgm-exporter 1.x"},
		"gpu-monitoring-tools-1x.prom":  {err: "dcgm-exporter 1.x"},
		"gpu-monitoring-tools-138.prom": {err: "have no hostname label, nor Hostname, nodename or node"},
		"dcgm-exporter-272.prom":        noData, // lower-case dcgm_fi_* names
		"gpu-operator-687.prom":         noData, // SM_CLOCK only
		// "**1g.11gb**" names no profile: the free instance of an H100 NVL.
		"dcgm-exporter-544.prom": {nodes: []string{"vijay-1-bodha-h100-nvl-nfm45-5h7w7-gj5nn-9sbrb"}, unallocated: 1},
		// Two 1g.10gb of 7 slices held, 1/7 each; the free instance and the
		// 4 slices in no instance unallocated: 5/7 h.
		"dcgm-exporter-512.prom": {nodes: []string{"gsrh100-074"}, holdings: []string{
			"model-playground-stg/text-embedding-predictor-00008-deployment-57946f6c67-vdtjl/kserve-container 0.2857",
			"model-playground-stg/tts-predictor-00011-deployment-5554f75554-8j8pl/kserve-container 0.2857"}, unallocated: 5.0 / 7},
		// Five free A30 1g.6gb instances on two GPUs.
		"dcgm-exporter-317.prom": {nodes: []string{"yg-data-k8s-gpu-a30-node-test-test0003.mt"}, unallocated: 2},
		// tensorflow-0 labelled on two GPUs: a holding on each.
		"dcgm-226.prom": {nodes: []string{"l40s.example.com"}, holdings: []string{"redacted/tensorflow-0/tensorflow 2.0000", "redacted/tensorflow-0/tensorflow 2.0000"}, unallocated: 1},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			samples, err := readCorpusFile(filepath.Join(realDir, name))
			if err != nil {
				t.Fatal(err)
			}
			r, err := corpusReport(t, samples)
			if w.err != "" {
				if err == nil || !strings.Contains(err.Error(), w.err) {
					t.Errorf("error %v, want one saying %q", err, w.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var nodes, holdings []string
			for _, n := range r.Nodes {
				nodes = append(nodes, n.Name)
			}
			for _, h := range r.Holdings {
				holdings = append(holdings, fmt.Sprintf("%s %.4f", h.Name(), h.Totals.CostEUR))
			}
			slices.Sort(holdings)
			tot := r.Fleet.Totals
			if !slices.Equal(nodes, w.nodes) || !slices.Equal(holdings, w.holdings) || !near(tot.UnallocatedHours, w.unallocated) || !near(tot.UnknownHours, w.unknown) {
				t.Errorf("nodes %q, holdings %q, %g h unallocated, %g unknown; want %q, %q, %g, %g", nodes, holdings, tot.UnallocatedHours, tot.UnknownHours,
					w.nodes, w.holdings, w.unallocated, w.unknown)
			}
			for _, parts := range w.warns {
				if !warned(r, parts...) {
					t.Errorf("warnings %q, want one saying %q", r.Warnings, parts)
				}
			}
		})
	}
	if len(want) != len(corpusFiles(t)) {
		t.Errorf("%d files read, %d in %s", len(want), len(corpusFiles(t)), realDir)
	}
}
