package source

import (
	"context"
	"math"

	"github.com/gputally/gputally/report/model"
)

// The range's end: what the advice needs to know of the holdings as the
// range ends, read apart from the ledger's buckets (read.go) so that it
// stays one small reading.

// lastBucket fills d.EndSeconds: per holding, the device-seconds per state
// the ledger counted in the range's last step bucket, read exactly as every
// bucket is (increase.go). The advice releases only a holding still idle
// there.
func (c *collector) lastBucket(ctx context.Context, d *model.Dataset) error {
	secs, err := c.counters(ctx, "gputally_gpu_seconds_total (last bucket)", "gputally_gpu_seconds_total", d.End.Add(-d.Step), d.End, d.Step)
	if err != nil {
		return err
	}
	d.EndSeconds = map[model.HoldingKey][model.NumStates]float64{}
	for _, s := range secs.sorted() {
		st, ok := model.StateIndex(string(s.metric["state"]))
		if !ok {
			continue
		}
		k := holdingOf(s.metric)
		for _, v := range s.increases(s.last, d.Step) {
			if !math.IsNaN(v) {
				e := d.EndSeconds[k]
				e[st] += v
				d.EndSeconds[k] = e
			}
		}
	}
	return nil
}

// lastBucketRequests is the number of requests lastBucket makes.
func (c *collector) lastBucketRequests(d *model.Dataset) int {
	return 2 * c.run.requests(d.End.Add(-d.Step), d.End, d.Step)
}
