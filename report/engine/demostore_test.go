package engine

import (
	"math"
	"reflect"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

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
