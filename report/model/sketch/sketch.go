// Package sketch keeps the distribution of a stream of non-negative values —
// activity ratios (0–1), framebuffer MiB — in a mergeable log-bucketed
// histogram whose size does not grow with the number of values: the report
// keeps one per holding and signal instead of every value of the range.
//
// Error bound: a quantile is within 1 % of the exact nearest-rank quantile
// of the values added, relative to it, for values from Smallest to Largest;
// 0 is counted apart and is exact. The smallest and largest value added are
// kept exactly, and a quantile that falls in their bucket is that value, so
// a sketch of equal values answers the value itself, and the maximum is
// exact. A value below Smallest (a ratio under 10⁻⁶, under one byte of
// framebuffer) is off by at most Smallest.
//
// Size: 4 bytes per bucket from the smallest to the largest value's bucket
// (a bucket spans 0.99 %: values from 0.01 to 1 span 468 of them), at most
// 3,519 buckets (14 KiB) whatever the number of values; a bucket counts up
// to 2³² − 1 values. A Sketch is not safe for concurrent use.
package sketch

import (
	"math"
	"slices"
)

// gamma is the ratio of a bucket's upper bound to its lower one: any value
// in a bucket is within gamma − 1 (0.99 %) of any other value in it, so the
// bound holds with room for the rounding of the logarithm.
const gamma = 1.0099

// Smallest and Largest bound the values the buckets resolve: below Smallest
// a value counts in the lowest bucket, above Largest in the highest.
const (
	Smallest = 1.0 / (1 << 20)
	Largest  = 1 << 30
)

var (
	logGamma = math.Log(gamma)
	minIndex = index(Smallest) // the lowest bucket, which also holds every value below Smallest
	maxIndex = index(Largest)  // the highest, which also holds every value above Largest
)

// index returns the bucket of v > 0: bucket i holds (gamma^(i−1), gamma^i].
func index(v float64) int {
	return int(math.Ceil(math.Log(v) / logGamma))
}

// middle returns the geometric middle of bucket i, within 0.5 % of every
// value in it.
func middle(i int) float64 {
	return math.Pow(gamma, float64(i)-0.5)
}

// Sketch is the histogram. The zero value is an empty sketch.
type Sketch struct {
	counts   []uint32 // values per bucket, from bucket offset on
	offset   int
	zeros    uint64  // values equal to 0
	n        uint64  // values in all
	min, max float64 // the smallest positive value and the largest value added
}

// Add records v. A negative or NaN v is not a value and is not recorded.
func (s *Sketch) Add(v float64) {
	if !(v >= 0) {
		return
	}
	s.n++
	s.max = max(s.max, v)
	if v == 0 {
		s.zeros++
		return
	}
	if s.min == 0 || v < s.min {
		s.min = v
	}
	s.grow(bucketOf(v))[0]++
}

// bucketOf returns v's bucket, clamped to the range the sketch resolves.
func bucketOf(v float64) int {
	return min(max(index(v), minIndex), maxIndex)
}

// grow widens the counts to hold bucket i and returns them from i on.
func (s *Sketch) grow(i int) []uint32 {
	switch {
	case len(s.counts) == 0:
		s.counts, s.offset = make([]uint32, 1, 8), i
	case i < s.offset:
		s.counts = slices.Insert(s.counts, 0, make([]uint32, s.offset-i)...)
		s.offset = i
	case i >= s.offset+len(s.counts):
		s.counts = append(s.counts, make([]uint32, i-s.offset-len(s.counts)+1)...)
	}
	return s.counts[i-s.offset:]
}

// Merge adds every value o recorded to s, as if each had been added to s:
// the merge of two sketches is the sketch of both streams.
func (s *Sketch) Merge(o *Sketch) {
	if o == nil || o.n == 0 {
		return
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	if o.min > 0 && (s.min == 0 || o.min < s.min) {
		s.min = o.min
	}
	s.n += o.n
	s.zeros += o.zeros
	if len(o.counts) == 0 {
		return
	}
	s.grow(o.offset)
	s.grow(o.offset + len(o.counts) - 1)
	c := s.counts[o.offset-s.offset:]
	for i, v := range o.counts {
		c[i] += v
	}
}

// Count returns how many values were added.
func (s *Sketch) Count() uint64 { return s.n }

// Max returns the largest value added, exactly; 0 for an empty sketch.
func (s *Sketch) Max() float64 { return s.max }

// Quantile returns the q-quantile (0–1) by nearest rank: the value at rank
// ⌈q·n⌉ (at least 1) of the n values added in increasing order, within the
// package's error bound; 0 for an empty sketch.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	rank := uint64(max(1, math.Ceil(q*float64(s.n))))
	rank = min(rank, s.n)
	if rank <= s.zeros {
		return 0
	}
	seen := s.zeros
	for j, c := range s.counts {
		if seen += uint64(c); seen >= rank {
			return s.valueOf(s.offset + j)
		}
	}
	return s.max
}

// valueOf returns the answer for bucket i: the largest or smallest value
// added when it is in i, else i's middle.
func (s *Sketch) valueOf(i int) float64 {
	switch i {
	case bucketOf(s.max):
		return s.max
	case bucketOf(s.min):
		return s.min
	}
	return middle(i)
}
