package vgpu

import (
	"strings"
	"testing"
)

// TestParse: the published guest names (testdata/real: GRID A100-10C and
// -40C) and the other forms; physical GPUs' names are no vGPU; an unknown
// board or an impossible size is an error, never a whole GPU.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		vgpu        bool
		physical    string
		part, whole int
		mig         bool
		err         string
	}{
		{name: "GRID A100-10C", vgpu: true, physical: "NVIDIA A100 40GB", part: 10, whole: 40},
		{name: "GRID A100-40C", vgpu: true, physical: "NVIDIA A100 40GB", part: 40, whole: 40},
		{name: "NVIDIA A100D-20C", vgpu: true, physical: "NVIDIA A100 80GB", part: 20, whole: 80},
		{name: "GRID A100-3-20C", vgpu: true, physical: "NVIDIA A100 40GB", part: 3, whole: 7, mig: true},
		{name: "NVIDIA A10-24Q", vgpu: true, err: "board A10 is none"},
		{name: "GRID A100-80C", vgpu: true, err: "80 of 40 is no part"},
		{name: "NVIDIA A100-SXM4-40GB"},
		{name: "NVIDIA A100 80GB PCIe"},
		{name: "NVIDIA H100 80GB HBM3"},
		{name: "Tesla T4"},
	} {
		g, vgpu, err := Parse(tc.name)
		switch {
		case vgpu != tc.vgpu:
			t.Errorf("%s: vGPU %v, want %v", tc.name, vgpu, tc.vgpu)
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("%s: error %v, want one naming it and saying %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case g.Physical != tc.physical || g.Part != tc.part || g.Whole != tc.whole || g.MIGBacked != tc.mig || tc.vgpu && g.Name != tc.name:
			t.Errorf("%s: %+v, want %s, %d/%d, MIG-backed %v", tc.name, g, tc.physical, tc.part, tc.whole, tc.mig)
		}
	}
	if g, _, _ := Parse("GRID A100-10C"); g.Fraction() != 0.25 {
		t.Errorf("GRID A100-10C is %g of an A100 40GB, want 0.25", g.Fraction())
	}
}
