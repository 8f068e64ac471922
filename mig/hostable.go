package mig

// Hostable returns how many of the slices that the instances named by layout
// leave free could still be used by further instances of the model: the most
// compute slices (of ComputeSlicesPerGPU), and the most memory slices (of
// MemorySlicesPerGPU), that any set of additional profiles fitting next to
// layout would use. Each maximum is taken on its own (the set of profiles that
// uses the most compute slices need not be the one that uses the most memory).
// Free slices beyond these are stranded: no instance of the model can ever use
// them while layout stands — an H100 split into two 3g.40gb leaves 1 compute
// slice free but no memory slice, so nothing is hostable.
//
// "Fits" follows CheckLayout: profile counts and slice sums, not NVIDIA's
// placement rules. It returns CheckLayout's error when layout itself does not fit.
func (m *Model) Hostable(layout []string) (compute, memory int, err error) {
	if err := m.CheckLayout(layout); err != nil {
		return 0, 0, err
	}
	count := make([]int, len(m.Profiles))
	usedC, usedM := 0, 0
	for _, name := range layout {
		for i, p := range m.Profiles {
			if p.Name == name {
				count[i]++
				usedC += p.ComputeSlices
				usedM += p.MemorySlices
			}
		}
	}
	// Slices are few (7 and 8): a depth-first search over the profiles that
	// still fit finds both maxima exactly.
	var search func(c, mem int)
	search = func(c, mem int) {
		compute, memory = max(compute, c-usedC), max(memory, mem-usedM)
		for i, p := range m.Profiles {
			if count[i] >= p.MaxInstances || c+p.ComputeSlices > ComputeSlicesPerGPU || mem+p.MemorySlices > MemorySlicesPerGPU {
				continue
			}
			count[i]++
			search(c+p.ComputeSlices, mem+p.MemorySlices)
			count[i]--
		}
	}
	search(usedC, usedM)
	return compute, memory, nil
}
