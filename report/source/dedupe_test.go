package source

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestDuplicateSeriesCountOnce: a holding whose ledger series come twice
// (an HA pair without deduplication: prometheus_replica a and b, b scraped
// 10 s later) and once more through a second scrape job is counted once, and
// the report names the labels it collapsed; a holding whose exporter
// restarted in a new pod (a new instance, counting from 0) counts both
// series. Without dedupe labels the copies count three times.
func TestDuplicateSeriesCountOnce(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Hour)
	b := NewStoreBuilder()
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
	q := NewEngineQuerier(b.Store(), time.Minute, discard())

	for _, tc := range []struct {
		name   string
		labels []string
		train  float64 // device-seconds the report must read for train-0
	}{
		{"dedupe", DefaultDedupeLabels, 3 * 3600},
		{"none", nil, 3 * 3 * 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(q, LedgerOptions{MaxPointsPerQuery: 1000, DedupeLabels: tc.labels})
			d, err := l.Collect(context.Background(), model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for k, e := range d.Ledger {
				got[k.Holder.Pod] += e.Seconds[model.StateBusy]
			}
			// A copy scraped 10 s later reads up to 10 s more at a bucket's end: the
			// max of the copies is within one scrape offset of one copy.
			if math.Abs(got["train-0"]-tc.train) > 10*float64(len(tc.labels)+1) {
				t.Errorf("train-0: %.0f device-seconds, want %.0f", got["train-0"], tc.train)
			}
			// The restarted exporter loses what accrued after its last scrape
			// before the restart (up to 30 s); both series count.
			if want := 3 * 3600.0; math.Abs(got["eval-0"]-want) > 31 {
				t.Errorf("eval-0 across a restart in a new pod: %.0f device-seconds, want %.0f", got["eval-0"], want)
			}
			notes := strings.Join(d.Notes, "\n")
			if tc.labels == nil {
				if notes != "" {
					t.Errorf("notes %q without dedupe labels", notes)
				}
				return
			}
			for _, want := range []string{`prometheus_replica "a", "b"`, `job "gpu-metrics", "gputally"`, "counted once"} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes %q do not say %q", notes, want)
				}
			}
		})
	}
}
