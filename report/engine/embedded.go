package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// samplesPerChunk bounds a chunk so that a seek skips whole chunks.
const samplesPerChunk = 240

// Store is an append-once, in-memory time-series store that the embedded
// PromQL engine reads: samples are XOR-compressed in chunks as Prometheus' own
// head block does. Build it with LoadOpenMetrics or a StoreBuilder (which
// takes a simulation's scrapes directly, see AddScrape); once built it
// is read-only and safe for concurrent use.
type Store struct {
	byName     map[string][]*memSeries // sorted by labels
	mint, maxt int64                   // ms; mint > maxt when empty
}

type memSeries struct {
	lset   labels.Labels
	chunks []chunks.Meta
	app    chunkenc.Appender
}

// StoreBuilder appends samples into a new Store. It is not safe for concurrent use.
type StoreBuilder struct {
	series map[uint64][]*memSeries // by labels hash, collisions chained
	mint   int64
	maxt   int64
	n      int
	// byKey finds the series of a scraped sample by its name and label
	// pairs (AddScrape); key is the buffer its keys are rendered in.
	byKey map[string]*memSeries
	key   []byte
}

// NewStoreBuilder returns an empty builder.
func NewStoreBuilder() *StoreBuilder {
	return &StoreBuilder{series: map[uint64][]*memSeries{}, mint: math.MaxInt64, maxt: math.MinInt64}
}

// Append adds one float sample at t (ms since the epoch) to the series lset.
// Samples of one series must come in increasing time order. A label with an
// empty value is no label, as in Prometheus' storage.
func (b *StoreBuilder) Append(lset labels.Labels, t int64, v float64) error {
	lset = lset.WithoutEmpty()
	return b.appendTo(b.seriesOf(lset), t, v)
}

// seriesOf returns the series lset, created empty if it is new.
func (b *StoreBuilder) seriesOf(lset labels.Labels) *memSeries {
	h := lset.Hash()
	for _, c := range b.series[h] {
		if labels.Equal(c.lset, lset) {
			return c
		}
	}
	s := &memSeries{lset: lset}
	b.series[h] = append(b.series[h], s)
	return s
}

// appendTo adds one sample to s, a series of b.
func (b *StoreBuilder) appendTo(s *memSeries, t int64, v float64) error {
	if n := len(s.chunks); n > 0 && t <= s.chunks[n-1].MaxTime {
		return fmt.Errorf("series %s: sample at %s is not after the previous one at %s",
			s.lset, time.UnixMilli(t).UTC().Format(time.RFC3339), time.UnixMilli(s.chunks[n-1].MaxTime).UTC().Format(time.RFC3339))
	}
	if n := len(s.chunks); n == 0 || s.chunks[n-1].Chunk.NumSamples() >= samplesPerChunk {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			return fmt.Errorf("series %s: new chunk: %w", s.lset, err)
		}
		s.chunks = append(s.chunks, chunks.Meta{MinTime: t, Chunk: c})
		s.app = app
	}
	s.app.Append(0, t, v)
	s.chunks[len(s.chunks)-1].MaxTime = t
	b.mint = min(b.mint, t)
	b.maxt = max(b.maxt, t)
	b.n++
	return nil
}

// compact copies the series' chunks into one buffer of their exact size,
// and its chunk list into a slice of its exact length: the buffers a chunk
// grows by appending, and the list, hold up to twice what they use.
func (s *memSeries) compact() {
	n := 0
	for _, m := range s.chunks {
		n += len(m.Chunk.Bytes())
	}
	buf := make([]byte, 0, n)
	metas := make([]chunks.Meta, len(s.chunks))
	for i, m := range s.chunks {
		off := len(buf)
		buf = append(buf, m.Chunk.Bytes()...)
		c, err := chunkenc.FromData(chunkenc.EncXOR, buf[off:len(buf):len(buf)])
		if err != nil { // cannot be: the bytes are an XOR chunk's
			panic(fmt.Sprintf("series %s: compact a chunk: %v", s.lset, err))
		}
		metas[i] = chunks.Meta{MinTime: m.MinTime, MaxTime: m.MaxTime, Chunk: c}
	}
	s.chunks = metas
}

