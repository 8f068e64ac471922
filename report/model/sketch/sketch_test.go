package sketch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bound is the relative error the package promises.
const bound = 0.01

// exactQuantile is the nearest-rank q-quantile of v: the value at rank
// ⌈q·n⌉ (at least 1) of v sorted.
func exactQuantile(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	r := max(1, int(math.Ceil(q*float64(len(s)))))
	return s[min(r, len(s))-1]
}

func of(v ...float64) *Sketch {
	var s Sketch
	for _, x := range v {
		s.Add(x)
	}
	return &s
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / want
}

// TestOneToHundred: the values 1, 2, …, 100. By nearest rank the q-quantile
// is the value at rank ⌈100·q⌉: p95 = 95, p99 = 99, p50 = 50, p95.1 = 96
// (rank ⌈95.1⌉ = 96), p0 = 1 (rank at least 1), p100 = 100. 1 and 100 are
// the smallest and largest value, kept exactly.
func TestOneToHundred(t *testing.T) {
	var v []float64
	for i := 1; i <= 100; i++ {
		v = append(v, float64(i))
	}
	s := of(v...)
	for _, c := range []struct{ q, want float64 }{{0.95, 95}, {0.99, 99}, {0.5, 50}, {0.951, 96}, {0, 1}, {1, 100}} {
		if got := s.Quantile(c.q); relErr(got, c.want) > bound {
			t.Errorf("p%g of 1..100 = %g, want %g within 1 %%", 100*c.q, got, c.want)
		}
	}
	if got := s.Quantile(0); got != 1 {
		t.Errorf("p0 = %g, want the smallest value 1 exactly", got)
	}
	if got, m := s.Quantile(1), s.Max(); got != 100 || m != 100 || s.Count() != 100 {
		t.Errorf("p100 %g, max %g, count %d; want 100, 100, 100", got, m, s.Count())
	}
}

// TestOneValue: a holding whose value never changes reads that value, at
// every quantile, exactly — the advice's round figures stay round.
func TestOneValue(t *testing.T) {
	for _, v := range []float64{0.95, 2000, 70000, 0.1, 6144} {
		s := of(v, v, v, v, v, v, v)
		for _, q := range []float64{0, 0.5, 0.95, 0.99, 1} {
			if got := s.Quantile(q); got != v {
				t.Errorf("p%g of 7 × %g = %g, want it exactly", 100*q, v, got)
			}
		}
		if s.Max() != v {
			t.Errorf("max of 7 × %g = %g", v, s.Max())
		}
	}
}

// TestZeros: 0 is counted apart and read exactly; 3 zeros and a 5 have
// p50 = 0 (rank 2) and p76 = 5 (rank ⌈3.04⌉ = 4).
func TestZeros(t *testing.T) {
	s := of(0, 0, 0, 0)
	if s.Quantile(0.99) != 0 || s.Max() != 0 || s.Count() != 4 {
		t.Errorf("4 zeros: p99 %g, max %g, count %d; want 0, 0, 4", s.Quantile(0.99), s.Max(), s.Count())
	}
	s = of(0, 5, 0, 0)
	if s.Quantile(0.5) != 0 || s.Quantile(0.75) != 0 || s.Quantile(0.76) != 5 {
		t.Errorf("3 zeros and a 5: p50 %g, p75 %g, p76 %g; want 0, 0, 5", s.Quantile(0.5), s.Quantile(0.75), s.Quantile(0.76))
	}
	var empty Sketch
	if empty.Quantile(0.5) != 0 || empty.Max() != 0 || empty.Count() != 0 {
		t.Error("an empty sketch reads other than 0")
	}
}

// TestNotValues: a negative or NaN reading is not recorded.
func TestNotValues(t *testing.T) {
	s := of(-1, math.NaN(), 3)
	if s.Count() != 1 || s.Quantile(0) != 3 {
		t.Errorf("count %d, p0 %g; want 1, 3", s.Count(), s.Quantile(0))
	}
}

// TestBucketEdge: a value just above a bucket's lower bound (a) and one
// just below its upper bound (b = a·0.99 % more, nearly) share the bucket,
// and b is the largest value, so p50 (rank 1, exactly a) is answered as b:
// the worst case, 0.99 % off — at the bound, not over it.
func TestBucketEdge(t *testing.T) {
	for _, i := range []int{-700, -5, 1, 300, 1500} {
		a := math.Pow(gamma, float64(i-1)) * (1 + 1e-9)
		b := math.Pow(gamma, float64(i)) * (1 - 1e-9)
		s := of(b, a)
		got := s.Quantile(0.5)
		if e := relErr(got, a); e > bound || e < 0.0098 {
			t.Errorf("bucket %d: p50 of {%g, %g} = %g, %.4f %% off; want the bucket's far edge, 0.98–1 %% off", i, a, b, got, 100*e)
		}
		if s.Quantile(1) != b {
			t.Errorf("bucket %d: p100 = %g, want the max %g exactly", i, s.Quantile(1), b)
		}
	}
}

