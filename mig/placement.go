package mig

import (
	"cmp"
	"fmt"
	"slices"
)

// Placed is one instance of a layout at its place on the GPU: it occupies the
// memory slices [Start, Start+Size).
type Placed struct {
	Profile string
	Start   int // first memory slice, 0–7
	Size    int // memory slices, the profile's MemorySlices
}

// placementStarts returns the memory slices an instance of p may start at. NVIDIA
// places GPU instances at fixed offsets (`nvidia-smi mig -lgipp`), the same on
// the A100, H100 and H200: one-slice profiles at 0–6, 1g with two memory
// slices at 0, 2, 4, 6, 2g at 0, 2, 4, 3g at 0 and 4, 4g and 7g at 0 only.
func placementStarts(p Profile) []int {
	switch {
	case p.ComputeSlices >= 4:
		return []int{0}
	case p.ComputeSlices == 3:
		return []int{0, 4}
	case p.ComputeSlices == 2:
		return []int{0, 2, 4}
	case p.MemorySlices == 2:
		return []int{0, 2, 4, 6}
	}
	return []int{0, 1, 2, 3, 4, 5, 6}
}

// Place finds where the instances named by layout go on one empty GPU of the
// model, honouring CheckLayout's counts and sums and NVIDIA's placement
// offsets: 1g.10gb ×4 + 3g.40gb puts the 3g instance at slice 4 and the 1g
// instances at 0–3. On the tables of this package every layout CheckLayout
// accepts also places (TestPlaceAgreesWithCheckLayout enumerates them); Place
// adds the positions, which a partly used GPU needs. The result is in layout
// order. It returns a *LayoutError when the layout does not fit: the first
// profile CheckLayout rejects, or the profile that found no place.
func (m *Model) Place(layout []string) ([]Placed, error) {
	if err := m.CheckLayout(layout); err != nil {
		return nil, err
	}
	// Largest first: the fewest offsets are the hardest to satisfy.
	order := make([]int, len(layout))
	for i := range order {
		order[i] = i
	}
	profiles := make([]Profile, len(layout))
	for i, name := range layout {
		profiles[i], _ = m.Profile(name)
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(profiles[y].MemorySlices, profiles[x].MemorySlices),
			cmp.Compare(profiles[y].ComputeSlices, profiles[x].ComputeSlices))
	})
	var used [MemorySlicesPerGPU]bool
	placed := make([]Placed, len(layout))
	deepest := 0
	var place func(k int) bool
	place = func(k int) bool {
		if k == len(order) {
			return true
		}
		deepest = max(deepest, k)
		p := profiles[order[k]]
		for _, s := range placementStarts(p) {
			if s+p.MemorySlices > MemorySlicesPerGPU || slices.Contains(used[s:s+p.MemorySlices], true) {
				continue
			}
			for j := s; j < s+p.MemorySlices; j++ {
				used[j] = true
			}
			placed[order[k]] = Placed{Profile: p.Name, Start: s, Size: p.MemorySlices}
			if place(k + 1) {
				return true
			}
			for j := s; j < s+p.MemorySlices; j++ {
				used[j] = false
			}
		}
		return false
	}
	if !place(0) {
		i := order[deepest]
		return nil, &LayoutError{Index: i, Reason: fmt.Sprintf("%s finds no free placement on one %s next to the others",
			layout[i], m.Name)}
	}
	return placed, nil
}

// PlaceInOrder returns where NVIDIA's driver puts the instances of layout
// created one after the other in layout order, each at its lowest free
// offset, as mig-parted creates them; when that order cannot create them all
// (a 4g.20gb after a 2g.10gb on an A100 40GB: the 4g only starts at 0), the
// placement of Place, which puts the largest first. The result is in layout
// order; the error is Place's.
func (m *Model) PlaceInOrder(layout []string) ([]Placed, error) {
	placed, err := m.Place(layout)
	if err != nil {
		return nil, err
	}
	var used [MemorySlicesPerGPU]bool
	inOrder := make([]Placed, len(layout))
	for i, name := range layout {
		p, _ := m.Profile(name)
		start := -1
		for _, s := range placementStarts(p) {
			if s+p.MemorySlices <= MemorySlicesPerGPU && !slices.Contains(used[s:s+p.MemorySlices], true) {
				start = s
				break
			}
		}
		if start < 0 {
			return placed, nil
		}
		for j := start; j < start+p.MemorySlices; j++ {
			used[j] = true
		}
		inOrder[i] = Placed{Profile: p.Name, Start: start, Size: p.MemorySlices}
	}
	return inOrder, nil
}
