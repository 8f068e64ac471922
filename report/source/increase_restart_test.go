package source

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/model"
)

// TestExactIncreaseRestartInGap: a holding's busy counter grows 0.05 s/s
// (180 device-seconds an hour); nobody scrapes it from 2:00 to 3:00, and its
// exporter restarts at 2:30, inside that gap, counting from 0 again. The
// first sample after the gap (3:00:30) holds 0.05 × 1,830 = 91.5 s, below
// the last value before it: the counter restarted, and what it holds was
// accrued since — read, into the bucket after the gap. Scrapes every 30 s
// on the minute over 4 hours of 1 h buckets. By hand, per bucket ending at
// 1h…4h:
//
//   - before the range (counting since −5:33:20, 1,000 s at the start): 180;
//     to the last scrape before the gap, 1:59:30, 178.5; the gap 0; after it,
//     the restarted counter's whole value at 4:00, 0.05 × 5,400 = 270;
//   - new in the range (created at 0:10, first scraped at 0:10:30): 0.05 ×
//     3,000 = 150; 178.5; 0; 270.
//
// A series new in the range has no value before the range: the value it is
// compared with is the last one seen in the range (328.5 at 1:59:30). Had
// the reading compared with nothing, or only counted a new series from 0,
// the second case read 270 − 91.5 = 178.5 in the last bucket.
func TestExactIncreaseRestartInGap(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(4 * time.Hour)
	const rate = 0.05 // device-seconds per second
	restart := 2*time.Hour + 30*time.Minute
	for _, c := range []struct {
		name    string
		created time.Duration // the counter is 0 at start+created
		want    [4]float64
	}{
		{name: "before the range", created: -20000 * time.Second, want: [4]float64{180, 178.5, 0, 270}},
		{name: "new in the range", created: 10 * time.Minute, want: [4]float64{150, 178.5, 0, 270}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewStoreBuilder()
			base := []string{"UUID", "GPU-0", "gpu", "0", "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
				"namespace", "ml", "pod", "p", "container", "c", "state", "busy"}
			for ts := start.Add(-6 * time.Hour); !ts.After(end); ts = ts.Add(30 * time.Second) {
				off := ts.Sub(start)
				if off <= c.created || off >= 2*time.Hour && off <= 3*time.Hour {
					continue // not created yet, or not scraped
				}
				from := c.created
				if off > restart {
					from = restart
				}
				appendLedger(t, b, base, ts, rate*(off-from).Seconds())
			}
			d, l := ledgerOver(t, NewEngineQuerier(b.Store(), time.Minute, discard()), start, end, time.Hour)
			g := d.GPUs[model.GPUKey{UUID: "GPU-0"}]
			if g == nil {
				t.Fatal("GPU-0 not seen")
			}
			var total float64
			for i, w := range c.want {
				total += w
				if math.Abs(g.Seen[i]-w) > 1e-6 {
					t.Errorf("bucket ending %dh: %.3f device-seconds, want %.3f", i+1, g.Seen[i], w)
				}
			}
			e := l[model.HoldingKey{Dev: model.DeviceKey{UUID: "GPU-0"}, Holder: model.HolderKey{Namespace: "ml", Pod: "p", Container: "c"}}]
			if e == nil || math.Abs(e.Seconds[model.StateBusy]-total) > 1e-6 || math.Abs(e.EUR[model.StateBusy]-total*eurPerSecond) > 1e-9 {
				t.Errorf("ml/p: %+v, want %.3f busy device-seconds and %.6f EUR", e, total, total*eurPerSecond)
			}
		})
	}
}
