package mig

import "testing"

func TestHostable(t *testing.T) {
	tests := []struct {
		model           string
		layout          []string
		compute, memory int
	}{
		// 2× 3g.40gb use 6 of 7 compute and all 8 memory slices: the last
		// compute slice has no memory to go with it.
		{"NVIDIA H100 80GB HBM3", []string{"3g.40gb", "3g.40gb"}, 0, 0},
		// The default scenario's GPU 6: 3g.40gb + 2× 1g.10gb leave 2 compute
		// and 2 memory slices, room for a 2g.20gb (or two 1g.10gb).
		{"NVIDIA H100 80GB HBM3", []string{"3g.40gb", "1g.10gb", "1g.10gb"}, 2, 2},
		// The default scenario's GPU 7: all 7 compute slices used, 1 memory slice stranded.
		{"NVIDIA H100 80GB HBM3", []string{"2g.20gb", "2g.20gb", "1g.10gb", "1g.10gb", "1g.10gb"}, 0, 0},
		// 4g.40gb leaves 3 compute and 4 memory slices: a 3g.40gb uses them all.
		{"NVIDIA H100 80GB HBM3", []string{"4g.40gb"}, 3, 4},
		// 7× 1g.10gb is the profile's maximum; the 8th memory slice is stranded.
		{"NVIDIA A100-SXM4-80GB", []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, 0, 0},
		// 4× 1g.20gb (the maximum) use 4 compute and all 8 memory slices.
		{"NVIDIA H100 80GB HBM3", []string{"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb"}, 0, 0},
		// 3× 2g.20gb (the maximum) leave 1 compute and 2 memory: a 1g.20gb
		// uses both memory slices; the compute and memory maxima agree here.
		{"NVIDIA H100 80GB HBM3", []string{"2g.20gb", "2g.20gb", "2g.20gb"}, 1, 2},
		// 3× 1g.20gb leave 4 compute but 2 memory slices: a 2g.20gb uses 2
		// compute slices; the other 2 are stranded.
		{"NVIDIA H100 80GB HBM3", []string{"1g.20gb", "1g.20gb", "1g.20gb"}, 2, 2},
		// An empty GPU: everything.
		{"NVIDIA H200", nil, 7, 8},
	}
	for _, tt := range tests {
		m, ok := ForModel(tt.model)
		if !ok {
			t.Fatalf("no table for %s", tt.model)
		}
		c, mem, err := m.Hostable(tt.layout)
		if err != nil || c != tt.compute || mem != tt.memory {
			t.Errorf("%s %v: Hostable = %d, %d, %v; want %d compute, %d memory", m.Name, tt.layout, c, mem, err, tt.compute, tt.memory)
		}
	}
}

func TestHostableBadLayout(t *testing.T) {
	m, _ := ForModel("NVIDIA H100 80GB HBM3")
	if _, _, err := m.Hostable([]string{"7g.80gb", "1g.10gb"}); err == nil {
		t.Error("Hostable accepted a layout that does not fit")
	}
	if _, _, err := m.Hostable([]string{"9g.90gb"}); err == nil {
		t.Error("Hostable accepted an unknown profile")
	}
}
