package advice

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// quota is a team's quota of one resource, from its measured demand: the
// devices it kept busy and those its pods waited for, at the same time.
type quota struct {
	team, resource string
	// busy and waiting are the devices busy and waited for in the interval
	// of the most demand (busy + waiting).
	busy    int
	waiting float64
	// largest is the largest request of one of its pods that waited, and
	// largestPod that pod (namespace/pod); 0 and "" when none waited.
	largest    float64
	largestPod string
	devices    int      // the quota: demand × headroom rounded up, at least largest and 1
	namespaces []string // of the team, sorted
	// whole names the namespaces whose count the peak takes whole although
	// other teams or resources share them (the reading is per namespace and
	// MIG profile): an upper bound there. bounded: the team's holdings of
	// the resource busy in one step bucket were fewer, and bound the busy
	// part.
	whole   []string
	bounded bool
}

// demand is the peak of demand.
func (q *quota) demand() float64 { return float64(q.busy) + q.waiting }

// quotaTarget is a team's resource.
type quotaTarget struct{ team, resource string }

// quotas returns per team and resource the most devices it kept busy and
// waited for at the same time, and the quota that leaves headroom above it
// and is at least the largest request of one of its pods that waited; and
// how the peak was read (the resolution), for the comments. The busy part is read from d.Concurrency
// at the scrape interval: per namespace and MIG profile, the devices busy
// in each interval, summed over the team's namespaces interval by interval
// — for a namespace other teams or resources share, at most the team's
// holdings of the resource busy in one step bucket. The waiting part is the
// requests of the team's pods waiting in the interval (demand.go). A source
// without the concurrency reading falls back to step buckets.
func (a *adviser) quotas(d *model.Dataset) ([]quota, string) {
	h := a.quotaHoldings(d)
	w := a.waitingDemand(d, h)
	var out []quota
	for _, qt := range h.targetList() {
		q := quota{team: qt.team, resource: qt.resource, namespaces: slices.Sorted(maps.Keys(h.namespaces[qt.team]))}
		if cc := d.Concurrency; cc != nil {
			q.whole, q.bounded = h.concurrentPeak(cc, qt, w.perInterval[qt], &q)
		} else {
			h.perBucketPeak(qt, w.perBucket[qt], &q)
		}
		q.largest, q.largestPod = w.largest[qt].count, w.largest[qt].pod
		q.devices = max(quotaOf(q.demand(), a.headroom), int(math.Ceil(q.largest)))
		out = append(out, q)
	}
	return out, quotaReading(d)
}

// teamHoldings is what the ledger says of the teams' holdings: the
// namespaces of each team, what each namespace's concurrency count feeds,
// and the fallback count of devices busy per step bucket.
type teamHoldings struct {
	namespaces map[string]map[string]bool                    // team → its namespaces
	targets    map[model.ConcurrencyKey]map[quotaTarget]bool // what a namespace's count feeds
	perBucket  map[quotaTarget][]int                         // the fallback: devices busy per bucket
}

// quotaHoldings reads the ledger's held, used devices into the holdings of
// each team and resource.
func (a *adviser) quotaHoldings(d *model.Dataset) teamHoldings {
	h := teamHoldings{
		namespaces: map[string]map[string]bool{},
		targets:    map[model.ConcurrencyKey]map[quotaTarget]bool{},
		perBucket:  map[quotaTarget][]int{},
	}
	for k, e := range d.Ledger {
		if k.Holder == (model.HolderKey{}) || e.Seconds[model.StateBusy]+e.Seconds[model.StateIdle] <= 0 {
			continue
		}
		qt := quotaTarget{analysis.Team(d, a.teams, k), heldResource(d.Alloc[k].Resource, e.Profile)}
		h.addNamespace(qt.team, k.Holder.Namespace)
		ck := model.ConcurrencyKey{Cluster: k.Dev.Cluster, Namespace: k.Holder.Namespace, Profile: k.Dev.Profile}
		if h.targets[ck] == nil {
			h.targets[ck] = map[quotaTarget]bool{}
		}
		h.targets[ck][qt] = true
		counts := h.bucketsOf(qt, d.Buckets)
		for b := range d.Buckets {
			if e.BusyBuckets.Has(b) {
				counts[b]++
			}
		}
	}
	return h
}

// addNamespace records that team has pods in namespace ns.
func (h teamHoldings) addNamespace(team, ns string) {
	if h.namespaces[team] == nil {
		h.namespaces[team] = map[string]bool{}
	}
	h.namespaces[team][ns] = true
}

// bucketsOf returns the busy counts per bucket of target qt, made (all 0)
// the first time: every target has them, busy or only waiting.
func (h teamHoldings) bucketsOf(qt quotaTarget, buckets int) []int {
	if h.perBucket[qt] == nil {
		h.perBucket[qt] = make([]int, buckets)
	}
	return h.perBucket[qt]
}

// targetList returns the targets, sorted by team and resource.
func (h teamHoldings) targetList() []quotaTarget {
	return slices.SortedFunc(maps.Keys(h.perBucket), func(x, y quotaTarget) int {
		return cmp.Or(cmp.Compare(x.team, y.team), cmp.Compare(x.resource, y.resource))
	})
}

