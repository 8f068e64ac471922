package model

import "testing"

// TestBucketSet: buckets 0, 63, 64 and 700 (the word boundaries at 64 and a
// word far out) are in the set; their neighbours 1, 62, 65, 699, 701, a
// negative bucket and one past the last word are not.
func TestBucketSet(t *testing.T) {
	var s BucketSet
	for _, b := range []int{0, 63, 64, 700, 64} {
		s.Add(b)
	}
	for _, b := range []int{0, 63, 64, 700} {
		if !s.Has(b) {
			t.Errorf("bucket %d added, not in the set", b)
		}
	}
	for _, b := range []int{1, 62, 65, 699, 701, -1, 100000} {
		if s.Has(b) {
			t.Errorf("bucket %d not added, in the set", b)
		}
	}
	if len(s) != 11 { // ⌊700 / 64⌋ + 1 words
		t.Errorf("%d words for buckets up to 700, want 11", len(s))
	}
	// Removing 64 leaves 63 and 700; removing a bucket never added, or past
	// the last word, changes nothing.
	s.Remove(64)
	s.Remove(65)
	s.Remove(5000)
	if s.Has(64) || !s.Has(63) || !s.Has(700) || len(s) != 11 {
		t.Errorf("after removing 64: 63 %t, 64 %t, 700 %t, %d words; want true, false, true, 11", s.Has(63), s.Has(64), s.Has(700), len(s))
	}
}