// Samples returns how many samples were appended.
func (b *StoreBuilder) Samples() int { return b.n }

// Store returns the built store. The builder must not be used afterwards.
func (b *StoreBuilder) Store() *Store {
	st := &Store{byName: map[string][]*memSeries{}, mint: b.mint, maxt: b.maxt}
	for _, chain := range b.series {
		for _, s := range chain {
			s.app = nil
			s.compact()
			name := s.lset.Get(pmodel.MetricNameLabel)
			st.byName[name] = append(st.byName[name], s)
		}
	}
	for _, list := range st.byName {
		slices.SortFunc(list, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	}
	b.series, b.byKey = nil, nil
	return st
}

// TimeRange returns the times of the first and last sample; ok is false for an
// empty store.
func (s *Store) TimeRange() (first, last time.Time, ok bool) {
	if s.mint > s.maxt {
		return time.Time{}, time.Time{}, false
	}
	return time.UnixMilli(s.mint).UTC(), time.UnixMilli(s.maxt).UTC(), true
}

// LoadOpenMetrics reads OpenMetrics text whose samples all carry timestamps (the
// format `promtool tsdb create-blocks-from openmetrics` reads, and `gputally
// simulate history` writes) into a Store. Histogram samples are skipped; a
// sample without a timestamp is an error.
func LoadOpenMetrics(r io.Reader) (*Store, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read openmetrics: %w", err)
	}
	b := NewStoreBuilder()
	p := textparse.NewOpenMetricsParser(buf, labels.NewSymbolTable())
	var lset labels.Labels
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse openmetrics: %w", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		series, ts, v := p.Series()
		if ts == nil {
			return nil, fmt.Errorf("parse openmetrics: sample %s has no timestamp", series)
		}
		p.Labels(&lset)
		if err := b.Append(lset, *ts, v); err != nil {
			return nil, fmt.Errorf("load openmetrics: %w", err)
		}
	}
	return b.Store(), nil
}

// Querier implements storage.Queryable.
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &memQuerier{st: s, mint: mint, maxt: maxt}, nil
}

type memQuerier struct {
	st         *Store
	mint, maxt int64
}

func (q *memQuerier) candidates(ms []*labels.Matcher) []*memSeries {
	for _, m := range ms {
		if m.Name == pmodel.MetricNameLabel && m.Type == labels.MatchEqual {
			return q.st.byName[m.Value]
		}
	}
	var all []*memSeries
	for _, list := range q.st.byName {
		all = append(all, list...)
	}
	slices.SortFunc(all, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	return all
}

func (q *memQuerier) matching(ms []*labels.Matcher) []*memSeries {
	var out []*memSeries
	for _, s := range q.candidates(ms) {
		if len(s.chunks) == 0 || s.chunks[len(s.chunks)-1].MaxTime < q.mint || s.chunks[0].MinTime > q.maxt {
			continue
		}
		ok := true
		for _, m := range ms {
			if !m.Matches(s.lset.Get(m.Name)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func (q *memQuerier) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	return &memSeriesSet{list: q.matching(ms), i: -1}
}

func (q *memQuerier) LabelValues(_ context.Context, name string, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, s := range q.matching(ms) {
		if v := s.lset.Get(name); v != "" {
			seen[v] = struct{}{}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (q *memQuerier) LabelNames(_ context.Context, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, s := range q.matching(ms) {
		s.lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (*memQuerier) Close() error { return nil }

// memSeriesSet is the series a Select found; it hands out the Store's series
// themselves (memiter.go).
type memSeriesSet struct {
	list []*memSeries
	i    int
}

func (s *memSeriesSet) Next() bool { s.i++; return s.i < len(s.list) }

func (s *memSeriesSet) At() storage.Series { return s.list[s.i] }

func (*memSeriesSet) Err() error                        { return nil }
func (*memSeriesSet) Warnings() annotations.Annotations { return nil }
