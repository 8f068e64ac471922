package mig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	h100, _ := ForModel("NVIDIA H100 80GB HBM3")
	for _, tc := range []struct {
		name   string
		layout []string
		want   []Placed
		err    string
	}{
		{"3g goes to the upper half when 1g instances fill the lower", []string{"1g.10gb", "1g.10gb", "3g.40gb", "1g.10gb", "1g.10gb"},
			[]Placed{{"1g.10gb", 0, 1}, {"1g.10gb", 1, 1}, {"1g.10gb", 2, 1}, {"1g.10gb", 3, 1}, {"3g.40gb", 4, 4}}, ""},
		{"4g only at 0", []string{"3g.40gb", "4g.40gb"}, []Placed{{"4g.40gb", 0, 4}, {"3g.40gb", 4, 4}}, ""},
		{"2g at 0, 2, 4 and a 1g.20gb at 6", []string{"1g.20gb", "2g.20gb", "2g.20gb", "2g.20gb"},
			[]Placed{{"2g.20gb", 0, 2}, {"2g.20gb", 2, 2}, {"2g.20gb", 4, 2}, {"1g.20gb", 6, 2}}, ""},
		{"too much compute", []string{"4g.40gb", "4g.40gb"}, nil, "more than 1 instances"},
		{"unknown profile", []string{"1g.5gb"}, nil, `no MIG profile "1g.5gb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h100.Place(tc.layout)
			if tc.err != "" {
				var le *LayoutError
				if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a *LayoutError containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Place = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestPlaceAgreesWithCheckLayout enumerates every multiset of profiles of
// every model: a layout places exactly when CheckLayout accepts it, and the
// places never overlap.
func TestPlaceAgreesWithCheckLayout(t *testing.T) {
	for _, m := range Models() {
		names := m.ProfileNames()
		n := 0
		var walk func(i int, layout []string)
		walk = func(i int, layout []string) {
			if i == len(names) {
				n++
				placed, err := m.Place(layout)
				if (err == nil) != (m.CheckLayout(layout) == nil) {
					t.Errorf("%s %v: Place error %v, CheckLayout %v", m.Name, layout, err, m.CheckLayout(layout))
				}
				var used [MemorySlicesPerGPU]bool
				for _, p := range placed {
					for s := p.Start; s < p.Start+p.Size; s++ {
						if used[s] {
							t.Errorf("%s %v: slice %d used twice in %v", m.Name, layout, s, placed)
						}
						used[s] = true
					}
				}
				return
			}
			for k := 0; k <= 8; k++ {
				next := append([]string{}, layout...)
				for range k {
					next = append(next, names[i])
				}
				walk(i+1, next)
				if m.CheckLayout(next) != nil {
					break
				}
			}
		}
		walk(0, nil)
		if n < 100 {
			t.Errorf("%s: only %d layouts enumerated", m.Name, n)
		}
	}
}