// heldResource is the extended resource a holding holds its device through,
// and counts against in a quota: the one allocated, else the whole GPU or
// the MIG profile's resource.
func heldResource(allocated, profile string) string {
	if allocated != "" {
		return allocated
	}
	if profile != "" {
		return "nvidia.com/mig-" + profile
	}
	return "nvidia.com/gpu"
}

// quotaReading says what interval the peaks were read in.
func quotaReading(d *model.Dataset) string {
	cc := d.Concurrency
	switch {
	case cc == nil:
		return fmt.Sprintf("in one %s bucket: the source has no finer reading", pmodel.Duration(d.Step))
	case !cc.Scraped:
		return fmt.Sprintf("in one %s step: the scrape interval could not be read (no gputally_up)", pmodel.Duration(cc.Interval))
	default:
		return fmt.Sprintf("in one %s scrape interval", pmodel.Duration(cc.Interval))
	}
}

// perBucketPeak is the fallback peak: the most devices busy in one step
// bucket plus those waited for in it.
func (h teamHoldings) perBucketPeak(qt quotaTarget, waiting []float64, q *quota) {
	for b, n := range h.perBucket[qt] {
		if w := at(waiting, b); float64(n)+w > q.demand() {
			q.busy, q.waiting = n, w
		}
	}
}

// concurrentPeak is the peak from the scrape-interval reading: the devices
// busy at once, summed over the team's namespaces interval by interval,
// plus the devices waited for in the interval. It also says which
// namespaces were counted whole for several targets, and whether the
// per-bucket count bounded the busy part.
func (h teamHoldings) concurrentPeak(cc *model.Concurrency, qt quotaTarget, waiting []float64, q *quota) (whole []string, bounded bool) {
	var busy []int // devices busy per interval
	for _, ck := range slices.SortedFunc(maps.Keys(cc.Busy), func(x, y model.ConcurrencyKey) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Profile, y.Profile))
	}) {
		ts := h.targets[ck]
		if !ts[qt] {
			continue
		}
		if len(ts) > 1 && !slices.Contains(whole, ck.Namespace) {
			whole = append(whole, ck.Namespace)
		}
		if n := len(cc.Busy[ck]); len(busy) < n {
			busy = append(busy, make([]int, n-len(busy))...)
		}
		for i, n := range cc.Busy[ck] {
			busy[i] += int(n)
		}
	}
	// A namespace counted whole for several teams or resources is bounded,
	// too, by the team's holdings of the resource busy in one bucket: both
	// are at least the devices busy at once.
	limit := slices.Max(append(slices.Clone(h.perBucket[qt]), 0))
	for i := range max(len(busy), len(waiting)) {
		n := at(busy, i)
		if n > limit {
			n, bounded = limit, true
		}
		if w := at(waiting, i); float64(n)+w > q.demand() {
			q.busy, q.waiting = n, w
		}
	}
	return whole, bounded
}

// at is s[i], or 0 beyond its end.
func at[T int | float64](s []T, i int) T {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// quotaOf is the quota for a peak demand of devices: demand × headroom
// rounded up, at least 1.
func quotaOf(demand, headroom float64) int {
	// 1e-9 absorbs rounding: 50 × 1.1 is 55.00000000000001, whose ceiling is 56.
	return max(1, int(math.Ceil(demand*headroom-1e-9)))
}

// quotaWhy are the comment lines that say where quota q comes from, and
// why when a floor applies: the largest waiting pod's request, or 1.
func quotaWhy(q quota, headroom float64) []string {
	var why []string
	demand := fmt.Sprintf("at most %d busy at once", q.busy)
	if q.waiting > 0 {
		demand = fmt.Sprintf("at most %d busy + %s waited for at once", q.busy, formatCount(q.waiting))
	}
	switch {
	case int(math.Ceil(q.largest)) == q.devices && quotaOf(q.demand(), headroom) < q.devices:
		why = append(why, fmt.Sprintf("#   %s: %s × headroom %.2f → %d, raised to %d: pod %s waited for %s", q.resource, demand, headroom,
			quotaOf(q.demand(), headroom), q.devices, q.largestPod, formatCount(q.largest)))
	case q.demand() == 0:
		why = append(why, fmt.Sprintf("#   %s: no device was busy or waited for in any interval; 1 is a floor so its jobs can still be admitted", q.resource))
	default:
		why = append(why, fmt.Sprintf("#   %s: %s × headroom %.2f → %d", q.resource, demand, headroom, q.devices))
	}
	switch {
	case q.bounded:
		why = append(why, fmt.Sprintf("#     (namespace %s is shared with other teams or resources: its holdings of %s busy in one step bucket bound it)", strings.Join(q.whole, ", "), q.resource))
	case len(q.whole) > 0:
		why = append(why, fmt.Sprintf("#     (namespace %s counted whole: other teams or resources share it)", strings.Join(q.whole, ", ")))
	}
	return why
}

// formatCount formats a count of devices: whole ones without decimals.
func formatCount(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
