package dcgmnames

import (
	"math"
	"testing"
)

// TestUnitFactorsByHand converts one reading of each unit change, worked by
// hand, with FromOld (and Scale). The readings are the H200's of
// collector/nvml/testdata/h200/metrics-busy.prom where it has the family.
func TestUnitFactorsByHand(t *testing.T) {
	for _, c := range []struct {
		f        Family
		old, new float64
		why      string
	}{
		{SMClock, 1455, 1_455_000_000, "1455 MHz × 10^6 Hz/MHz"},
		{MemClock, 3201, 3_201_000_000, "3201 MHz × 10^6 Hz/MHz"},
		{Energy, 3.748873e7, 37_488.73, "37,488,730 mJ ÷ 1000 mJ/J"},
		{GPUUtil, 100, 1, "100 % ÷ 100"},
		{MemCopyUtil, 23, 0.23, "23 % ÷ 100"},
		{FBUsed, 1010, 1_059_061_760, "1010 MiB × 1,048,576 B/MiB"},
		{FBFree, 142145, 149_049_835_520, "142,145 MiB × 1,048,576 = 142,145,000,000 + 142,145 × 48,576"},
		{FBReserved, 615, 644_874_240, "615 MiB × 1,048,576"},
		{FBCapacity, 143771, 150_754_820_096, "143,771 MiB (an H200) × 1,048,576"},
		{PowerViolation, 46_174_166_976_000, 46_174.166976, "46,174,166,976,000 ns ÷ 10^9 ns/s"},
		{ThermalViolation, 2_500_000_000, 2.5, "2.5e9 ns ÷ 10^9"},
		{Families[len(Families)-9], 2, 2_048_000, "NVLink 2 MB/s: 2 × 1000 KiB/s × 1024 B/KiB"},
		{Power, 691.842, 691.842, "W stays W"},
		{GREngineActive, 0.9982915483240103, 0.9982915483240103, "a ratio stays a ratio"},
	} {
		if got := c.old * c.f.Scale(Current); math.Abs(got-c.new) > 1e-9*math.Abs(c.new) {
			t.Errorf("%s %g → %s: got %.12g, want %.12g (%s)", c.f.Old, c.old, c.f.New, got, c.new, c.why)
		}
		if c.f.Scale(Legacy) != 1 {
			t.Errorf("%s: Scale(Legacy) = %g", c.f.Old, c.f.Scale(Legacy))
		}
	}
	if f := Families[len(Families)-9]; f.Old != "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" {
		t.Fatalf("the NVLink row moved: %s", f.Old)
	}
}
