package ledger

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// TestDuplicateSeriesCountOnce: a holding whose ledger series come twice
// (an HA pair without deduplication: prometheus_replica a and b, b scraped
// 10 s later) and once more through a second scrape job is counted once, and
// the report names the labels it collapsed; a holding whose exporter
// restarted in a new pod (a new instance, counting from 0) counts both
// series. Without dedupe labels the copies are an error that names them: the
// GPU's three copies count 3 × 3,600 = 10,800 device-seconds in the first
// hour, more than its 3,600 and the 300 of scrape timing allowed.
func TestDuplicateSeriesCountOnce(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Hour)
	b := engine.NewStoreBuilder()
	scrape := func(extra []string, pod string, from, to time.Time, offset time.Duration) {
		base := append([]string{"UUID", "GPU-" + pod, "gpu", "0", "hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", pod, "container", "main", "state", "busy"}, extra...)
		for ts := from.Add(offset); ts.Before(to); ts = ts.Add(30 * time.Second) {
			appendLedger(t, b, base, ts, ts.Sub(from).Seconds())
		}
	}
	// train-0 runs the whole range, scraped by both replicas and by a second job.
	scrape([]string{"job", "gputally", "instance", "10.0.0.1:9400", "prometheus_replica", "a"}, "train-0", start.Add(-time.Minute), end.Add(time.Minute), time.Second)
	scrape([]string{"job", "gputally", "instance", "10.0.0.1:9400", "prometheus_replica", "b"}, "train-0", start.Add(-time.Minute), end.Add(time.Minute), 11*time.Second)
	scrape([]string{"job", "gpu-metrics", "instance", "10.0.0.1:9400", "prometheus_replica", "a"}, "train-0", start.Add(-time.Minute), end.Add(time.Minute), time.Second)
	// eval-0's exporter restarted at 1h30m in a new pod: two instances one after the other.
	restart := start.Add(90 * time.Minute)
	scrape([]string{"job", "gputally", "instance", "10.0.0.1:9400", "prometheus_replica", "a"}, "eval-0", start.Add(-time.Minute), restart, time.Second)
	scrape([]string{"job", "gputally", "instance", "10.0.0.7:9400", "prometheus_replica", "a"}, "eval-0", restart, end.Add(time.Minute), time.Second)
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())

	r := model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute}
	t.Run("none", func(t *testing.T) {
		_, err := New(q, Options{MaxPointsPerQuery: 1000}).Collect(context.Background(), r)
		for _, want := range []string{"GPU GPU-train-0 on node node-0: 10800 device-seconds in the step bucket ending 2026-01-05T01:00:00Z",
			`job="gpu-metrics"`, `job="gputally"`, "differ only in job", "--report.dedupe-labels"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("copies without dedupe labels: error %v, want one saying %q", err, want)
			}
		}
	})
	t.Run("dedupe", func(t *testing.T) {
		l := New(q, Options{MaxPointsPerQuery: 1000, DedupeLabels: source.DefaultDedupeLabels})
		d, err := l.Collect(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for k, e := range d.Ledger {
			got[k.Holder.Pod] += e.Seconds[model.StateBusy]
		}
		// A copy scraped 10 s later reads up to 10 s more at a bucket's end: the
		// max of the copies is within one scrape offset of one copy, 10 s at
		// each end of the range.
		if math.Abs(got["train-0"]-3*3600) > 20 {
			t.Errorf("train-0: %.0f device-seconds, want %d", got["train-0"], 3*3600)
		}
		// The restarted exporter loses what accrued after its last scrape
		// before the restart (up to 30 s); both series count.
		if want := 3 * 3600.0; math.Abs(got["eval-0"]-want) > 31 {
			t.Errorf("eval-0 across a restart in a new pod: %.0f device-seconds, want %.0f", got["eval-0"], want)
		}
		notes := strings.Join(d.Notes, "\n")
		for _, want := range []string{`prometheus_replica "a", "b"`, `job "gpu-metrics", "gputally"`, "counted once"} {
			if !strings.Contains(notes, want) {
				t.Errorf("notes %q do not say %q", notes, want)
			}
		}
	})
}
