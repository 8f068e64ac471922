package report

import (
	"context"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// inFlightCounter is a Querier that counts the requests in flight at once
// and remembers the most. It is safe for concurrent use.
type inFlightCounter struct {
	engine.Querier
	mu        sync.Mutex
	now, most int
}

func (c *inFlightCounter) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}()
	return c.Querier.QueryRange(ctx, q, start, end, step)
}

// TestQueriesInFlightSameFigures reads the synthetic fleet (synth_test.go:
// 24 GPUs × 2 days, 60 s scrapes) through the embedded engine with one
// request in flight and with four, requests bounded to 2,000 samples so that
// every query is split into many: the datasets are the same, the requests in
// flight never more than the bound, and the EUR the ledger counted (the
// fleet's hand-summed totals) come out at both.
func TestQueriesInFlightSameFigures(t *testing.T) {
	const gpus = 24
	scrape, ticks := time.Minute, 2*24*60
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	fams, want := synthFleet(gpus, scrape, ticks)
	sb := NewStoreBuilder()
	if err := appendFleet(sb, fams, start, scrape, ticks); err != nil {
		t.Fatal(err)
	}
	q := engine.NewEmbeddedQuerier(sb.Store(), time.Minute, discard())
	datasets := map[int]*model.Dataset{}
	for _, n := range []int{1, 4} {
		cfg := DefaultConfig()
		cfg.Range, cfg.End = 48*time.Hour, start.Add(48*time.Hour)
		cfg.MaxSamplesPerQuery, cfg.QueriesInFlight = 2000, n
		counter := &inFlightCounter{Querier: q}
		d, err := cfg.ledger(counter).Collect(context.Background(), model.Range{Start: start, End: cfg.End, Step: cfg.Step, Resolution: cfg.Resolution})
		if err != nil {
			t.Fatal(err)
		}
		if counter.most > n {
			t.Errorf("%d in flight: up to %d requests at once", n, counter.most)
		}
		var eur, idle float64
		for _, k := range model.SortedKeys(d.Ledger) {
			for st, v := range d.Ledger[k].EUR {
				eur += v
				if st == model.StateIdle {
					idle += v
				}
			}
		}
		if math.Abs(eur-want.eur) > 1e-9*want.eur || math.Abs(idle-want.idleEUR) > 1e-9*want.idleEUR {
			t.Errorf("%d in flight: %.6f EUR, %.6f idle; the ledger counted %.6f and %.6f", n, eur, idle, want.eur, want.idleEUR)
		}
		if d.Requests < 50 {
			t.Errorf("%d in flight: %d requests, want the queries split into many", n, d.Requests)
		}
		d.Requests = 0 // waves size their requests by the most series of the wave before
		datasets[n] = d
	}
	if !reflect.DeepEqual(datasets[1], datasets[4]) {
		t.Error("the dataset read with 4 requests in flight differs from the one read with 1")
	}
}
