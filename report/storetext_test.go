package report

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
	"github.com/gputally/gputally/report/engine"
)

// TestScrapesStoreAsTheirText runs the same simulation twice, once written as
// OpenMetrics and loaded back (the old demo path), once handed straight to a
// StoreBuilder (the demo's path), and checks that both stores hold the same
// series with the same samples (the report's TestScrapesReportAsTheirText
// checks that the report over them is the same).
func TestScrapesStoreAsTheirText(t *testing.T) {
	sc, err := sim.Load(demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	opts := history.Options{Scenario: sc, Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
		Duration: 5 * time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second}
	var text bytes.Buffer
	res, err := history.WriteFleet(context.Background(), &text, opts, []*sim.Scenario{sc})
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := engine.LoadOpenMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	b := engine.NewStoreBuilder()
	if _, err := history.Run(context.Background(), opts, b); err != nil {
		t.Fatal(err)
	}
	if b.Samples() != res.Samples {
		t.Errorf("store took %d samples, the text has %d", b.Samples(), res.Samples)
	}
	direct := b.Store()

	want, got := dumpStore(t, fromText), dumpStore(t, direct)
	if len(got) != len(want) {
		t.Errorf("direct store has %d series, the loaded text %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("series %s missing from the direct store", k)
		} else if !reflect.DeepEqual(g, w) {
			t.Errorf("series %s: direct store has %d samples, the loaded text %d, or their values differ", k, len(g), len(w))
		}
	}
	// The run must have exercised what could differ: pods' label sets, empty
	// label values (dropped, as Prometheus drops them: the lost GPU's series
	// have no pod label) and series that stop (the lost GPU's).
	if !hasSeries(want, `pod="train"`, `state="busy"`) || !hasSeries(want, `pod="build-0"`) ||
		!hasSeries(want, `gputally_gpu_seconds_total`, `state="lost"`) || hasSeries(want, `pod=""`) {
		t.Fatalf("the simulation lacks the series the comparison is about; have %d series", len(want))
	}
}

// TestFleetScrapesStoreAsTheirText: a fleet of two nodes handed to the store
// one node after the other (history.RunFleet) stores what the fleet's text
// holds (history.WriteFleet), every sample with its node's instance label.
func TestFleetScrapesStoreAsTheirText(t *testing.T) {
	a, err := sim.Load(demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	a.Node.Hostname = "first"
	b := sim.Default()
	b.Node.Hostname = "second"
	nodes := []*sim.Scenario{a, b}
	opts := history.Options{Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
		Duration: time.Hour, SampleInterval: 10 * time.Second, ScrapeInterval: 30 * time.Second}
	var text bytes.Buffer
	res, err := history.WriteFleet(context.Background(), &text, opts, nodes)
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := engine.LoadOpenMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	sb := engine.NewStoreBuilder()
	if _, err := history.RunFleet(context.Background(), opts, nodes, sb); err != nil {
		t.Fatal(err)
	}
	if sb.Samples() != res.Samples {
		t.Errorf("store took %d samples, the text has %d", sb.Samples(), res.Samples)
	}
	want, got := dumpStore(t, fromText), dumpStore(t, sb.Store())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("direct store has %d series, the loaded text %d, or their samples differ", len(got), len(want))
	}
	perInstance := map[string]int{}
	for k := range got {
		switch {
		case strings.Contains(k, `instance="first"`):
			perInstance["first"]++
		case strings.Contains(k, `instance="second"`):
			perInstance["second"]++
		default:
			t.Errorf("series %s has no node's instance label", k)
		}
	}
	if perInstance["first"] == 0 || perInstance["second"] == 0 {
		t.Errorf("series per instance %v, want both nodes", perInstance)
	}
}

type storedSample struct {
	t int64
	v float64
}

// dumpStore returns every series of st by its label text, read through
// the storage.Querier the PromQL engine reads.
func dumpStore(t *testing.T, st *engine.Store) map[string][]storedSample {
	t.Helper()
	q, err := st.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]storedSample{}
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for set.Next() {
		s := set.At()
		var samples []storedSample
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			samples = append(samples, storedSample{t, v})
		}
		out[s.Labels().String()] = samples
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func hasSeries(series map[string][]storedSample, parts ...string) bool {
	for k, s := range series {
		ok := len(s) > 0
		for _, p := range parts {
			ok = ok && strings.Contains(k, p)
		}
		if ok {
			return true
		}
	}
	return false
}
