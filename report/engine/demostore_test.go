package source

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/history"
)

// demoScenario is the scenario of the demo-store tests; the file says what it plays.
var demoScenario = filepath.Join("..", "testdata", "demo-store.yaml")

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
	fromText, err := LoadOpenMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	b := NewStoreBuilder()
	if _, err := history.Run(context.Background(), opts, b); err != nil {
		t.Fatal(err)
	}
	if b.Samples() != res.Samples {
		t.Errorf("store took %d samples, the text has %d", b.Samples(), res.Samples)
	}
	direct := b.Store()

	want, got := dump(fromText), dump(direct)
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

type sample struct {
	t int64
	v float64
}

// dump returns every series of st by its label text.
func dump(st *Store) map[string][]sample {
	out := map[string][]sample{}
	for _, list := range st.byName {
		for _, s := range list {
			var samples []sample
			for _, c := range s.chunks {
				it := c.Chunk.Iterator(nil)
				for it.Next() == chunkenc.ValFloat {
					t, v := it.At()
					samples = append(samples, sample{t, v})
				}
			}
			out[s.lset.String()] = samples
		}
	}
	return out
}

func hasSeries(series map[string][]sample, parts ...string) bool {
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

// TestAddScrape checks what one scrape stores: counter, gauge and untyped
// values under the family's name and its label pairs, labels with empty
// values dropped as the text loader and Prometheus drop them; NaN values and
// other types skipped; a
// scrape not after the previous one refused.
func TestAddScrape(t *testing.T) {
	pair := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }
	f := func(v float64) *float64 { return &v }
	name := func(s string) *string { return &s }
	scrape := []*dto.MetricFamily{
		{Name: name("c_total"), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{pair("gpu", "0"), pair("pod", "")}, Counter: &dto.Counter{Value: f(3)}},
			{Label: []*dto.LabelPair{pair("gpu", "1"), pair("pod", "")}, Counter: &dto.Counter{Value: f(math.NaN())}},
		}},
		{Name: name("g"), Metric: []*dto.Metric{
			{Gauge: &dto.Gauge{Value: f(0.5)}},
			{Label: []*dto.LabelPair{pair("a", "x")}, Untyped: &dto.Untyped{Value: f(7)}},
			{Label: []*dto.LabelPair{pair("a", "y")}, Summary: &dto.Summary{}},
		}},
	}
	b := NewStoreBuilder()
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := b.AddScrape(scrape, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddScrape(scrape, t0.Add(time.Minute)); err == nil {
		t.Error("a scrape before the last one was stored")
	}
	if b.Samples() != 9 {
		t.Errorf("stored %d samples, want 3 scrapes × 3", b.Samples())
	}
	got := dump(b.Store())
	ms := func(i int) int64 { return t0.Add(time.Duration(i) * time.Minute).UnixMilli() }
	want := map[string][]sample{
		labels.FromStrings("__name__", "c_total", "gpu", "0").String(): {{ms(0), 3}, {ms(1), 3}, {ms(2), 3}},
		labels.FromStrings("__name__", "g").String():                   {{ms(0), 0.5}, {ms(1), 0.5}, {ms(2), 0.5}},
		labels.FromStrings("__name__", "g", "a", "x").String():         {{ms(0), 7}, {ms(1), 7}, {ms(2), 7}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("store holds %v, want %v", got, want)
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
	fromText, err := LoadOpenMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	sb := NewStoreBuilder()
	if _, err := history.RunFleet(context.Background(), opts, nodes, sb); err != nil {
		t.Fatal(err)
	}
	if sb.Samples() != res.Samples {
		t.Errorf("store took %d samples, the text has %d", sb.Samples(), res.Samples)
	}
	want, got := dump(fromText), dump(sb.Store())
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
