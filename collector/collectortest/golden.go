// Package collectortest compares a collector's exposition with a golden file,
// and its own gather with a registry's, for the tests of the collector, its
// backends and the simulation.
package collectortest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/gputally/gputally/dcgmnames"
)

// GoldenFile is the golden file of the exposition called name under the
// naming n: <name>.golden.prom for the default (dcgm-exporter 4.10's names),
// <name>.4.8.golden.prom for 4.8's.
func GoldenFile(dir, name string, n dcgmnames.Naming) string {
	if n == dcgmnames.Legacy {
		return filepath.Join(dir, name+".4.8.golden.prom")
	}
	return filepath.Join(dir, name+".golden.prom")
}

// Namings are both namings, the default first: what the golden tests run.
var Namings = []dcgmnames.Naming{dcgmnames.Current, dcgmnames.Legacy}

// CompareGolden fails t when c's exposition differs from the golden file, which
// update rewrites first. It also lints gputally's own metrics: the DCGM names
// and DCGM identity labels (UUID, modelName, Hostname, ...) are kept for
// compatibility and exempt.
func CompareGolden(t *testing.T, c prometheus.Collector, golden string, update bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if update {
		text, err := Text(reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, text, 0o644); err != nil {
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
		if strings.HasPrefix(p.Metric, "gputally_") && !strings.Contains(p.Text, "snake_case") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
}

// Gatherer is a collector that also gathers itself (collector.Collector).
type Gatherer interface {
	prometheus.Collector
	Gather() []*dto.MetricFamily
}

// CompareGather fails t when c.Gather differs from what a pedantic registry
// gathers from c (which also checks every series: valid label names, UTF-8
// values, no series twice): families, order, labels, values and types.
func CompareGather(t testing.TB, c Gatherer) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := c.Gather()
	if len(got) != len(want) {
		t.Fatalf("Gather returned %d families, the registry %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("family %d: Gather\n%v\nregistry\n%v", i, got[i], want[i])
		}
	}
}

// Text renders g's metrics in the text exposition format.
func Text(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
