package advice

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/analysis"
	"github.com/gputally/gputally/report/model"
)

// Kueue objects the report writes: kueue.x-k8s.io/v1beta2 (v1beta1 is
// deprecated since Kueue 0.16 and no longer served from 0.20).
const (
	kueueAPIVersion = "kueue.x-k8s.io/v1beta2"
	kueueFlavor     = "gputally-default"
	kueueCohort     = "gputally"
	kueueLocalQueue = "gputally"
)

// quota is a team's nominal quota of one resource.
type quota struct {
	team, resource string
	peak           int      // the most devices busy at the same time
	devices        int      // the quota: peak × headroom rounded up, at least 1
	namespaces     []string // of the team, sorted
	// whole names the namespaces whose count the peak takes whole although
	// other teams or resources share them (the reading is per namespace and
	// MIG profile): an upper bound there. bounded: the team's holdings of
	// the resource busy in one step bucket were fewer, and are the peak.
	whole   []string
	bounded bool
}

// quotaTarget is a team's resource.
type quotaTarget struct{ team, resource string }

// quotas returns per team and resource the most devices that were busy at
// the same time, and the quota that leaves headroom above it; and how the
// peak was read (the resolution), for the comments. The peak is read from
// d.Concurrency at the scrape interval: per namespace and MIG profile, the
// devices busy in each interval, summed over the team's namespaces interval
// by interval — for a namespace other teams or resources share, at most the
// team's holdings of the resource busy in one step bucket. A source without
// that reading falls back to the devices busy in one step bucket.
func (a *adviser) quotas(d *model.Dataset) ([]quota, string) {
	h := a.quotaHoldings(d)
	var peaks map[quotaTarget]int
	var whole map[quotaTarget][]string
	var bounded map[quotaTarget]bool // the per-bucket count was the lower bound
	if cc := d.Concurrency; cc != nil {
		peaks, whole, bounded = h.concurrentPeaks(cc)
	} else {
		peaks = h.perBucketPeaks()
	}
	var out []quota
	for qt, p := range peaks {
		out = append(out, quota{team: qt.team, resource: qt.resource, peak: p, devices: quotaOf(p, a.headroom),
			namespaces: slices.Sorted(maps.Keys(h.namespaces[qt.team])), whole: whole[qt], bounded: bounded[qt]})
	}
	slices.SortFunc(out, func(x, y quota) int { return cmp.Or(cmp.Compare(x.team, y.team), cmp.Compare(x.resource, y.resource)) })
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
		if h.namespaces[qt.team] == nil {
			h.namespaces[qt.team] = map[string]bool{}
		}
		h.namespaces[qt.team][k.Holder.Namespace] = true
		ck := model.ConcurrencyKey{Cluster: k.Dev.Cluster, Namespace: k.Holder.Namespace, Profile: k.Dev.Profile}
		if h.targets[ck] == nil {
			h.targets[ck] = map[quotaTarget]bool{}
		}
		h.targets[ck][qt] = true
		if h.perBucket[qt] == nil {
			h.perBucket[qt] = make([]int, d.Buckets)
		}
		for b := range d.Buckets {
			if e.BusyBuckets.Has(b) {
				h.perBucket[qt][b]++
			}
		}
	}
	return h
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

// perBucketPeaks is the fallback peak: the most devices busy in one step
// bucket.
func (h teamHoldings) perBucketPeaks() map[quotaTarget]int {
	peaks := map[quotaTarget]int{}
	for qt, counts := range h.perBucket {
		peaks[qt] = slices.Max(append(counts, 0))
	}
	return peaks
}

// concurrentPeaks is the peak from the scrape-interval reading: the devices
// busy at once, summed over the team's namespaces interval by interval. It
// also says which namespaces were counted whole for several targets, and
// which peaks the per-bucket count bounded.
func (h teamHoldings) concurrentPeaks(cc *model.Concurrency) (peaks map[quotaTarget]int, whole map[quotaTarget][]string, bounded map[quotaTarget]bool) {
	peaks, whole, bounded = map[quotaTarget]int{}, map[quotaTarget][]string{}, map[quotaTarget]bool{}
	sums := map[quotaTarget][]int{} // devices busy per interval
	for _, ck := range slices.SortedFunc(maps.Keys(cc.Busy), func(x, y model.ConcurrencyKey) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Profile, y.Profile))
	}) {
		ts := h.targets[ck]
		for qt := range ts {
			if len(ts) > 1 && !slices.Contains(whole[qt], ck.Namespace) {
				whole[qt] = append(whole[qt], ck.Namespace)
			}
			busy := cc.Busy[ck]
			if len(sums[qt]) < len(busy) {
				sums[qt] = append(sums[qt], make([]int, len(busy)-len(sums[qt]))...)
			}
			for i, n := range busy {
				sums[qt][i] += int(n)
			}
		}
	}
	for qt, counts := range h.perBucket {
		peaks[qt] = 0
		for _, n := range sums[qt] {
			peaks[qt] = max(peaks[qt], n)
		}
		// A namespace counted whole for several teams or resources is
		// bounded, too, by the team's holdings of the resource busy in
		// one bucket: both are at least the devices busy at once.
		if b := slices.Max(append(counts, 0)); b < peaks[qt] {
			peaks[qt], bounded[qt] = b, true
		}
	}
	return peaks, whole, bounded
}

