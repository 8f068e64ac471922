package sim

import (
	"hash/fnv"
	"math"
)

// Every time-varying reading derives from activity values at "knots", fixed instants
// every knotNanos of Unix time, linearly interpolated in between. Power is linear
// between knots too, so the energy counter is the exact integral of the power the
// backend reports.
const (
	knotNanos   int64 = 5e9
	knotSeconds       = float64(knotNanos) / 1e9

	burstWindowKnots = int64(600 / knotSeconds) // bursty-dev decides once per 10 minutes
	burstChance      = 0.45                     // … whether a burst happens in the window
	burstMinKnots    = int64(60 / knotSeconds)  // … that lasts 1 to 4 minutes
	burstMaxKnots    = int64(240 / knotSeconds)
)

// mix is the splitmix64 finalizer: a cheap, well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// keyOf derives a random-stream key from the seed and names.
func keyOf(seed uint64, parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return mix(h.Sum64() ^ mix(seed))
}

// unit is a uniform value in [0, 1) for (key, i).
func unit(key uint64, i int64) float64 {
	return float64(mix(key^mix(uint64(i)))>>11) / (1 << 53)
}

// smooth is value noise in [0, 1) over t seconds that changes over about period seconds.
func smooth(key uint64, t, period float64) float64 {
	x := t / period
	i := math.Floor(x)
	f := x - i
	f = f * f * (3 - 2*f)
	a, b := unit(key, int64(i)), unit(key, int64(i)+1)
	return a + (b-a)*f
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// activity is the graphics-engine activity (0–1) of a workload at knot k.
func activity(p Pattern, key uint64, k int64) float64 {
	t := float64(k) * knotSeconds
	switch p {
	case Training:
		return 0.85 + 0.12*smooth(key, t, 120)
	case Inference:
		day := float64(((k*(knotNanos/1e9))%86400 + 86400) % 86400) // seconds since 00:00 UTC
		diurnal := 0.5 - 0.5*math.Cos(2*math.Pi*(day-3*3600)/86400) // 0 at 03:00, 1 at 15:00 UTC
		return clamp01(0.06 + 0.6*diurnal + 0.16*(smooth(key, t, 300)-0.5) + 0.04*(unit(key, k)-0.5))
	case BurstyDev:
		w := k / burstWindowKnots
		r := mix(key ^ mix(uint64(w)^0x5bd1e995))
		if float64(r>>11)/(1<<53) >= burstChance {
			return 0.005 * unit(key, k)
		}
		length := burstMinKnots + int64((r>>8)%uint64(burstMaxKnots-burstMinKnots+1))
		begin := int64((r >> 40) % uint64(burstWindowKnots-length+1))
		if off := k - w*burstWindowKnots; off >= begin && off < begin+length {
			return 0.55 + 0.4*unit(key, k)
		}
		return 0.005 * unit(key, k)
	}
	return 0
}

// activityAt interpolates activity at knot k plus frac (0–1) of the next interval.
func activityAt(p Pattern, key uint64, k int64, frac float64) float64 {
	if p == Idle {
		return 0
	}
	a, b := activity(p, key, k), activity(p, key, k+1)
	return a + (b-a)*frac
}

// fbUsedMiB is the framebuffer a workload of peak fbMiB holds at t seconds with
// activity a.
func fbUsedMiB(p Pattern, key uint64, fbMiB, t, a float64) float64 {
	switch p {
	case Training:
		return math.Round(fbMiB * (0.96 + 0.04*smooth(key, t, 600)))
	case Inference:
		return math.Round(fbMiB * (0.7 + 0.3*a))
	case BurstyDev:
		return math.Round(fbMiB * (0.2 + 0.8*math.Min(1, a/0.95)))
	}
	return fbMiB
}

// profile holds the ratios of SM, tensor-pipe and DRAM activity to graphics-engine
// activity for a pattern.
type profile struct{ sm, tensor, dram float64 }

func profileOf(p Pattern) profile {
	switch p {
	case Training:
		return profile{sm: 0.93, tensor: 0.62, dram: 0.48}
	case Inference:
		return profile{sm: 0.85, tensor: 0.35, dram: 0.40}
	case BurstyDev:
		return profile{sm: 0.80, tensor: 0.25, dram: 0.30}
	}
	return profile{}
}
