package advice

import (
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// waitDemand is what a team's pods waited for, per resource: the devices
// waiting at the end of each interval of the concurrency reading and of
// each step bucket, and the largest request of one pod that waited.
type waitDemand struct {
	perInterval map[quotaTarget][]float64
	perBucket   map[quotaTarget][]float64
	largest     map[quotaTarget]podRequest
}

// podRequest is one pod's request of a resource.
type podRequest struct {
	pod   string // namespace/pod
	count float64
}

// waitingDemand reads the pods of d that waited (analysis.WaitSpan) into the
// demand of their teams' resources, and adds their namespaces and resources
// to h: a team whose pods only waited still gets a quota, and a queue
// covers every resource its pods requested. A pod waits in a stretch — a
// concurrency interval or a step bucket — when it waits at the stretch's end
// (from ≤ end < to): at the instant it is bound it is busy, not waiting too.
// A wait between two ends is in no stretch; the largest request keeps its
// quota from falling below it.
func (a *adviser) waitingDemand(d *model.Dataset, h teamHoldings) waitDemand {
	w := waitDemand{perInterval: map[quotaTarget][]float64{}, perBucket: map[quotaTarget][]float64{}, largest: map[quotaTarget]podRequest{}}
	if d.Waiting == nil {
		return w
	}
	cc := d.Concurrency
	for i := range d.Waiting.Pods {
		p := &d.Waiting.Pods[i]
		from, to, counted := analysis.WaitSpan(d, p)
		if !counted {
			continue
		}
		team := analysis.PodTeam(d, a.teams, p.Pod)
		h.addNamespace(team, p.Pod.Namespace)
		for _, r := range p.Requests {
			qt := quotaTarget{team, r.Resource}
			h.bucketsOf(qt, d.Buckets)
			if r.Count > w.largest[qt].count {
				w.largest[qt] = podRequest{pod: p.Pod.Namespace + "/" + p.Pod.Pod, count: r.Count}
			}
			w.perBucket[qt] = addAtEnds(w.perBucket[qt], d.Buckets, d.Start.Add(d.Step), d.Step, from, to, r.Count)
			if cc != nil {
				n := int(d.End.Sub(cc.First)/cc.Interval) + 1
				w.perInterval[qt] = addAtEnds(w.perInterval[qt], n, cc.First, cc.Interval, from, to, r.Count)
			}
		}
	}
	return w
}

// addAtEnds adds v to the stretches of s (n of them, made the first time)
// whose end lies in [from, to): stretch i ends at first + i × every.
func addAtEnds(s []float64, n int, first time.Time, every time.Duration, from, to time.Time, v float64) []float64 {
	if s == nil {
		s = make([]float64, n)
	}
	lo := 0 // the first stretch ending at or after from
	if k := from.Sub(first); k > 0 {
		lo = int((k + every - 1) / every)
	}
	for i := lo; i < n && first.Add(time.Duration(i)*every).Before(to); i++ {
		s[i] += v
	}
	return s
}
