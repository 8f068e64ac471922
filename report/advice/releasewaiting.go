package advice

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// idleHolding is a held holding that idled in some step bucket.
type idleHolding struct {
	key model.HoldingKey
	e   *model.LedgerEntry
}

// idleAll says whether the holding idled all of bucket b: idle seconds and
// no busy ones there.
func (h idleHolding) idleAll(b int) bool { return h.e.IdleBuckets.Has(b) && !h.e.BusyBuckets.Has(b) }

// served is what an idle holding's release would have served.
type served struct {
	buckets  model.BucketSet
	pods     map[string]bool
	gpuHours float64
}

// releaseForWaiting names the holdings whose release would have served
// waiting pods (docs/report.md, "Demand that waits"). In each step bucket a
// pod of one GPU resource waited in, at the start of its wait there: if no
// node had its request free, the node whose free devices fell short by the
// least (the first by name, on a tie) that its holdings of the resource
// idle all the bucket cover gives as many of them as the shortfall (most
// idle EUR first; a holding serves one pod a bucket). A pod that fit a node
// as it was waited for another reason (a quota, a selector): no release
// serves it. One advice per pod whose holdings would have served, with
// their idle EUR in those buckets — each holding's idle EUR spread evenly
// over the buckets it idled in.
func (a *adviser) releaseForWaiting(d *model.Dataset, month float64) []WaitAdvice {
	if d.Waiting == nil {
		return nil
	}
	idle := idleByNode(d)
	uses := map[model.HoldingKey]*served{}
	for b := range d.Buckets {
		claimed := map[model.HoldingKey]bool{}
		bs, be := d.Start.Add(time.Duration(b)*d.Step), d.Start.Add(time.Duration(b+1)*d.Step)
		for i := range d.Waiting.Pods {
			p := &d.Waiting.Pods[i]
			from, to, counted := analysis.WaitSpan(d, p)
			if !counted || !from.Before(be) || !to.After(bs) || len(p.Requests) != 1 {
				continue
			}
			r, at := p.Requests[0], latest(from, bs)
			hs := servingHoldings(d, idle, p.Pod.Cluster, r, at, b, claimed)
			for _, h := range hs {
				claimed[h.key] = true
				u := uses[h.key]
				if u == nil {
					u = &served{pods: map[string]bool{}}
					uses[h.key] = u
				}
				u.buckets.Add(b)
				u.pods[p.Pod.Namespace+"/"+p.Pod.Pod] = true
				u.gpuHours += r.Count * earliest(to, be).Sub(at).Hours() / float64(len(hs))
			}
		}
	}
	return releaseAdvice(d, uses, month)
}

// idleByNode returns the held holdings of d that idled in some bucket, by
// node and the resource they hold, most idle EUR first.
func idleByNode(d *model.Dataset) map[model.NodeResource][]idleHolding {
	out := map[model.NodeResource][]idleHolding{}
	for k, e := range d.Ledger {
		if k.Holder == (model.HolderKey{}) || e.IdleBuckets.Len() == 0 {
			continue
		}
		nr := model.NodeResource{Cluster: k.Dev.Cluster, Node: e.Host, Resource: heldResource(d.Alloc[k].Resource, e.Profile)}
		out[nr] = append(out[nr], idleHolding{k, e})
	}
	for _, hs := range out {
		slices.SortFunc(hs, func(x, y idleHolding) int {
			return cmp.Or(cmp.Compare(y.e.EUR[model.StateIdle], x.e.EUR[model.StateIdle]), model.CompareHoldingKeys(x.key, y.key))
		})
	}
	return out
}

// servingHoldings returns the holdings whose release would have let a
// request r of cluster c be bound at t, in bucket b (releaseForWaiting);
// none when a node had it free, or no node's idle holdings cover its
// shortfall.
func servingHoldings(d *model.Dataset, idle map[model.NodeResource][]idleHolding, c string, r model.Request, t time.Time, b int, claimed map[model.HoldingKey]bool) []idleHolding {
	var best []idleHolding
	bestShort := math.Inf(1)
	for _, nr := range slices.SortedFunc(maps.Keys(d.Waiting.Capacity), compareNodeResources) {
		if nr.Cluster != c || nr.Resource != r.Resource {
			continue
		}
		capacity, bound := model.LevelAt(d.Waiting.Capacity[nr], t), model.LevelAt(d.Waiting.Bound[nr], t)
		if math.IsNaN(capacity) {
			continue
		}
		if math.IsNaN(bound) {
			bound = 0
		}
		short := r.Count - math.Max(0, capacity-bound)
		if short <= 0 {
			return nil
		}
		var avail []idleHolding
		for _, h := range idle[nr] {
			if !claimed[h.key] && h.idleAll(b) {
				avail = append(avail, h)
			}
		}
		if need := int(math.Ceil(short)); need <= len(avail) && short < bestShort {
			best, bestShort = avail[:need], short
		}
	}
	return best
}

// compareNodeResources orders by cluster, node and resource.
func compareNodeResources(x, y model.NodeResource) int {
	return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Node, y.Node), cmp.Compare(x.Resource, y.Resource))
}

// releaseAdvice is one advice per pod whose holdings would have served,
// most EUR first.
func releaseAdvice(d *model.Dataset, uses map[model.HoldingKey]*served, month float64) []WaitAdvice {
	byPod := map[model.PodKey]*WaitAdvice{}
	steps := map[model.PodKey]int{} // the most buckets one of its holdings served in
	for _, k := range slices.SortedFunc(maps.Keys(uses), model.CompareHoldingKeys) {
		u, e := uses[k], d.Ledger[k]
		w := byPod[k.Pod()]
		if w == nil {
			w = &WaitAdvice{Kind: WaitRelease, Target: k.Holder.Namespace + "/" + k.Holder.Pod}
			byPod[k.Pod()] = w
		}
		eur := e.EUR[model.StateIdle] * float64(u.buckets.Len()) / float64(e.IdleBuckets.Len())
		w.EUR += eur
		w.EURPerMonth += eur * month
		w.GPUHours += u.gpuHours
		w.Holdings = append(w.Holdings, fmt.Sprintf("%s on %s", k.Holder.Name(), model.NodeName(k.Dev.Cluster, e.Host)))
		for p := range u.pods {
			if !slices.Contains(w.Pods, p) {
				w.Pods = append(w.Pods, p)
			}
		}
		steps[k.Pod()] = max(steps[k.Pod()], u.buckets.Len())
	}
	out := make([]WaitAdvice, 0, len(byPod))
	for _, pk := range slices.SortedFunc(maps.Keys(byPod), func(x, y model.PodKey) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Pod, y.Pod))
	}) {
		w := byPod[pk]
		slices.Sort(w.Pods)
		w.Evidence = fmt.Sprintf("%s sat idle through %d steps of %s in which %s waited for a node that its release would have fit them on: %s GPU-hours of waiting served",
			strings.Join(w.Holdings, ", "), steps[pk], pmodel.Duration(d.Step), strings.Join(w.Pods, ", "), model.FormatHours(w.GPUHours))
		out = append(out, *w)
	}
	slices.SortStableFunc(out, func(x, y WaitAdvice) int { return cmp.Compare(y.EUR, x.EUR) })
	return out
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
