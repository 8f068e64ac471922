package advice

import (
	"slices"
	"testing"
	"time"
)

// TestAddAtEnds: a wait [from, to) counts in the stretches whose end lies
// in it — stretches ending at 1 h, 2 h, … 5 h. Waiting from 1 h to 3 h it
// waits at 1 h and 2 h, not at 3 h, when it is bound; from 2 h at 2 h; from
// 1.5 h to 1.9 h at
// no end; to past the last end, at every end from its start.
func TestAddAtEnds(t *testing.T) {
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h := func(x float64) time.Time { return base.Add(time.Duration(x * float64(time.Hour))) }
	for _, c := range []struct {
		from, to float64
		want     []float64
	}{
		{1, 3, []float64{2, 2, 0, 0, 0}},
		{0.5, 1, []float64{0, 0, 0, 0, 0}},
		{1.5, 1.9, []float64{0, 0, 0, 0, 0}},
		{2, 4, []float64{0, 2, 2, 0, 0}},
		{1.5, 3.01, []float64{0, 2, 2, 0, 0}},
		{3.5, 9, []float64{0, 0, 0, 2, 2}},
	} {
		got := addAtEnds(nil, 5, h(1), time.Hour, h(c.from), h(c.to), 2)
		if !slices.Equal(got, c.want) {
			t.Errorf("[%g h, %g h): %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
