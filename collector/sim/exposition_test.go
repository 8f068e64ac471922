package sim

import (
	"context"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/collectortest"
	"github.com/gputally/gputally/cost"
)

// fixedClock is an attribution.Clock stopped at one time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                                     { return c.t }
func (c fixedClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

// TestDefaultScenarioExposition pins /metrics of the built-in scenario an hour
// after its start, through the whole real path: the simulated kubelet's gRPC
// socket, the attribution client, process accounting over the simulated
// procfs, the ledger and the collector. Rewrite with -update.
func TestDefaultScenarioExposition(t *testing.T) {
	s, host, clock := defaultScenarioHour(t)
	for _, names := range collectortest.Namings {
		c := collector.NewCollector(s, collector.Node{Hostname: host, Names: names}, clock.Now)
		collectortest.CompareGolden(t, c, collectortest.GoldenFile("testdata", "default", names), *update)
	}
}

// defaultScenarioHour runs the built-in scenario for an hour and returns its
// sampler, the node's host name and the clock at the hour's end.
func defaultScenarioHour(t *testing.T) (*collector.Sampler, string, fixedClock) {
	t.Helper()
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	b, err := New(Default(), Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Stop)
	clock := fixedClock{end}
	client, err := attribution.New(attribution.Config{Socket: kubelet.Socket, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	inv, _ := b.Inventory(context.Background())
	client.SetDevices(collector.AttributionDevices(inv))
	if err := client.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := collector.NewSampler(b, collector.SamplerOptions{
		Interval: 10 * time.Second, Now: clock.Now, Holders: client, Ledger: cost.NewLedger(bookOf{cost.Default()}),
		Processes: collector.NewPodProcesses(attribution.NewProcessResolver(attribution.ProcessConfig{
			ProcRoot: kubelet.ProcRoot, PodLogsDir: kubelet.PodLogsDir, Files: kubelet.Files(), Clock: clock,
		})),
	})
	for now := start; !now.After(end); now = now.Add(10 * time.Second) {
		if err := s.Tick(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
	return s, b.Hostname(), clock
}

// bookOf is a cost.BookSource of one book.
type bookOf struct{ b *cost.Book }

func (s bookOf) Book() *cost.Book { return s.b }
