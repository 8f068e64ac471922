package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// familyWriter is the Sink of Write: OpenMetrics wants each family's samples
// contiguous, and a run produces them scrape after scrape, so each family is
// spooled to its own temporary file until the end. The spool is binary, about
// ten bytes a sample (a series number and the value), not the text the output
// repeats the labels in (about 250 bytes): a week of the built-in node spools
// 80 MB instead of 2 GB, and a series' labels are rendered once per spool, not
// once per sample. Only the run's sink goroutine uses it.
type familyWriter struct {
	dir      string
	families map[string]*family
	// pairs holds each label pair rendered as `name="escaped value"`. The
	// collector interns its pairs across scrapes, so most lookups hit; the map
	// is emptied when it grows past maxRenderedPairs, so that pods that ended
	// leave nothing behind and memory stays constant over a long run.
	pairs map[*dto.LabelPair]string
	// seriesBytes counts the memory the families' series maps hold (label
	// text and entries); past maxSeriesBytes (defaultSeriesBytes) they are all emptied (a series met again is spooled with
	// its labels again), so memory stays bounded however many pods come and go.
	seriesBytes, maxSeriesBytes int
	labels                      []byte // scratch: the labels of one sample
}

// pairsKey identifies a series of a family by its label pairs, which the
// collector interns: one map lookup a sample, where rendering its labels to
// look them up would cost one a pair. A family's series map holds its keys' pairs, so
// their addresses are not reused while it names them. A series with more
// labels than a key holds is looked up by its text.
type pairsKey [maxKeyLabels]*dto.LabelPair

// maxKeyLabels is more than any series of the collector has (14: a MIG
// instance's allocation, with a fleet's instance label).
const maxKeyLabels = 16

// Bounds of familyWriter's memory: a few scrapes of a big node.
const (
	maxRenderedPairs   = 1 << 16
	defaultSeriesBytes = 32 << 20 // familyWriter.maxSeriesBytes
	// seriesEntryBytes is what a series map entry holds besides its label
	// text: the key and the number, and the map's own share, about.
	seriesEntryBytes = maxKeyLabels*8 + 8 + 16
	// maxLabelTextBytes bounds one series' label text read back from a
	// spool, so that a damaged spool is an error, not a huge allocation.
	maxLabelTextBytes = 1 << 20
)

// family is one metric family's spool. Its records, one per scrape: the
// scrape's time (varint, Unix milliseconds), the number of samples (uvarint),
// then per sample the series number shifted left once (uvarint; the low bit
// set when the series' label text follows: uvarint length, bytes) and the
// value (8 bytes, little-endian IEEE 754). Series are numbered from 0 in the
// order met; after the series map is emptied numbering starts again at 0 and
// each number is defined again before its first use.
type family struct {
	typ    string
	file   *os.File
	buf    *bufio.Writer
	series map[pairsKey]uint64 // series number by label pairs
	long   map[string]uint64   // by label text, for series of more than maxKeyLabels labels
	next   uint64              // the number of the next new series
}

func newFamilyWriter() (*familyWriter, error) {
	dir, err := os.MkdirTemp("", "gputally-history")
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &familyWriter{dir: dir, families: map[string]*family{}, pairs: map[*dto.LabelPair]string{}, maxSeriesBytes: defaultSeriesBytes}, nil
}

func (fw *familyWriter) close() {
	for _, f := range fw.families {
		f.file.Close()
	}
	os.RemoveAll(fw.dir)
}

