package cost

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// SharePolicyKind names a rule that prices fractional shares of a GPU.
type SharePolicyKind uint8

// The share policies of the price book's fractional.policy.
const (
	// Dominant: each holder's dominant share (the larger of its memory and
	// core fractions), scaled so that the shares and the capacity still free
	// on the tightest axis add up to the GPU (the default).
	Dominant SharePolicyKind = iota
	// MemoryShares: the memory fraction.
	MemoryShares
	// CoreShares: the core fraction; holders without a core limit share the
	// compute no limit reserves equally.
	CoreShares
	// Weighted: MemoryWeight × the memory fraction + (1 − MemoryWeight) ×
	// the core fraction as CoreShares counts it (HAMi's proposal of pricing
	// memory and compute separately).
	Weighted
)

// String returns the price book spelling.
func (k SharePolicyKind) String() string {
	switch k {
	case MemoryShares:
		return "memory"
	case CoreShares:
		return "cores"
	case Weighted:
		return "weighted"
	}
	return "dominant"
}

// SharePolicy prices the holders of fractional shares of one GPU (HAMi's
// memory and cores, KAI-Scheduler's gpu-fraction, DRA consumed capacity): the
// price book's `fractional` block.
type SharePolicy struct {
	Kind SharePolicyKind
	// MemoryWeight is the weight of the memory fraction, 0–1, for Weighted.
	MemoryWeight float64
}

// Claim is what one holder reserved of a GPU, as fractions of the capacity
// the GPU offers (for HAMi, its registration: memory × deviceMemoryScaling,
// 100 × deviceCoreScaling cores).
type Claim struct {
	Memory float64 // 0–1
	// Cores is the fraction of the compute reserved; 0 is no core limit,
	// which reserves nothing (HAMi's gpucores 0) but may use what is free.
	Cores float64
}

// FractionalShares fills dst (resized to len(claims)) with the share of the
// GPU each holder pays for, 0–1, under policy, and returns it. The shares sum
// to at most 1; the rest is the part no holder reserved: unallocated.
// Negative or NaN fractions count as 0.
//
// Dominant (docs/cost.md, "Fractional shares"): with dᵢ = max(memoryᵢ, coresᵢ)
// and R the capacity still free on the tightest axis, max(0, min over the
// axes of 1 − Σ fractions) — the core axis only when some holder has a core
// limit — shareᵢ = dᵢ × (1 − R) / Σd. So the shares and R add up to 1, no
// holder pays more than its dominant share, and R is never more than the
// scheduler would still grant on any axis.
//
// MemoryShares, CoreShares and Weighted: shareᵢ = w × memoryᵢ + (1 − w) ×
// coresᵢ′, w being 1, 0 or MemoryWeight, where coresᵢ′ is coresᵢ for a holder
// with a core limit and, for one without, an equal part of the compute the
// limits leave (max(0, 1 − Σ limits) / the holders without one). Shares
// summing above 1 are scaled down to 1.
func FractionalShares(dst []float64, policy SharePolicy, claims []Claim) []float64 {
	n := len(claims)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	var sumMem, sumCores float64
	unlimited := 0
	for _, c := range claims {
		sumMem += fraction(c.Memory)
		if f := fraction(c.Cores); f > 0 {
			sumCores += f
		} else {
			unlimited++
		}
	}
	if policy.Kind == Dominant {
		free := 1 - sumMem
		if unlimited < n { // some holder limits cores: the core axis counts
			free = min(free, 1-sumCores)
		}
		free = max(free, 0)
		sumDom := 0.0
		for i, c := range claims {
			dst[i] = max(fraction(c.Memory), fraction(c.Cores))
			sumDom += dst[i]
		}
		for i := range dst {
			if sumDom > 0 {
				dst[i] *= (1 - free) / sumDom
			}
		}
		return dst
	}
	w := policy.MemoryWeight
	switch policy.Kind {
	case MemoryShares:
		w = 1
	case CoreShares:
		w = 0
	}
	leftover := 0.0
	if unlimited > 0 {
		leftover = max(1-sumCores, 0) / float64(unlimited)
	}
	sum := 0.0
	for i, c := range claims {
		cores := fraction(c.Cores)
		if cores == 0 {
			cores = leftover
		}
		dst[i] = w*fraction(c.Memory) + (1-w)*cores
		sum += dst[i]
	}
	if sum > 1 {
		for i := range dst {
			dst[i] /= sum
		}
	}
	return dst
}

