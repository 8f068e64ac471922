package history

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/cost"
)

var start = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// parsed is what an OpenMetrics parser read back from a history.
type parsed struct {
	families []string             // in order of their TYPE lines
	last     map[string]float64   // last value per series
	times    map[string][]int64   // timestamps per series
	values   map[string][]float64 // values per series, in the order of times
	byName   map[string][]string  // series per metric name
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	p, err := textparse.New(data, "application/openmetrics-text", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := parsed{last: map[string]float64{}, times: map[string][]int64{}, values: map[string][]float64{}, byName: map[string][]string{}}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("history is not valid OpenMetrics: %v", err)
		}
		switch entry {
		case textparse.EntryType:
			name, _ := p.Type()
			out.families = append(out.families, string(name))
		case textparse.EntrySeries:
			_, ts, v := p.Series()
			var lset labels.Labels
			p.Labels(&lset)
			key := lset.String()
			if ts == nil {
				t.Fatalf("sample without timestamp: %s", key)
			}
			if _, seen := out.last[key]; !seen {
				out.byName[lset.Get("__name__")] = append(out.byName[lset.Get("__name__")], key)
			}
			out.last[key] = v
			out.times[key] = append(out.times[key], *ts)
			out.values[key] = append(out.values[key], v)
		}
	}
	return out
}

func TestWriteIsValidOpenMetricsAndMatchesTheLedger(t *testing.T) {
	var buf bytes.Buffer
	res, err := writeNode(context.Background(), &buf, Options{Start: start, Duration: 2 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, buf.Bytes())

	checkFamiliesOnce(t, got.families)
	for _, name := range []string{"DCGM_FI_DEV_POWER_USAGE", "gputally_cost_eur_total", "gputally_gpu_allocation", "gputally_pod_gpu_utilization_ratio"} {
		if len(got.byName[name]) == 0 {
			t.Errorf("no %s series in the history", name)
		}
	}
	// Two hours every 30 s: 241 scrapes, the first at start, timestamps in ms.
	for _, key := range got.byName["DCGM_FI_DEV_POWER_USAGE"] {
		ts := got.times[key]
		if len(ts) != 241 || ts[0] != start.UnixMilli() || ts[1]-ts[0] != 30_000 {
			t.Fatalf("%s: %d samples from %d step %d; want 241 from %d step 30000", key, len(ts), ts[0], ts[1]-ts[0], start.UnixMilli())
		}
	}
	// The last written EUR equals the ledger's own total, and the node's EUR is
	// its rate × 2 h (8 GPUs, each 1 GPU-second per second).
	var written, ledger, seconds float64
	for _, key := range got.byName["gputally_cost_eur_total"] {
		written += got.last[key]
	}
	for _, key := range got.byName["gputally_gpu_seconds_total"] {
		seconds += got.last[key]
	}
	for _, tot := range res.Totals {
		ledger += tot.EUR
	}
	if ledger <= 0 || math.Abs(written-ledger) > 1e-9*ledger {
		t.Errorf("written EUR %v, ledger EUR %v", written, ledger)
	}
	if want := 8 * 2 * 3600.0; math.Abs(seconds-want) > 1e-6*want {
		t.Errorf("GPU-seconds %v, want %v", seconds, want)
	}
	capital := 0.0
	for _, r := range res.Rates {
		capital += r.Rate.Capital
	}
	if min := capital * 2; ledger < min {
		t.Errorf("EUR %v below the capital cost of two hours %v", ledger, min)
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	opts := Options{Start: start, Duration: 10 * time.Minute}
	if _, err := writeNode(context.Background(), &a, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := writeNode(context.Background(), &b, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs of one scenario, seed and start differ")
	}
}

func TestWriteRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Duration: 0},
		{Duration: time.Hour, SampleInterval: time.Minute, ScrapeInterval: time.Second},
		{Duration: time.Hour, SampleInterval: -time.Second},
	} {
		if _, err := writeNode(context.Background(), io.Discard, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestWriteHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := writeNode(ctx, io.Discard, Options{Start: start, Duration: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// BenchmarkDay measures one simulated day of the default node (8 GPUs, two in
// MIG mode), sampled every 10 s and scraped every 30 s; a week is 7 of these.
func BenchmarkDay(b *testing.B) {
	for b.Loop() {
		if _, err := writeNode(context.Background(), io.Discard, Options{Start: start, Duration: 24 * time.Hour, Book: cost.Default()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShortJobsDay measures one simulated day of
// testdata/scenarios/short-jobs.yaml: five jobs whose pods start and end every
// few minutes, each change a kubelet refresh.
func BenchmarkShortJobsDay(b *testing.B) {
	sc, err := sim.Load("../testdata/scenarios/short-jobs.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := writeNode(context.Background(), io.Discard, Options{Scenario: sc, Start: start, Duration: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// checkFamiliesOnce fails t for every metric family that appears more than
// once in families: OpenMetrics forbids interleaving a family's samples.
func checkFamiliesOnce(t *testing.T, families []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range families {
		if seen[f] {
			t.Errorf("family %s is interleaved: it appears twice", f)
		}
		seen[f] = true
	}
}

// writeNode runs the node of opts (the built-in one when opts.Scenario is
// nil) as a fleet of one and writes its OpenMetrics to w.
func writeNode(ctx context.Context, w io.Writer, opts Options) (Result, error) {
	sc := opts.Scenario
	if sc == nil {
		sc = sim.Default()
	}
	return WriteFleet(ctx, w, opts, []*sim.Scenario{sc})
}
