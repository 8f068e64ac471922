package model

import (
	"maps"
	"slices"
)

// Clusters returns the clusters of the ledger's devices, sorted; [""] for a
// ledger without a cluster label.
func (d *Dataset) Clusters() []string {
	seen := map[string]bool{}
	for k := range d.Ledger {
		seen[k.Dev.Cluster] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// OfCluster returns the part of d in cluster c: every map keyed by device,
// holding, GPU, pod or namespace holds only c's keys; the per-bucket fleet
// figures and the source's words stay d's. The advice reads it once per
// cluster, so that no change it makes spans two clusters. It shares nothing
// it filters with d.
func (d *Dataset) OfCluster(c string) *Dataset {
	out := *d
	holding := func(k HoldingKey) bool { return k.Dev.Cluster == c }
	out.Ledger = keep(d.Ledger, holding)
	out.Previous = keep(d.Previous, holding)
	out.Alloc = keep(d.Alloc, holding)
	out.Activity = keep(d.Activity, holding)
	out.FBMiB = keep(d.FBMiB, holding)
	out.EndSeconds = keep(d.EndSeconds, holding)
	out.Shares = keep(d.Shares, holding)
	out.GPUs = keep(d.GPUs, func(k GPUKey) bool { return k.Cluster == c })
	out.MIGMode = keep(d.MIGMode, func(k GPUKey) bool { return k.Cluster == c })
	out.PodTeams = keep(d.PodTeams, func(k PodKey) bool { return k.Cluster == c })
	out.NoDrain = keep(d.NoDrain, func(k NodeKey) bool { return k.Cluster == c })
	out.Waiting = d.Waiting.ofCluster(c)
	out.IdleEUR = keep(d.IdleEUR, func(k string) bool { return k == c })
	out.Gaps = slices.DeleteFunc(slices.Clone(d.Gaps), func(g Gap) bool { return g.GPU.Cluster != c })
	if d.Concurrency != nil {
		cc := *d.Concurrency
		cc.Busy = keep(d.Concurrency.Busy, func(k ConcurrencyKey) bool { return k.Cluster == c })
		out.Concurrency = &cc
	}
	return &out
}

// keep returns the entries of m whose key ok accepts; nil for a nil m.
func keep[K comparable, V any](m map[K]V, ok func(K) bool) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		if ok(k) {
			out[k] = v
		}
	}
	return out
}
