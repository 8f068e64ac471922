package model

import (
	"strings"
)

// Kind says which kind of number a ledger entry's seconds and EUR are: what
// a reader may do with them. The zero value is Exact, so a source that sets
// nothing is the ledger's.
type Kind uint8

// The kinds of number a source writes.
const (
	// Exact: gputally's own ledger counters, read exactly (the ledger source).
	Exact Kind = iota
	// Sampled: a whole device's state sampled at the points of an evaluation
	// grid (the dcgm-exporter source): exact to the grid's resolution.
	Sampled
	// AllocationShare: a shared device's time split by the replicas its pods
	// requested over those the node offers (the dcgm-exporter source on
	// time-sliced GPUs): what was allocated, not what was used. Advice frees
	// no money from it; it is at most reclaimable.
	AllocationShare
	numKinds
)

// String returns "exact", "sampled" or "allocation share".
func (k Kind) String() string {
	switch k {
	case Sampled:
		return "sampled"
	case AllocationShare:
		return "allocation share"
	default:
		return "exact"
	}
}

// Kinds is a set of Kind: the kinds of number a row sums.
type Kinds uint8

// With returns s with k added.
func (s Kinds) With(k Kind) Kinds { return s | 1<<k }

// Has reports whether s holds k.
func (s Kinds) Has(k Kind) bool { return s&(1<<k) != 0 }

// String lists the kinds in s, "sampled + allocation share"; "" for none.
func (s Kinds) String() string {
	var names []string
	for k := range numKinds {
		if s.Has(k) {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, " + ")
}