// TestMiddleOfBucket: a quantile in a bucket holding neither the smallest
// nor the largest value is the bucket's geometric middle. 0.5 is in bucket
// ⌈ln 0.5 / ln 1.0099⌉ = ⌈−70.36⌉ = −70, (0.49686, 0.50178]; its middle is
// 1.0099^−70.5 = e^(−70.5 · 0.0098513) = 0.49931, 0.14 % below 0.5.
func TestMiddleOfBucket(t *testing.T) {
	s := of(0.01, 0.5, 1)
	if got := s.Quantile(0.5); math.Abs(got-0.49931) > 0.00001 {
		t.Errorf("p50 of {0.01, 0.5, 1} = %g, want 0.5's bucket middle 0.49931", got)
	}
}

// TestSmallest: a value below Smallest counts in the lowest bucket; it is
// read within Smallest of itself.
func TestSmallest(t *testing.T) {
	s := of(1e-9, 1e-12, 1)
	if got := s.Quantile(0.5); math.Abs(got-1e-9) > Smallest {
		t.Errorf("p50 of {1e-12, 1e-9, 1} = %g, want within %g of 1e-9", got, Smallest)
	}
	if s.Quantile(0) != 1e-12 {
		t.Errorf("p0 = %g, want the smallest value 1e-12", s.Quantile(0))
	}
}

// TestFixedSize: the buckets a sketch holds do not grow with the number of
// values: a million activity ratios from 0.01 to 1 hold at most the 468
// buckets between them (⌈ln(100) / ln(1.0099)⌉ = ⌈467.5⌉, one more for the
// partial ones at the ends); values over the whole float range at most the
// 3,519 buckets from Smallest to Largest (2,111 + 1,407 + 1).
func TestFixedSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s Sketch
	for range 1_000_000 {
		s.Add(0.01 + 0.99*rng.Float64())
	}
	if n := len(s.counts); n > 469 {
		t.Errorf("1e6 ratios in [0.01, 1] hold %d buckets, want ≤ 469", n)
	}
	for _, v := range []float64{1e-300, Smallest, 1, Largest, 1e300, math.Inf(1)} {
		s.Add(v)
	}
	if n := len(s.counts); n != 3519 || maxIndex-minIndex+1 != 3519 {
		t.Errorf("values over the float range hold %d buckets (indices %d..%d), want 3,519", n, minIndex, maxIndex)
	}
}

// TestMergeIsUnion: merging sketches equals the sketch of all their values,
// whichever side's buckets lie lower, and with empty sketches on either side.
func TestMergeIsUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	low, high, zeros := make([]float64, 500), make([]float64, 700), []float64{0, 0, 0}
	for i := range low {
		low[i] = 0.001 + 0.1*rng.Float64()
	}
	for i := range high {
		high[i] = 500 * math.Exp(5*rng.Float64())
	}
	for _, parts := range [][][]float64{{low, high}, {high, low}, {nil, low}, {high, nil}, {zeros, high, low}, {low, zeros}} {
		var merged Sketch
		var all []float64
		for _, p := range parts {
			merged.Merge(of(p...))
			all = append(all, p...)
		}
		whole := of(all...)
		if merged.Count() != whole.Count() || merged.Max() != whole.Max() || merged.min != whole.min || merged.zeros != whole.zeros {
			t.Fatalf("merged count %d max %g min %g zeros %d; the union's %d, %g, %g, %d",
				merged.Count(), merged.Max(), merged.min, merged.zeros, whole.Count(), whole.Max(), whole.min, whole.zeros)
		}
		for q := 0.0; q <= 1; q += 0.01 {
			if merged.Quantile(q) != whole.Quantile(q) {
				t.Errorf("p%g: merged %g, union %g", 100*q, merged.Quantile(q), whole.Quantile(q))
			}
		}
	}
	var s Sketch
	s.Merge(nil)
	s.Merge(&Sketch{})
	if s.Count() != 0 {
		t.Error("merging nothing added values")
	}
}

// TestRelativeErrorProperty: on random data of several shapes, every
// quantile is within 1 % of the exact nearest-rank one.
func TestRelativeErrorProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := map[string]func() float64{
		"uniform ratio":        rng.Float64,
		"log-uniform 1e-6–1e6": func() float64 { return math.Exp(math.Log(1e-6) + rng.Float64()*math.Log(1e12)) },
		"framebuffer steps":    func() float64 { return float64(rng.IntN(8)) * 10240 },
		"mostly idle":          func() float64 { return math.Max(0, rng.NormFloat64()*0.05) },
		"float32 of ratios":    func() float64 { return float64(float32(rng.Float64())) },
	}
	for name, gen := range shapes {
		for trial := range 20 {
			n := 1 + rng.IntN(3000)
			v := make([]float64, n)
			for i := range v {
				v[i] = gen()
			}
			s := of(v...)
			for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
				want := exactQuantile(v, q)
				if got := s.Quantile(q); relErr(got, want) > bound {
					t.Fatalf("%s, trial %d, n %d: p%g = %g, exact %g, %.3f %% off", name, trial, n, 100*q, got, want, 100*relErr(got, want))
				}
			}
		}
	}
}
