package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// TestNewSeriesSlack: a series with no sample before a bucket counts from 0
// there when its seconds counter's first sample is at most the bucket and
// newSeriesSlack (5 min) — ledger ticks that straddle its creation — and not
// when it is more: then it is an older series after a gap, and the gap stays
// a gap. Over (0, 3 h] in 1 h buckets, both series first scraped at 1h59m30s,
// then every 30 s to 3 h, growing 1 s/s (EUR at 2.70 EUR/h):
//
//	ml/a first reads 63 min = 3,780 s (3,810 s at 2 h ≤ 3,600 + 300): new,
//	     counted from 0 — 3,810 s in (1 h, 2 h], 3,600 s in (2 h, 3 h]:
//	     7,410 s, 7,410 × 0.00075 = 5.5575 EUR;
//	ml/b first reads 66 min = 3,960 s (> 3,900): not new — its first sample
//	     counts nothing, the 30 s to the next one and the 3,600 s after do:
//	     3,630 s, 2.7225 EUR.
//
// Without the slack a is not new either (3,630 s); with twice the slack,
// 10 min, b is new too (7,590 s).
func TestNewSeriesSlack(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Hour)
	first := start.Add(time.Hour + 59*time.Minute + 30*time.Second)
	b := engine.NewStoreBuilder()
	for _, s := range []struct {
		gpu, pod string
		at       float64 // the counter at first, s
	}{{"GPU-0", "a", 3780}, {"GPU-1", "b", 3960}} {
		base := []string{"UUID", s.gpu, "gpu", s.gpu[len(s.gpu)-1:], "Hostname", "node-0", "modelName", "NVIDIA H100 80GB HBM3",
			"namespace", "ml", "pod", s.pod, "container", "main", "state", "busy"}
		for ts := first; !ts.After(end); ts = ts.Add(30 * time.Second) {
			appendLedger(t, b, base, ts, s.at+ts.Sub(first).Seconds())
		}
	}
	q := engine.NewEmbeddedQuerier(b.Store(), time.Minute, discard())
	wants := map[string][2]float64{"a": {7410, 5.5575}, "b": {3630, 2.7225}}
	for _, stretch := range []int{0, 1} {
		_, l := ledgerOver(t, q, start, end, time.Hour, stretch)
		got := map[string][2]float64{}
		for k, e := range l {
			got[k.Holder.Pod] = [2]float64{got[k.Holder.Pod][0] + e.Seconds[model.StateBusy], got[k.Holder.Pod][1] + e.EUR[model.StateBusy]}
		}
		for pod, w := range wants {
			if g := got[pod]; math.Abs(g[0]-w[0]) > 1e-6 || math.Abs(g[1]-w[1]) > 1e-9 {
				t.Errorf("stretch %d, ml/%s: %.3f busy device-seconds, %.6f EUR; want %.0f, %.4f", stretch, pod, g[0], g[1], w[0], w[1])
			}
		}
	}
}
