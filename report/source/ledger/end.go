package ledger

import (
	"context"
	"fmt"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// The range's end: what the advice needs to know of the holdings as the
// range ends — their last bucket's ledger, and the shares of time-sliced
// devices — read apart from the ledger's buckets (read.go) in small
// readings of their own.

// lastBucket fills d.EndSeconds: per holding, the device-seconds per state
// the ledger counted in the range's last step bucket, read exactly as every
// bucket is (read.go, increase.go). The advice releases only a holding still
// idle there.
func (c *collector) lastBucket(ctx context.Context, d *model.Dataset) error {
	l, err := c.ledger(ctx, d, d.End.Add(-d.Step), d.End, false, " (last bucket)")
	if err != nil {
		return err
	}
	d.EndSeconds = map[model.HoldingKey][model.NumStates]float64{}
	for k, e := range l {
		d.EndSeconds[k] = e.Seconds
	}
	return nil
}

// endRequests is the number of requests lastBucket and shares make.
func (c *collector) endRequests(d *model.Dataset) int {
	return 2*ledgerCounters*c.run.Requests(d.End.Add(-d.Step), d.End, d.Step) + c.run.Requests(d.Start.Add(d.Step), d.End, d.Step)
}

// shares fills d.Shares from gputally_gpu_allocation: the share of its device
// each time-sliced or MPS holding had at its last sample in the range, with
// the bucket of that sample. A share is the replicas the holding holds over
// the replicas its device offers, so the shares of a device's holders tell
// how many replicas it offers (analysis). A share outside (0, 1] is left
// out (checkShare).
func (c *collector) shares(ctx context.Context, d *model.Dataset) error {
	const name = "gputally_gpu_allocation (shares)"
	return c.run.Run(ctx, name, fmt.Sprintf(
		`max by (%s, resource, sharing) (last_over_time(gputally_gpu_allocation{sharing=~"time-slicing|mps"}[%s]))`, c.id.ByDevice(), c.win.Of(d.Step)),
		d.Start.Add(d.Step), d.End, d.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				if sh := s.Metric["sharing"]; sh != "time-slicing" && sh != "mps" || len(s.Values) == 0 {
					continue
				}
				p := s.Values[len(s.Values)-1]
				if err := checkShare(s.Metric, p); err != nil {
					c.leftOut.add(name, err)
					continue
				}
				b := int(p.Timestamp.Time().Sub(d.Start)/d.Step) - 1
				k := c.id.HoldingOf(s.Metric)
				if old, ok := d.Shares[k]; !ok || b >= old.Bucket {
					d.Shares[k] = model.Share{Share: float64(p.Value), Bucket: b}
				}
			}
		})
}
