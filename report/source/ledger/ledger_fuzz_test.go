package ledger

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/faultengine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// FuzzLedgerAnswers plays a ledger the fuzzer shapes — two GPUs scraped every
// 30 s over the hour before a 3-hour range and the range, each scrape's 30 s
// going to one of two states per GPU, and exporter restarts (every counter
// read 0 at the restart's scrape) where the fuzzer puts them — into
// Prometheus' own engine, and serves it over HTTP through a fault-injecting
// engine that changes the answers as the fuzzer says: a value set to NaN,
// ±Inf, a negative number or a huge count, a sample repeated or out of time
// order, a series reversed, copied as it is or with a label the query
// aggregates away. The ledger reading over HTTP (the answer decoder, the
// checks, the counter reading) must end in an error or in the ledger's own
// device-seconds and EUR: never another figure.
func FuzzLedgerAnswers(f *testing.F) {
	restart := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3}
	for _, seed := range []struct{ history, faults []byte }{
		{nil, nil},
		{restart, nil},
		{[]byte{0x55, 0xaa, 0xff, 0x0f}, nil},
		{restart, []byte{opNaN, 1, 0, 7}},
		{restart, []byte{opNegative, 2, 1, 3}},
		{restart, []byte{opPosInf, 3, 0, 1}},
		{restart, []byte{opHuge, 1, 0, 2}},
		{restart, []byte{opSwap, 5, 0, 100, opSwap, 6, 1, 2}},
		{restart, []byte{opReverse, 1, 0, 0}},
		{restart, []byte{opRepeat, 2, 0, 1}},
		{restart, []byte{opCopy, 1, 0, 0}},
		{restart, []byte{opCopyAggregated, 1, 0, 0}},
	} {
		f.Add(seed.history, seed.faults)
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, history, faults []byte) {
		store, seconds, eur := fuzzLedger(t, history, start)
		run := &fuzzRun{faults: faults}
		srv := faultengine.New(engine.NewEmbeddedQuerier(store, time.Minute, discard()), faultengine.Fault{Answer: run.change})
		defer srv.Close()
		q, err := engine.NewHTTPQuerier(srv.URL, engine.HTTPOptions{Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		l := New(q, Options{MaxPointsPerQuery: 1000, QueriesInFlight: 1, DedupeLabels: source.DefaultDedupeLabels})
		d, err := l.Collect(context.Background(), model.Range{Start: start, End: start.Add(3 * time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
		if err != nil {
			return
		}
		var gotSeconds, gotEUR float64
		for _, e := range d.Ledger {
			for st := range model.NumStates {
				gotSeconds += e.Seconds[st]
				gotEUR += e.EUR[st]
			}
		}
		if math.Abs(gotSeconds-seconds) > 1e-6 || math.Abs(gotEUR-eur) > 1e-9 {
			t.Fatalf("read %.6f device-seconds and %.9f EUR without an error; the ledger counted %.6f and %.9f", gotSeconds, gotEUR, seconds, eur)
		}
	})
}

// The faults the fuzzer can ask for; each is four bytes: the fault, which of
// the answers with series it changes, which series, which sample.
const (
	opNaN byte = iota
	opPosInf
	opNegInf
	opNegative
	opHuge
	opRepeat
	opRepeatOther
	opSwap
	opReverse
	opCopy
	opCopyAggregated
	numOps
)

// fuzzRun is one fuzz input's faults; change applies them, safe for the
// fault engine's concurrent requests.
type fuzzRun struct {
	faults  []byte
	mu      sync.Mutex
	answers int // answers with series changed or passed so far
}

func (r *fuzzRun) change(m pmodel.Matrix) pmodel.Matrix {
	if len(m) == 0 {
		return m
	}
	r.mu.Lock()
	n := r.answers
	r.answers++
	r.mu.Unlock()
	for i := 0; i+3 < len(r.faults); i += 4 {
		op, answer, series, sample := r.faults[i]%numOps, int(r.faults[i+1])%16, int(r.faults[i+2]), int(r.faults[i+3])
		if answer != n {
			continue
		}
		m = applyOp(m, op, m[series%len(m)], sample)
	}
	return m
}

// applyOp applies fault op to series s of m at its sample index sample (mod
// its length) and returns the answer.
func applyOp(m pmodel.Matrix, op byte, s *pmodel.SampleStream, sample int) pmodel.Matrix {
	switch op {
	case opCopy:
		return append(m, &pmodel.SampleStream{Metric: s.Metric.Clone(), Values: append([]pmodel.SamplePair(nil), s.Values...)})
	case opCopyAggregated:
		return faultengine.CopyWith("prometheus_replica", "b")(m)
	case opReverse:
		for i, j := 0, len(s.Values)-1; i < j; i, j = i+1, j-1 {
			s.Values[i], s.Values[j] = s.Values[j], s.Values[i]
		}
		return m
	}
	if len(s.Values) == 0 {
		return m
	}
	k := sample % len(s.Values)
	v := &s.Values[k].Value
	switch op {
	case opNaN:
		*v = pmodel.SampleValue(math.NaN())
	case opPosInf:
		*v = pmodel.SampleValue(math.Inf(1))
	case opNegInf:
		*v = pmodel.SampleValue(math.Inf(-1))
	case opNegative:
		*v = -*v - 1
	case opHuge:
		*v = pmodel.SampleValue([]float64{1e15, 1e300, math.MaxFloat64, 1 << 60}[sample%4])
	case opRepeat:
		s.Values = append(s.Values, s.Values[k])
	case opRepeatOther:
		s.Values = append(s.Values, pmodel.SamplePair{Timestamp: s.Values[k].Timestamp, Value: *v + 1})
	case opSwap:
		if k+1 < len(s.Values) {
			s.Values[k], s.Values[k+1] = s.Values[k+1], s.Values[k]
		}
	}
	return m
}

// fuzzLedger writes the ledger history shapes into a store: GPU-0 (1.50 EUR/h,
// held by ml/train, busy or idle) and GPU-1 (2.50 EUR/h, unallocated or
// unknown), scraped every 30 s from start − 1h to start + 3h. Scrape k's
// history byte (cycled; none: 0) gives the state its 30 s go to, bit 0
// GPU-0's and bit 4 GPU-1's; a byte 0xff restarts the exporter there: every
// counter reads 0, that scrape adds nothing. It returns the device-seconds and EUR the ledger added in the
// range (start, start + 3h] — each scrape's 30 s and their EUR, the restarts'
// none.
func fuzzLedger(t *testing.T, history []byte, start time.Time) (*engine.Store, float64, float64) {
	t.Helper()
	type gpu struct {
		labels [2][]string // the series of the two states
		rate   float64     // EUR per hour
	}
	gpus := []gpu{
		{[2][]string{
			{"UUID", "GPU-0", "gpu", "0", "namespace", "ml", "pod", "train", "container", "main", "state", "busy"},
			{"UUID", "GPU-0", "gpu", "0", "namespace", "ml", "pod", "train", "container", "main", "state", "idle"}}, 1.5},
		{[2][]string{
			{"UUID", "GPU-1", "gpu", "1", "namespace", "", "pod", "", "container", "", "state", "unallocated"},
			{"UUID", "GPU-1", "gpu", "1", "namespace", "", "pod", "", "container", "", "state", "unknown"}}, 2.5},
	}
	b := engine.NewStoreBuilder()
	counters := make([][2]float64, len(gpus)) // seconds per GPU and state
	var seconds, eur float64
	for k, ts := 0, start.Add(-time.Hour); !ts.After(start.Add(3 * time.Hour)); k, ts = k+1, ts.Add(30*time.Second) {
		var h byte
		if len(history) > 0 {
			h = history[k%len(history)]
		}
		for g := range gpus {
			switch {
			case h == 0xff:
				counters[g] = [2]float64{}
			case k > 0:
				st := int(h>>(4*g)) & 1
				counters[g][st] += 30
				if ts.After(start) {
					seconds += 30
					eur += 30 * gpus[g].rate / 3600
				}
			}
			for st, l := range gpus[g].labels {
				base := append([]string{"Hostname", "node-a", "modelName", "NVIDIA H100 80GB HBM3"}, l...)
				for name, v := range map[string]float64{secondsCounter: counters[g][st], eurCounter: counters[g][st] * gpus[g].rate / 3600} {
					if err := b.Append(labels.FromStrings(append([]string{"__name__", name}, base...)...), ts.UnixMilli(), v); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return b.Store(), seconds, eur
}
