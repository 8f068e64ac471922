package engine

import (
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// How the embedded engine reads a Store's series. Prometheus' adapter from
// chunk series to series (storage.NewSeriesSetFromChunkSeriesSet) merges a
// series' chunks as if they were separate series: every chunk gets its own
// decoder, and a seek seeks each of them — decoding every chunk before the
// time sought, for every series selected, at every query. A week of 30 s
// scrapes is 84 chunks a series, and the report's queries of the range's last
// bucket read the whole week. A Store's chunks of one series are in time order
// and do not overlap, so a seek can skip to the first chunk that ends at or
// after the time sought (memIterator), and a series set hands out the series
// themselves (memSeriesSet).

// Labels implements storage.Series.
func (s *memSeries) Labels() labels.Labels { return s.lset }

// Iterator implements storage.Series: it reuses it when it is a memIterator.
func (s *memSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	m, ok := it.(*memIterator)
	if !ok {
		m = &memIterator{}
	}
	m.reset(s.chunks)
	return m
}

// memIterator iterates over the float samples of a series' chunks, which are
// in time order and do not overlap. It is not safe for concurrent use.
type memIterator struct {
	metas []chunks.Meta
	i     int               // chunk of cur
	cur   chunkenc.Iterator // over metas[i]; nil before the first Next or Seek
	at    bool              // cur is at a sample
	done  bool              // past the last sample
}

func (m *memIterator) reset(metas []chunks.Meta) {
	cur := m.cur
	*m = memIterator{metas: metas, cur: cur}
	if len(metas) == 0 {
		m.done = true
		return
	}
	if cur != nil {
		m.cur = metas[0].Chunk.Iterator(cur)
	}
}

// open points cur at chunk i, reusing the decoder.
func (m *memIterator) open(i int) {
	m.i, m.at = i, false
	m.cur = m.metas[i].Chunk.Iterator(m.cur)
}

// Next implements chunkenc.Iterator.
func (m *memIterator) Next() chunkenc.ValueType {
	if m.done {
		return chunkenc.ValNone
	}
	if m.cur == nil {
		m.open(0)
	}
	for {
		if vt := m.cur.Next(); vt != chunkenc.ValNone {
			m.at = true
			return vt
		}
		if m.cur.Err() != nil || m.i+1 == len(m.metas) {
			m.at, m.done = false, true
			return chunkenc.ValNone
		}
		m.open(m.i + 1)
	}
}

// unixMillis is a sample's time, milliseconds since the epoch, as the
// Iterator's int64. (Named, it also tells go vet that Seek is
// chunkenc.Iterator's, not io.Seeker's.)
type unixMillis = int64

// Seek implements chunkenc.Iterator: the first sample at or after t, from the
// first chunk that ends at or after t; no effect when the current sample is
// already there.
func (m *memIterator) Seek(t unixMillis) chunkenc.ValueType {
	if m.done {
		return chunkenc.ValNone
	}
	if m.at && m.cur.AtT() >= t {
		return chunkenc.ValFloat
	}
	rest := m.metas[m.i:]
	j := m.i + sort.Search(len(rest), func(k int) bool { return rest[k].MaxTime >= t })
	if j == len(m.metas) {
		m.at, m.done = false, true
		return chunkenc.ValNone
	}
	if j != m.i || m.cur == nil {
		m.open(j)
	}
	// Chunk j ends at or after t, so it holds the sample sought.
	vt := m.cur.Seek(t)
	m.at = vt != chunkenc.ValNone
	m.done = !m.at
	return vt
}

// At implements chunkenc.Iterator.
func (m *memIterator) At() (int64, float64) { return m.cur.At() }

// AtHistogram implements chunkenc.Iterator: a Store holds floats only.
func (m *memIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return m.cur.AtT(), nil
}

// AtFloatHistogram implements chunkenc.Iterator: a Store holds floats only.
func (m *memIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return m.cur.AtT(), nil
}

// AtT implements chunkenc.Iterator.
func (m *memIterator) AtT() int64 { return m.cur.AtT() }

// AtST implements chunkenc.Iterator: a Store keeps no start timestamps.
func (m *memIterator) AtST() int64 { return 0 }

// Err implements chunkenc.Iterator.
func (m *memIterator) Err() error {
	if m.cur == nil {
		return nil
	}
	return m.cur.Err()
}
