package engine

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestMemIteratorSeek: a series of 600 samples, one every 10 ms at 10, 20, …,
// 6000 with value t/10 (three chunks of samplesPerChunk = 240: 10…2400,
// 2410…4800, 4810…6000), read by Next and Seek across the chunks' edges.
func TestMemIteratorSeek(t *testing.T) {
	b := NewStoreBuilder()
	ls := labels.FromStrings("__name__", "c")
	for i := 1; i <= 600; i++ {
		if err := b.Append(ls, int64(10*i), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	st := b.Store()
	s := st.byName["c"][0]
	if len(s.chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(s.chunks))
	}
	type op struct {
		seek   int64 // 0: Next
		wantT  int64 // 0: ValNone
		wantV  float64
		reason string
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"next from the start", []op{{0, 10, 1, "first sample"}, {0, 20, 2, "second"}}},
		{"seek before the first", []op{{5, 10, 1, "the first sample is after 5"}}},
		{"seek into the second chunk", []op{{2405, 2410, 241, "2400 ends chunk 1"}, {0, 2420, 242, "next after it"}}},
		{"seek to a chunk's last sample", []op{{4800, 4800, 480, "exact"}, {0, 4810, 481, "next crosses into chunk 3"}}},
		{"seek backwards has no effect", []op{{3000, 3000, 300, "exact"}, {100, 3000, 300, "already past 100"}}},
		{"next across every edge", []op{{2390, 2390, 239, ""}, {0, 2400, 240, ""}, {0, 2410, 241, "chunk 2"}}},
		{"seek past the end", []op{{6001, 0, 0, "no sample at or after 6001"}, {0, 0, 0, "stays done"}, {10, 0, 0, "stays done"}}},
		{"next to the end", []op{{5990, 5990, 599, ""}, {0, 6000, 600, "last"}, {0, 0, 0, "done"}}},
	} {
		// A reused iterator must start over.
		var it chunkenc.Iterator
		for range 2 {
			it = s.Iterator(it)
			for i, o := range tc.ops {
				var vt chunkenc.ValueType
				if o.seek == 0 {
					vt = it.Next()
				} else {
					vt = it.Seek(o.seek)
				}
				if o.wantT == 0 {
					if vt != chunkenc.ValNone {
						t.Errorf("%s, op %d (%s): %v at %d, want none", tc.name, i, o.reason, vt, it.AtT())
					}
					continue
				}
				if vt != chunkenc.ValFloat {
					t.Errorf("%s, op %d (%s): %v, want a float", tc.name, i, o.reason, vt)
					break
				}
				if gt, gv := it.At(); gt != o.wantT || gv != o.wantV {
					t.Errorf("%s, op %d (%s): (%d, %g), want (%d, %g)", tc.name, i, o.reason, gt, gv, o.wantT, o.wantV)
				}
			}
		}
	}
}

// TestMemIteratorCount: Next visits every sample once, in order.
func TestMemIteratorCount(t *testing.T) {
	b := NewStoreBuilder()
	ls := labels.FromStrings("__name__", "c")
	for i := 1; i <= 1000; i++ {
		if err := b.Append(ls, int64(i), float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	it := b.Store().byName["c"][0].Iterator(nil)
	n, last := 0, int64(0)
	for it.Next() == chunkenc.ValFloat {
		ts, _ := it.At()
		if ts != last+1 {
			t.Fatalf("sample at %d after %d", ts, last)
		}
		n, last = n+1, ts
	}
	if n != 1000 || it.Err() != nil {
		t.Errorf("%d samples (err %v), want 1000", n, it.Err())
	}
}
