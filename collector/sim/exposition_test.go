package sim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/cost"
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
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	b, err := New(Default(), Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := StartKubelet(b)
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
		Now: clock.Now, Holders: client, Ledger: cost.NewLedger(bookOf{cost.Default()}),
		Processes: collector.NewPodProcesses(attribution.NewProcessResolver(attribution.ProcessConfig{
			ProcRoot: kubelet.ProcRoot, PodLogsDir: kubelet.PodLogsDir, Clock: clock,
		})),
	})
	for now := start; !now.After(end); now = now.Add(10 * time.Second) {
		if err := s.Tick(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
	c := collector.NewCollector(s, b.Hostname(), clock.Now)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	golden := filepath.Join("testdata", "default.golden.prom")
	if *update {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	defer want.Close()
	if err := testutil.GatherAndCompare(reg, want); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// DCGM names and identity labels are kept for compatibility.
		if strings.HasPrefix(p.Metric, "gpuledger_") && !strings.Contains(p.Text, "snake_case") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
}

// bookOf is a cost.BookSource of one book.
type bookOf struct{ b *cost.Book }

func (s bookOf) Book() *cost.Book { return s.b }
