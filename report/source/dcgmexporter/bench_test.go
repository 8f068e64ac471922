package dcgmexporter

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// BenchmarkDCGMExporterSource reads a day of the demo fleet (4 nodes, 10
// GPUs, MIG, a time-sliced-free spare node) written in dcgm-exporter's form
// at a 30 s scrape, through the embedded engine: the whole of Collect, its
// queries and the pricing of 2,880 grid points per GPU.
func BenchmarkDCGMExporterSource(b *testing.B) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "fleet")
	var nodes []*sim.Scenario
	for _, f := range []string{"a100-serving.yaml", "h100-training.yaml", "l4-dev.yaml", "spare.yaml"} {
		sc, err := sim.Load(filepath.Join(dir, f))
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, sc)
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	sb := engine.NewStoreBuilder()
	opts := history.Options{Start: start, Duration: 24 * time.Hour, SampleInterval: 30 * time.Second, ScrapeInterval: 30 * time.Second,
		Flavor: history.FlavorDCGMExporter}
	if _, err := history.RunFleet(context.Background(), opts, nodes, sb); err != nil {
		b.Fatal(err)
	}
	q := engine.NewEmbeddedQuerier(sb.Store(), time.Minute, slog.New(slog.DiscardHandler))
	r := model.Range{Start: start, End: start.Add(24 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		src := New(q, Options{MaxPointsPerQuery: 1000, MaxSamplesPerQuery: 1_000_000})
		if _, err := src.Collect(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
