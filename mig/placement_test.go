package mig

import (
	"errors"
	"reflect"
	"slices"
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
			[]Placed{{"1g.10gb", 0, 1}, {"1g.10gb", 1, 1}, {"3g.40gb", 4, 4}, {"1g.10gb", 2, 1}, {"1g.10gb", 3, 1}}, ""},
		{"4g only at 0", []string{"3g.40gb", "4g.40gb"}, []Placed{{"3g.40gb", 4, 4}, {"4g.40gb", 0, 4}}, ""},
		{"2g at 0, 2, 4 and a 1g.20gb at 6", []string{"1g.20gb", "2g.20gb", "2g.20gb", "2g.20gb"},
			[]Placed{{"1g.20gb", 6, 2}, {"2g.20gb", 0, 2}, {"2g.20gb", 2, 2}, {"2g.20gb", 4, 2}}, ""},
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
// every model, in two orders: a layout places (Place and PlaceInOrder)
// exactly when CheckLayout accepts it, each instance at one of its profile's
// offsets, in layout order, and the places never overlap.
func TestPlaceAgreesWithCheckLayout(t *testing.T) {
	for _, m := range Models() {
		names := m.ProfileNames()
		n := 0
		var walk func(i int, layout []string)
		walk = func(i int, layout []string) {
			if i == len(names) {
				n++
				reversed := slices.Clone(layout)
				slices.Reverse(reversed)
				for _, l := range [][]string{layout, reversed} {
					for name, place := range map[string]func([]string) ([]Placed, error){"Place": m.Place, "PlaceInOrder": m.PlaceInOrder} {
						placed, err := place(l)
						if (err == nil) != (m.CheckLayout(l) == nil) {
							t.Errorf("%s %v: %s error %v, CheckLayout %v", m.Name, l, name, err, m.CheckLayout(l))
						}
						checkPlaced(t, m, l, placed)
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

// checkPlaced fails t unless placed puts layout's instances, in its order, at
// offsets their profiles allow, without overlap.
func checkPlaced(t *testing.T, m *Model, layout []string, placed []Placed) {
	t.Helper()
	if placed == nil {
		return
	}
	var used [MemorySlicesPerGPU]bool
	for i, p := range placed {
		prof, _ := m.Profile(layout[i])
		if p.Profile != prof.Name || p.Size != prof.MemorySlices || !slices.Contains(placementStarts(prof), p.Start) {
			t.Errorf("%s %v: instance %d placed %+v", m.Name, layout, i, p)
		}
		for s := p.Start; s < p.Start+p.Size; s++ {
			if used[s] {
				t.Errorf("%s %v: slice %d used twice in %v", m.Name, layout, s, placed)
			}
			used[s] = true
		}
	}
}

// TestPlaceInOrder: instances created in layout order take their lowest free
// offset; an order the driver cannot create falls back to Place's.
func TestPlaceInOrder(t *testing.T) {
	h100, _ := ForModel("NVIDIA H100 80GB HBM3")
	a100, _ := ForModel("NVIDIA A100-SXM4-40GB")
	for _, tc := range []struct {
		m      *Model
		layout []string
		want   []int // starts, in layout order
	}{
		{h100, []string{"3g.40gb", "1g.10gb", "1g.10gb"}, []int{0, 4, 5}},
		{h100, []string{"1g.10gb", "2g.20gb", "3g.40gb"}, []int{0, 2, 4}}, // Place: 6, 4, 0
		{h100, []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, []int{0, 1, 2, 3, 4, 5, 6}},
		{a100, []string{"2g.10gb", "4g.20gb"}, []int{4, 0}}, // in order the 4g finds no start
	} {
		placed, err := tc.m.PlaceInOrder(tc.layout)
		var got []int
		for _, p := range placed {
			got = append(got, p.Start)
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("PlaceInOrder(%s, %v) = %v, %v; want starts %v", tc.m.Name, tc.layout, got, err, tc.want)
		}
	}
}
