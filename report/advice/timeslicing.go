package advice

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gputally/gputally/mig"
	"github.com/gputally/gputally/report/model"
)

// tsGroup is one time-slicing recommendation: its model, the replicas per GPU
// it needs and the nodes whose GPUs keep hosting the pods.
type tsGroup struct {
	model    string
	replicas int
	nodes    []string
}

// timeSlicing groups low-duty pods that alone hold a whole GPU, on a node
// where HAMi and KAI-Scheduler share none (shares.go), by namespace
// and model and packs them first-fit-decreasing by busy share (× headroom, at
// most 1 per GPU) and framebuffer. A pod whose framebuffer was not measured
// is left out: packing it on duty alone could overfill a GPU's memory. When they fit on fewer GPUs, the cheapest
// of their GPUs are freed and the others host the replicas.
func (a *adviser) timeSlicing(r *draft, p *plan) []tsGroup {
	groups, keys := a.lowDutyPods(r, p)
	var out []tsGroup
	for _, k := range keys {
		idx := groups[k]
		if len(idx) < 2 {
			continue
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			return cmp.Compare(r.Holdings[y].Totals.BusyShare, r.Holdings[x].Totals.BusyShare)
		})
		bins := a.packDuty(r, idx, k.model)
		if len(bins) >= len(idx) {
			continue
		}
		out = append(out, a.recommendTimeSlicing(r, p, k, idx, bins))
	}
	return out
}

// tsKey is a group of time-slicing candidates: a namespace and a GPU model.
type tsKey struct{ ns, model string }

// lowDutyPods returns the indices of the holdings that suit time-slicing by
// namespace and model, and those keys in order.
func (a *adviser) lowDutyPods(r *draft, p *plan) (map[tsKey][]int, []tsKey) {
	groups := map[tsKey][]int{}
	for i := range r.Holdings {
		h := &r.Holdings[i]
		if !p.open(r, i) || !p.sole(r, i) || p.fractional[h.Node] || !h.Usage.HasFB || h.Totals.HeldHours <= 0 || h.Totals.BusyShare >= a.lowDuty {
			continue
		}
		k := tsKey{h.Namespace, h.Model}
		groups[k] = append(groups[k], i)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(x, y tsKey) int { return cmp.Or(cmp.Compare(x.ns, y.ns), cmp.Compare(x.model, y.model)) })
	return groups, keys
}

// tsBin is one GPU of a time-slicing packing: the busy share and framebuffer
// (MiB) of its pods, with headroom, and how many they are.
type tsBin struct {
	duty, mem float64
	n         int
}

// packDuty packs the holdings idx, in that order, first-fit onto GPUs of
// the model gpuModel: busy share at most 1 and framebuffer at most the
// model's memory (unbounded for a model the MIG tables lack) per GPU.
func (a *adviser) packDuty(r *draft, idx []int, gpuModel string) []tsBin {
	memMiB := math.Inf(1)
	if m, ok := mig.ForModel(gpuModel); ok {
		memMiB = float64(m.MemoryTotalMiB)
	}
	var bins []tsBin
	for _, i := range idx {
		h := &r.Holdings[i]
		duty, mem := h.Totals.BusyShare*a.headroom, h.Usage.P99FBMiB*a.headroom
		placed := false
		for b := range bins {
			if bins[b].duty+duty <= 1 && bins[b].mem+mem <= memMiB {
				bins[b].duty += duty
				bins[b].mem += mem
				bins[b].n++
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, tsBin{duty: duty, mem: mem, n: 1})
		}
	}
	return bins
}

// recommendTimeSlicing records the time-slicing of the holdings idx of group
// k onto bins: the cheapest of their GPUs are freed, the others host the
// replicas.
func (a *adviser) recommendTimeSlicing(r *draft, p *plan, k tsKey, idx []int, bins []tsBin) tsGroup {
	n := 0
	for _, b := range bins {
		n = max(n, b.n)
	}
	gpus := make([]*gpuInfo, 0, len(idx))
	var names, shares []string
	for _, i := range idx {
		h := &r.Holdings[i]
		p.used[i] = true
		gpus = append(gpus, p.gpus[h.UUID])
		names = append(names, h.Name())
		shares = append(shares, fmt.Sprintf("%s %s", h.Pod, model.FormatPct(h.Totals.BusyShare)))
	}
	slices.Sort(names)
	cheapestFirst(gpus)
	nFree := len(idx) - len(bins)
	hosts := slices.Clone(gpus[nFree:])
	byPlace(hosts)
	g := tsGroup{model: k.model, replicas: n}
	for _, h := range hosts {
		if !slices.Contains(g.nodes, h.node) {
			g.nodes = append(g.nodes, h.node)
		}
	}
	rec := Recommendation{Kind: "time-slicing", Target: k.ns, Model: k.model, Replicas: n, Holdings: names, Nodes: g.nodes, GPUs: uuids(gpus)}
	rec.FreedEURPerMonth, rec.FreedGPUs = p.free(gpus[:nFree])
	rec.Evidence = fmt.Sprintf("%d pods each hold a whole GPU but are busy below %s of the time (%s); with %d replicas per GPU they fit on %d GPU(s) instead of %d; the %d cheapest of their GPUs become free, %.2f EUR over the range",
		len(idx), model.FormatPct(a.lowDuty), strings.Join(shares, ", "), n, len(bins), len(idx), nFree, rec.FreedEURPerMonth/p.month)
	r.Recommendations = append(r.Recommendations, rec)
	return g
}