// quotaOf is the quota for a peak of busy devices: peak × headroom rounded
// up, at least 1.
func quotaOf(peak int, headroom float64) int {
	// 1e-9 absorbs rounding: 50 × 1.1 is 55.00000000000001, whose ceiling is 56.
	return max(1, int(math.Ceil(float64(peak)*headroom-1e-9)))
}

// The Kueue objects, as far as kueueYAML writes them.
type (
	kqMeta struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace,omitempty"`
	}
	kqObject struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   kqMeta `yaml:"metadata"`
		Spec       any    `yaml:"spec"`
	}
	kqResource struct {
		Name         string `yaml:"name"`
		NominalQuota int    `yaml:"nominalQuota"`
	}
	kqFlavor struct {
		Name      string       `yaml:"name"`
		Resources []kqResource `yaml:"resources"`
	}
	kqGroup struct {
		CoveredResources []string   `yaml:"coveredResources"`
		Flavors          []kqFlavor `yaml:"flavors"`
	}
	kqRequirement struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	}
	kqSelector struct {
		MatchExpressions []kqRequirement `yaml:"matchExpressions"`
	}
	kqClusterQueueSpec struct {
		CohortName        string     `yaml:"cohortName"`
		NamespaceSelector kqSelector `yaml:"namespaceSelector"`
		ResourceGroups    []kqGroup  `yaml:"resourceGroups"`
	}
	kqLocalQueueSpec struct {
		ClusterQueue string `yaml:"clusterQueue"`
	}
)

// kueueYAML writes a ResourceFlavor, one ClusterQueue per team in one cohort
// (so a team can borrow what others leave unused), admitting only the team's
// namespaces, and a LocalQueue in each of them: named kueueLocalQueue, or,
// in a namespace whose pods belong to several teams, kueueLocalQueue-<queue>,
// one per team. Two teams whose names make the same DNS name get the second
// -2, and so on. Comments say where each quota comes from, and why when the
// floor of 1 applies.
func kueueYAML(qs []quota, headroom float64, how string) string {
	if len(qs) == 0 {
		return ""
	}
	docs := []string{"# one flavor for every GPU resource below; add nodeLabels to tie it to nodes\n" +
		mustYAML(kqObject{kueueAPIVersion, "ResourceFlavor", kqMeta{Name: kueueFlavor}, struct{}{}})}
	teams := teamsPerNamespace(qs)
	taken := map[string]bool{} // ClusterQueue names
	for i := 0; i < len(qs); {
		team := qs[i].team
		name := dnsName(team)
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s-%d", dnsName(team), n)
		}
		taken[name] = true
		j := i
		for j < len(qs) && qs[j].team == team {
			j++
		}
		docs = append(docs, clusterQueue(qs[i:j], name, headroom, how))
		for _, ns := range qs[i].namespaces {
			lq := kueueLocalQueue
			if teams[ns] > 1 {
				lq += "-" + name
			}
			docs = append(docs, mustYAML(kqObject{kueueAPIVersion, "LocalQueue", kqMeta{Name: lq, Namespace: ns}, kqLocalQueueSpec{ClusterQueue: name}}))
		}
		i = j
	}
	return strings.Join(docs, "---\n")
}

// teamsPerNamespace counts, per namespace, the teams whose pods run in it;
// qs are sorted by team.
func teamsPerNamespace(qs []quota) map[string]int {
	teams := map[string]int{}
	for i, q := range qs {
		if i == 0 || q.team != qs[i-1].team {
			for _, ns := range q.namespaces {
				teams[ns]++
			}
		}
	}
	return teams
}

// clusterQueue writes the ClusterQueue name of one team, whose quotas are
// qs, with the comment that says where each quota comes from; how says how
// the peaks were read.
func clusterQueue(qs []quota, name string, headroom float64, how string) string {
	g := kqGroup{Flavors: []kqFlavor{{Name: kueueFlavor}}}
	var why []string
	for _, q := range qs {
		g.CoveredResources = append(g.CoveredResources, q.resource)
		g.Flavors[0].Resources = append(g.Flavors[0].Resources, kqResource{Name: q.resource, NominalQuota: q.devices})
		if q.peak == 0 {
			why = append(why, fmt.Sprintf("#   %s: no device was busy in any interval; 1 is a floor so its jobs can still be admitted", q.resource))
		} else {
			why = append(why, fmt.Sprintf("#   %s: at most %d busy at once × headroom %.2f → %d", q.resource, q.peak, headroom, q.devices))
		}
		switch {
		case q.bounded:
			why = append(why, fmt.Sprintf("#     (namespace %s is shared with other teams or resources: its holdings of %s busy in one step bucket bound it)", strings.Join(q.whole, ", "), q.resource))
		case len(q.whole) > 0:
			why = append(why, fmt.Sprintf("#     (namespace %s counted whole: other teams or resources share it)", strings.Join(q.whole, ", ")))
		}
	}
	spec := kqClusterQueueSpec{CohortName: kueueCohort, ResourceGroups: []kqGroup{g},
		// Only the team's own namespaces may use its quota.
		NamespaceSelector: kqSelector{MatchExpressions: []kqRequirement{{Key: "kubernetes.io/metadata.name", Operator: "In", Values: qs[0].namespaces}}}}
	head := fmt.Sprintf("# team %s: the most devices it kept busy at the same time (%s), with headroom; it borrows unused quota in cohort %s", qs[0].team, how, kueueCohort)
	return commentLines(append([]string{head}, why...)) +
		mustYAML(kqObject{kueueAPIVersion, "ClusterQueue", kqMeta{Name: name}, spec})
}