// AddScrape spools the samples of mfs at time t; it implements Sink.
func (fw *familyWriter) AddScrape(mfs []*dto.MetricFamily, t time.Time) error {
	var rec []byte
	for _, mf := range mfs {
		f, err := fw.family(mf)
		if err != nil {
			return err
		}
		rec = binary.AppendVarint(rec[:0], t.UnixMilli())
		rec = binary.AppendUvarint(rec, uint64(len(mf.GetMetric())))
		for _, m := range mf.GetMetric() {
			if id, ok := fw.lookup(f, m.GetLabel()); ok {
				rec = binary.AppendUvarint(rec, id<<1)
			} else {
				fw.labels = fw.appendLabels(fw.labels[:0], m.GetLabel())
				id = fw.remember(f, m.GetLabel(), fw.labels)
				rec = binary.AppendUvarint(rec, id<<1|1)
				rec = binary.AppendUvarint(rec, uint64(len(fw.labels)))
				rec = append(rec, fw.labels...)
			}
			rec = binary.LittleEndian.AppendUint64(rec, math.Float64bits(value(mf.GetType(), m)))
		}
		if _, err := f.buf.Write(rec); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	return nil
}

// lookup returns the number of the series of f with labels.
func (fw *familyWriter) lookup(f *family, labels []*dto.LabelPair) (uint64, bool) {
	if len(labels) > maxKeyLabels {
		fw.labels = fw.appendLabels(fw.labels[:0], labels)
		id, ok := f.long[string(fw.labels)]
		return id, ok
	}
	var k pairsKey
	copy(k[:], labels)
	id, ok := f.series[k]
	return id, ok
}

// remember numbers the series of f with labels, rendered as text, first
// emptying every family's series maps when they hold maxSeriesBytes of
// labels, and returns its number.
func (fw *familyWriter) remember(f *family, labels []*dto.LabelPair, text []byte) uint64 {
	size := len(text) + seriesEntryBytes
	if fw.seriesBytes+size > fw.maxSeriesBytes {
		for _, f := range fw.families {
			clear(f.series)
			clear(f.long)
			f.next = 0
		}
		fw.seriesBytes = 0
	}
	id := f.next
	f.next++
	if len(labels) > maxKeyLabels {
		f.long[string(text)] = id
	} else {
		var k pairsKey
		copy(k[:], labels)
		f.series[k] = id
	}
	fw.seriesBytes += size
	return id
}

func (fw *familyWriter) family(mf *dto.MetricFamily) (*family, error) {
	if f, ok := fw.families[mf.GetName()]; ok {
		return f, nil
	}
	file, err := os.CreateTemp(fw.dir, "family")
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	// Counters without the _total suffix (the DCGM names) are not valid
	// OpenMetrics counters; their type is not needed to query them.
	typ := "unknown"
	if mf.GetType() == dto.MetricType_GAUGE {
		typ = "gauge"
	}
	f := &family{typ: typ, file: file, buf: bufio.NewWriterSize(file, 64<<10), series: map[pairsKey]uint64{}, long: map[string]uint64{}}
	fw.families[mf.GetName()] = f
	return f, nil
}

// writeTo writes the families, sorted by name, each from its spool, and "# EOF".
func (fw *familyWriter) writeTo(w io.Writer) error {
	names := make([]string, 0, len(fw.families))
	for n := range fw.families {
		names = append(names, n)
	}
	slices.Sort(names)
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, n := range names {
		fmt.Fprintf(bw, "# TYPE %s %s\n", n, fw.families[n].typ)
		if err := fw.families[n].writeTo(bw, n); err != nil {
			return err
		}
	}
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// writeTo renders the samples of f's spool, as family name, to w.
func (f *family) writeTo(w *bufio.Writer, name string) error {
	if err := f.buf.Flush(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if _, err := f.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	r := bufio.NewReaderSize(f.file, 64<<10)
	var (
		labels []string // by series number
		ts     []byte
		line   []byte
		raw    [8]byte
	)
	for {
		ms, err := binary.ReadVarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		n, err2 := binary.ReadUvarint(r)
		if err = errors.Join(err, err2); err != nil {
			return spoolError(err)
		}
		ts = strconv.AppendFloat(ts[:0], float64(ms)/1000, 'f', -1, 64)
		for range n {
			key, err := binary.ReadUvarint(r)
			if err != nil {
				return spoolError(err)
			}
			id := key >> 1
			if key&1 == 1 {
				text, err := readString(r)
				if err != nil {
					return spoolError(err)
				}
				switch {
				case id < uint64(len(labels)):
					labels[id] = text
				case id == uint64(len(labels)):
					labels = append(labels, text)
				default:
					return spoolError(fmt.Errorf("series %d defined before series %d", id, len(labels)))
				}
			}
			if id >= uint64(len(labels)) {
				return spoolError(fmt.Errorf("series %d used before it is defined", id))
			}
			if _, err := io.ReadFull(r, raw[:]); err != nil {
				return spoolError(err)
			}
			line = append(append(line[:0], name...), labels[id]...)
			line = append(line, ' ')
			line = strconv.AppendFloat(line, math.Float64frombits(binary.LittleEndian.Uint64(raw[:])), 'g', -1, 64)
			line = append(append(append(line, ' '), ts...), '\n')
			if _, err := w.Write(line); err != nil {
				return fmt.Errorf("write history: %w", err)
			}
		}
	}
}

// readString reads a uvarint length and that many bytes.
func readString(r *bufio.Reader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", err
	}
	if n > maxLabelTextBytes {
		return "", fmt.Errorf("label text of %d bytes, at most %d", n, maxLabelTextBytes)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// spoolError reports a spool that cannot be read back: the temporary file was
// changed or cut under the run.
func spoolError(err error) error {
	return fmt.Errorf("history: read back the spool: %w", err)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// appendLabels appends labels as `{name="value",...}` (nothing when there are none).
func (fw *familyWriter) appendLabels(b []byte, labels []*dto.LabelPair) []byte {
	if len(labels) == 0 {
		return b
	}
	b = append(b, '{')
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fw.rendered(l)...)
	}
	return append(b, '}')
}

// rendered returns l as `name="escaped value"`.
func (fw *familyWriter) rendered(l *dto.LabelPair) string {
	if r, ok := fw.pairs[l]; ok {
		return r
	}
	if len(fw.pairs) >= maxRenderedPairs {
		clear(fw.pairs)
	}
	r := l.GetName() + `="` + labelEscaper.Replace(l.GetValue()) + `"`
	fw.pairs[l] = r
	return r
}
