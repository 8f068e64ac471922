package advice

import (
	"time"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// waitDemand is what a team's pods waited for, per resource: the devices
// waiting in each interval of the concurrency reading and in each step
// bucket.
type waitDemand struct {
	perInterval map[quotaTarget][]float64
	perBucket   map[quotaTarget][]float64
}

// waitingDemand reads the pods of d that waited (analysis.WaitSpan) into the
// demand of their teams' resources, and adds their namespaces and resources
// to h: a team whose pods only waited still gets a quota, and a queue
// covers every resource its pods requested. A pod waits in a stretch (t −
// interval, t] — a concurrency interval or a step bucket — when any of its
// wait lies in it.
func (a *adviser) waitingDemand(d *model.Dataset, h teamHoldings) waitDemand {
	w := waitDemand{perInterval: map[quotaTarget][]float64{}, perBucket: map[quotaTarget][]float64{}}
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
			w.perBucket[qt] = addOver(w.perBucket[qt], d.Buckets, d.Start.Add(d.Step), d.Step, from, to, r.Count)
			if cc != nil {
				n := int(d.End.Sub(cc.First)/cc.Interval) + 1
				w.perInterval[qt] = addOver(w.perInterval[qt], n, cc.First, cc.Interval, from, to, r.Count)
			}
		}
	}
	return w
}

// addOver adds v to the stretches of s (n of them, made the first time)
// that [from, to) overlaps: stretch i is (first + (i−1) × every, first + i ×
// every].
func addOver(s []float64, n int, first time.Time, every time.Duration, from, to time.Time, v float64) []float64 {
	if s == nil {
		s = make([]float64, n)
	}
	if to.Sub(first) <= -every {
		return s
	}
	lo := 0 // the first stretch whose end is after from
	if k := from.Sub(first); k >= 0 {
		lo = int(k/every) + 1
	}
	hi := int((to.Sub(first) + every - 1) / every) // the last whose start is before to
	for i := max(lo, 0); i <= min(hi, n-1); i++ {
		s[i] += v
	}
	return s
}
