package ledger

import (
	"context"
	"fmt"
	"math"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
	"github.com/gputally/gputally/report/source"
)

// How many devices a namespace keeps busy at the same time, for Kueue
// quotas. A step bucket cannot tell: 20 jobs of three minutes one after the
// other on one GPU are 20 pods busy in one hour and one device busy at a
// time. So the ledger's busy counters are read at the finest resolution the
// data has, the scrape interval: a device is busy in the interval (t − s, t]
// when its busy counter grew between the scrape before t − s and the one
// before t, and the devices busy in an interval are counted per namespace
// and MIG profile.
//
// The interval s is the scrape interval of gputally's exporters: a step over
// the intervals between max(count_over_time(gputally_up[step])) scrapes,
// rounded down to whole seconds (an interval finer than the scrapes counts
// each increment once; a coarser one would count devices busy one after the
// other as busy together). When gputally_up is not there the reading falls
// back to the report's resolution.

// concurrency fills d.Concurrency.
func (c *collector) concurrency(ctx context.Context, d *model.Dataset) error {
	interval, scraped, err := c.scrapeInterval(ctx, d)
	if err != nil {
		return err
	}
	first := d.Start.Add(interval)
	// plan counted the requests at the resolution.
	c.run.Plan(c.run.Requests(first, d.End, interval) - c.run.Requests(d.Start.Add(d.Resolution), d.End, d.Resolution))
	cc := &model.Concurrency{Interval: interval, Scraped: scraped, First: first, Busy: map[model.ConcurrencyKey][]int32{}}
	intervals := int(d.End.Sub(first)/interval) + 1
	d.Concurrency = cc
	// The answer has a series per namespace and profile, but the engine reads
	// the busy counter of every held device at each interval (three times):
	// the requests are sized by those, so that the engine's working set per
	// request stays within the sample bound too.
	held := 0
	for k := range d.Ledger {
		if k.Holder.Namespace != "" {
			held++
		}
	}
	c.run.ReadPerPoint(held)
	defer func() { c.run.ReadPerPoint(0) }()
	return c.run.Run(ctx, "devices busy at once", busyAtOnceQuery(c.id, interval), first, d.End, interval, func(m pmodel.Matrix) {
		for _, s := range m {
			k := model.ConcurrencyKey{Cluster: c.id.ClusterOf(s.Metric), Namespace: string(s.Metric["namespace"]), Profile: string(s.Metric["GPU_I_PROFILE"])}
			if k.Namespace == "" {
				continue
			}
			busy := cc.Busy[k]
			if busy == nil {
				busy = make([]int32, intervals)
				cc.Busy[k] = busy
			}
			for _, p := range s.Values {
				i := int((p.Timestamp.Time().Sub(first) + interval/2) / interval)
				if n := int32(math.Round(float64(p.Value))); n > 0 && i >= 0 && i < intervals {
					busy[i] = max(busy[i], n)
				}
			}
		}
	})
}

// concurrencyRequests is the number of requests concurrency plans before
// it knows the interval: the scrape interval query and the count at the
// resolution.
func (c *collector) concurrencyRequests(d *model.Dataset) int {
	return c.run.Requests(d.Start.Add(d.Step), d.End, d.Step) + c.run.Requests(d.Start.Add(d.Resolution), d.End, d.Resolution)
}

// busyAtOnceQuery counts, per namespace and MIG profile, the devices whose
// busy counter grew in (t − s, t]: with X its value at t and P at t − s, X >
// 0 unless X = P — it went on (X > P), it was reset by an exporter restart
// and counted again from 0 (X < P), or it is new (no P). A series that ended
// keeps its final value for a retention window (X = P) and so is not busy;
// a counter at 0 never was. Duplicate series of one device (HA pairs,
// duplicate scrape jobs, both spellings of the node label) count once. The
// counter is selected three times, not six as with one branch per case: the
// query runs at every scrape interval of the range.
func busyAtOnceQuery(id source.Identity, s time.Duration) string {
	const busy = `gputally_gpu_seconds_total{state="busy",namespace!=""}`
	return fmt.Sprintf("count by (%s) (max by (%s) (%[3]s > 0 unless %[3]s == %[3]s offset %[4]s))",
		id.By("namespace, GPU_I_PROFILE"), id.ByDevice(), busy, pmodel.Duration(s))
}

// scrapeInterval returns the scrape interval of gputally's exporters over
// the range (at most d.Resolution), true; or d.Resolution and false when it
// cannot be read.
func (c *collector) scrapeInterval(ctx context.Context, d *model.Dataset) (time.Duration, bool, error) {
	most := 0.0
	err := c.run.Run(ctx, "gputally_up (scrape interval)", fmt.Sprintf("max(count_over_time(gputally_up[%s]))", pmodel.Duration(d.Step)),
		d.Start.Add(d.Step), d.End, d.Step, func(m pmodel.Matrix) {
			for _, s := range m {
				for _, p := range s.Values {
					most = max(most, float64(p.Value))
				}
			}
		})
	if err != nil {
		return 0, false, err
	}
	if most < 3 {
		return d.Resolution, false, nil
	}
	// n samples in a step are n − 1 intervals when the window holds both
	// ends (Prometheus 2) and a little more than n − 1 when it does not
	// (Prometheus 3, VictoriaMetrics): rounded down to whole seconds, both
	// give the interval. Never coarser than the resolution, nor finer than a
	// second.
	return max(time.Second, min(time.Duration(float64(d.Step)/(most-1)).Truncate(time.Second), d.Resolution)), true, nil
}
