package analysis

import "testing"

// TestNearestRank: the q-quantile is the value at rank ⌈q × n⌉ (from 1) of
// the sorted values 1 … n. p95 of 20 is rank 19 exactly (not 20); of 11,
// ⌈10.45⌉ = 11 (10 when rounded); p50 of 4 is rank 2, of 5 rank ⌈2.5⌉ = 3;
// of one value, it; of none, 0.
func TestNearestRank(t *testing.T) {
	for _, c := range []struct {
		n    int
		q    float64
		want float64
	}{{20, 0.95, 19}, {11, 0.95, 11}, {4, 0.5, 2}, {5, 0.5, 3}, {1, 0.95, 1}, {100, 0.95, 95}, {0, 0.5, 0}} {
		values := make([]float64, c.n)
		for i := range values {
			values[i] = float64(i + 1)
		}
		if got := nearestRank(values, c.q); got != c.want {
			t.Errorf("q %g of 1…%d = %g, want %g", c.q, c.n, got, c.want)
		}
	}
}
