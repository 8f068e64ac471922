package model

import "math/bits"

// BucketSet is a set of step buckets, one bit each; the zero value is empty.
type BucketSet []uint64

// Add puts bucket b (≥ 0) in the set.
func (s *BucketSet) Add(b int) {
	w := b / 64
	if w >= len(*s) {
		*s = append(*s, make([]uint64, w-len(*s)+1)...)
	}
	(*s)[w] |= 1 << (b % 64)
}

// Remove takes bucket b (≥ 0) out of the set.
func (s BucketSet) Remove(b int) {
	if w := b / 64; w < len(s) {
		s[w] &^= 1 << (b % 64)
	}
}

// Has says whether bucket b is in the set.
func (s BucketSet) Has(b int) bool {
	w := b / 64
	return b >= 0 && w < len(s) && s[w]&(1<<(b%64)) != 0
}

// Len is the number of buckets in the set.
func (s BucketSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}
