package ledger

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// TestBusyAtOnceMultiGPUPod: devices are counted, not pods. In namespace
// train, the pod big-0 holds GPU-0 … GPU-7 busy from 0:10 to 0:40, and
// small holds GPU-8 busy from 0:30 to 0:50; the exporter is scraped every
// 30 s, 15 s off the minute. By hand: 9 devices busy at once from 0:30 to
// 0:40 (8 of big-0's and small's), not the 2 pods.
func TestBusyAtOnceMultiGPUPod(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	b := engine.NewStoreBuilder()
	type device struct {
		uuid, pod string
		from, to  time.Duration
	}
	var devices []device
	for i := range 8 {
		devices = append(devices, device{fmt.Sprintf("GPU-%d", i), "big-0", 10 * time.Minute, 40 * time.Minute})
	}
	devices = append(devices, device{"GPU-8", "small", 30 * time.Minute, 50 * time.Minute})
	for ts := start.Add(15 * time.Second); ts.Before(end); ts = ts.Add(30 * time.Second) {
		off := ts.Sub(start)
		for i, dev := range devices {
			if off <= dev.from {
				continue
			}
			base := []string{"UUID", dev.uuid, "gpu", fmt.Sprint(i), "hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
				"namespace", "train", "pod", dev.pod, "container", "main", "state", "busy"}
			appendLedger(t, b, base, ts, (min(off, dev.to) - dev.from).Seconds())
		}
		if err := b.Append(labels.FromStrings("__name__", "gputally_up", "backend", "sim"), ts.UnixMilli(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if peak, want := busyPeaks(t, b.Store(), source.Identity{}, start, end), map[model.ConcurrencyKey]int{{Namespace: "train"}: 9}; !maps.Equal(peak, want) {
		t.Errorf("devices busy at once %v, want %v", peak, want)
	}
}

// busyPeaks reads the devices busy at once in st over (start, end], in 1 h
// buckets and 5 min resolution steps, and returns the most per namespace and
// MIG profile.
func busyPeaks(t *testing.T, st *engine.Store, id source.Identity, start, end time.Time) map[model.ConcurrencyKey]int {
	t.Helper()
	d := model.NewDataset(model.Range{Start: start, End: end, Step: time.Hour, Resolution: 5 * time.Minute})
	c := &collector{id: id, run: engine.NewRunner(engine.NewEmbeddedQuerier(st, time.Minute, discard()), engine.Limits{MaxPoints: 1000}, nil)}
	if err := c.concurrency(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	peak := map[model.ConcurrencyKey]int{}
	for k, busy := range d.Concurrency.Busy {
		for _, n := range busy {
			peak[k] = max(peak[k], int(n))
		}
	}
	return peak
}
