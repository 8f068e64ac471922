package ledger

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/internal/faultengine"
	"github.com/gputally/gputally/report/model"
)

// TestWindowProbeUnavailable: a window probe the engine keeps answering 503
// (after the retries) leaves the windows half-open, and the ledger is read
// all the same: an hour of GPU-0 busy from 0 at −1h, scraped every 30 s on
// the minute, is 3,600 device-seconds and 3,600 × 2.70 / 3,600 = 2.70 EUR in
// (0, 1h]; the dataset says why in a note, not as data missing.
func TestWindowProbeUnavailable(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	b := engine.NewStoreBuilder()
	base := []string{"UUID", "GPU-0", "gpu", "0", "hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3", "namespace", "ml", "pod", "p", "container", "c", "state", "busy"}
	for ts := start.Add(-time.Hour); !ts.After(start.Add(time.Hour)); ts = ts.Add(30 * time.Second) {
		appendLedger(t, b, base, ts, ts.Sub(start.Add(-time.Hour)).Seconds())
	}
	srv := faultengine.New(engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard()),
		faultengine.Fault{Match: "vector(1)", Write: faultengine.Status(http.StatusServiceUnavailable, faultengine.HTMLPage("503 Service Unavailable"))})
	t.Cleanup(srv.Close)
	q, _ := engine.NewHTTPQuerier(srv.URL, engine.HTTPOptions{Retries: 2, Backoff: time.Millisecond})
	d, err := New(q, Options{MaxPointsPerQuery: 1000}).Collect(context.Background(),
		model.Range{Start: start, End: start.Add(time.Hour), Step: time.Hour, Resolution: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var secs, eur float64
	for _, e := range d.Ledger {
		secs += e.Seconds[model.StateBusy]
		eur += e.EUR[model.StateBusy]
	}
	notes := strings.Join(d.Notes, "\n")
	if math.Abs(secs-3600) > 1e-9 || math.Abs(eur-2.7) > 1e-12 || len(d.Warnings) > 0 ||
		!strings.Contains(notes, `the window probe count_over_time(vector(1)[2s:1s]) failed (the engine at `+srv.URL+` refused count_over_time(vector(1)[2s:1s]) for now: HTTP 503: an HTML page ("503 Service Unavailable"))`) {
		t.Errorf("%.3f s, %.6f EUR, warnings %q, notes %q; want 3600 s, 2.70 EUR, none, a note naming the 503", secs, eur, d.Warnings, notes)
	}
}
