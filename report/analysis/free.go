package analysis

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gputally/gputally/report/model"
)

// The free capacity a waiting pod could not use (docs/report.md, "Demand
// that waits"): a node's free devices of a resource are what it offers
// (model.Waiting.Capacity) less what the pods bound to it request
// (model.Waiting.Bound), at least 0; a node whose offer or requests are not
// known at a time has none free then.

// clusterResource is one GPU resource of one cluster.
type clusterResource struct{ cluster, resource string }

// freeSegment is a stretch from At until the next segment's At in which no
// node's free devices of the resource changed: their sum over the cluster's
// nodes and the most on one node.
type freeSegment struct {
	At          time.Time
	Total, Most float64
}

// freeTimelines returns, per cluster and resource, the free devices of its
// nodes as segments in time order, from the first time any of them is known.
func freeTimelines(w *model.Waiting) map[clusterResource][]freeSegment {
	nodes := map[clusterResource][]model.NodeResource{}
	for k := range w.Capacity {
		cr := clusterResource{k.Cluster, k.Resource}
		nodes[cr] = append(nodes[cr], k)
	}
	out := map[clusterResource][]freeSegment{}
	for cr, ks := range nodes {
		slices.SortFunc(ks, func(a, b model.NodeResource) int { return cmp.Compare(a.Node, b.Node) })
		var times []time.Time
		for _, k := range ks {
			for _, l := range w.Capacity[k] {
				times = append(times, l.From)
			}
			for _, l := range w.Bound[k] {
				times = append(times, l.From)
			}
		}
		slices.SortFunc(times, time.Time.Compare)
		times = slices.CompactFunc(times, time.Time.Equal)
		segs := make([]freeSegment, 0, len(times))
		for _, t := range times {
			s := freeSegment{At: t}
			for _, k := range ks {
				f := freeAt(w, k, t)
				s.Total += f
				s.Most = math.Max(s.Most, f)
			}
			if n := len(segs); n > 0 && segs[n-1].Total == s.Total && segs[n-1].Most == s.Most {
				continue
			}
			segs = append(segs, s)
		}
		out[cr] = segs
	}
	return out
}

// freeAt is node k's free devices at t: its capacity less its bound
// requests (none bound when their series is not there), at least 0; 0 when
// its capacity is not known.
func freeAt(w *model.Waiting, k model.NodeResource, t time.Time) float64 {
	c := model.LevelAt(w.Capacity[k], t)
	if math.IsNaN(c) {
		return 0
	}
	b := model.LevelAt(w.Bound[k], t)
	if math.IsNaN(b) {
		b = 0
	}
	return math.Max(0, c-b)
}

// fragmentedSeconds returns how long, within [from, to), pod p fit the free
// devices of its cluster's nodes together but no one node: for every
// resource it requests the sum over the nodes is at least its request, and
// for one of them no node alone has its request free (a pod of one resource:
// no node fits it; of several: conservative, as a node that fits each
// resource apart may still fit none of them together).
func fragmentedSeconds(p *model.PodWait, from, to time.Time, free map[clusterResource][]freeSegment) float64 {
	if !to.After(from) || len(p.Requests) == 0 {
		return 0
	}
	cuts := []time.Time{from}
	for _, r := range p.Requests {
		for _, s := range free[clusterResource{p.Pod.Cluster, r.Resource}] {
			if s.At.After(from) && s.At.Before(to) {
				cuts = append(cuts, s.At)
			}
		}
	}
	slices.SortFunc(cuts, time.Time.Compare)
	cuts = slices.CompactFunc(cuts, time.Time.Equal)
	total := 0.0
	for i, t := range cuts {
		next := to
		if i+1 < len(cuts) {
			next = cuts[i+1]
		}
		if fragmentedAt(p, t, free) {
			total += next.Sub(t).Seconds()
		}
	}
	return total
}

// fragmentedAt says whether pod p was fragmented at t (fragmentedSeconds).
func fragmentedAt(p *model.PodWait, t time.Time, free map[clusterResource][]freeSegment) bool {
	fitsNoNode := false
	for _, r := range p.Requests {
		segs := free[clusterResource{p.Pod.Cluster, r.Resource}]
		i := sort.Search(len(segs), func(i int) bool { return segs[i].At.After(t) })
		if i == 0 {
			return false // nothing known of the resource's nodes yet
		}
		s := segs[i-1]
		if s.Total < r.Count {
			return false
		}
		if s.Most < r.Count {
			fitsNoNode = true
		}
	}
	return fitsNoNode
}
