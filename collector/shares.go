package collector

import (
	"maps"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/cost"
)

// sharePricer gives attribution snapshots whose fractional holders (HAMi,
// KAI-Scheduler, DRA by consumed capacity) carry the share the price book's
// policy gives them (cost.FractionalShares over each device's fractional
// holders), so that gputally_gpu_allocation shows what the ledger charges.
// It prices a snapshot once per snapshot and policy. Only the sampler
// goroutine uses it.
type sharePricer struct {
	src    *attribution.Snapshot // last snapshot priced
	policy cost.SharePolicy      // ... with this policy
	out    *attribution.Snapshot // the priced copy
}

// price returns attr with its fractional holders priced by policy: attr itself
// when it has none, else a copy sharing everything but the holders of
// devices with fractional holders. nil stays nil.
func (p *sharePricer) price(attr *attribution.Snapshot, policy cost.SharePolicy) *attribution.Snapshot {
	if attr == p.src && policy == p.policy && p.src != nil {
		return p.out
	}
	p.src, p.policy, p.out = attr, policy, attr
	if attr == nil {
		return nil
	}
	var holders map[string][]attribution.Holder
	var claims []cost.Claim
	var shares []float64
	for uuid, hs := range attr.Holders {
		claims = claims[:0]
		for _, h := range hs {
			if h.Fractional {
				claims = append(claims, cost.Claim{Memory: h.Memory, Cores: h.Cores})
			}
		}
		if len(claims) == 0 {
			continue
		}
		if holders == nil {
			holders = maps.Clone(attr.Holders)
		}
		shares = cost.FractionalShares(shares, policy, claims)
		priced := make([]attribution.Holder, len(hs))
		k := 0
		for i, h := range hs {
			if h.Fractional {
				h.Share = shares[k]
				k++
			}
			priced[i] = h
		}
		holders[uuid] = priced
	}
	if holders == nil {
		return attr
	}
	out := *attr
	out.Holders = holders
	p.out = &out
	return p.out
}

// fractional reports whether some holder of hs holds a fractional share.
func fractional(hs []attribution.Holder) bool {
	for _, h := range hs {
		if h.Fractional {
			return true
		}
	}
	return false
}