// fraction returns f, or 0 for a negative or NaN f.
func fraction(f float64) float64 {
	if f > 0 {
		return f
	}
	return 0
}

// SharePolicy returns the policy of the book in force: how the collector
// prices the holders of fractional shares before it passes them to Advance.
func (l *Ledger) SharePolicy() SharePolicy { return l.books.Book().Fractional }

// Estimate is how much of one holder's busy and idle time on one device was
// judged by the device's activity rather than its own (Holder.ActivityEstimated),
// since the process started.
type Estimate struct {
	GPU     string // UUID of the physical GPU
	Device  string // UUID of the GPU or MIG instance
	Holder  HolderKey
	Seconds float64 // device-seconds
	EUR     float64
	Since   float64 // as Total.Since
}

// AppendEstimates appends, for every holder whose activity was ever
// estimated, its cumulative estimated time to dst, in the order of
// AppendTotals, and returns the extended slice. It follows the holders'
// retention like their series.
func (l *Ledger) AppendEstimates(dst []Estimate) []Estimate {
	for i := range l.gpus.rows {
		r := &l.gpus.rows[i]
		dst = r.val.whole.appendEstimates(dst, r.key, r.key)
		for j := range r.val.instances.rows {
			ir := &r.val.instances.rows[j]
			dst = ir.val.appendEstimates(dst, r.key, ir.key)
		}
	}
	return dst
}

func (d *deviceAcc) appendEstimates(dst []Estimate, gpu, device string) []Estimate {
	for i := range d.holders.rows {
		h := &d.holders.rows[i]
		if h.val.estimated.used {
			dst = append(dst, Estimate{GPU: gpu, Device: device, Holder: h.key,
				Seconds: h.val.estimated.seconds, EUR: h.val.estimated.eur, Since: h.since})
		}
	}
	return dst
}

// parseFractional decodes the book's `fractional` block into policy:
//
//	fractional: {policy: weighted, memory_weight: 0.7}
//
// policy is dominant (default), memory, cores or weighted; memory_weight,
// 0–1 (default 0.5), only with weighted.
func (p *parser) parseFractional(v *yaml.Node, policy *SharePolicy) error {
	policy.MemoryWeight = 0.5
	var weight *yaml.Node
	err := p.mapping(v, "fractional", map[string]func(key, val *yaml.Node) error{
		"policy": func(_, v *yaml.Node) error {
			s, err := p.str(v, "fractional.policy")
			if err != nil {
				return err
			}
			for _, k := range []SharePolicyKind{Dominant, MemoryShares, CoreShares, Weighted} {
				if s == k.String() {
					policy.Kind = k
					return nil
				}
			}
			return p.errorf(v, "fractional.policy", "must be dominant, memory, cores or weighted, got %q", s)
		},
		"memory_weight": func(_, v *yaml.Node) error {
			weight = v
			return p.bounded(v, "fractional.memory_weight", &policy.MemoryWeight, between(0, 1))
		},
	})
	if err == nil && weight != nil && policy.Kind != Weighted {
		err = p.errorf(weight, "fractional.memory_weight", "only with policy weighted, not %s", policy.Kind)
	}
	return err
}

// String describes the policy as the book spells it.
func (s SharePolicy) String() string {
	if s.Kind == Weighted {
		return fmt.Sprintf("weighted (memory_weight %g)", s.MemoryWeight)
	}
	return s.Kind.String()
}
