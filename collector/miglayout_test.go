package collector

import (
	"slices"
	"testing"

	"github.com/gputally/gputally/attribution"
)

func TestMIGLayout(t *testing.T) {
	inv := Inventory{GPUs: []GPU{
		{UUID: "GPU-a"},
		{UUID: "GPU-b", MIGEnabled: true, Instances: []MIGInstance{
			{UUID: "MIG-b0", Profile: "3g.40gb", PlacementStart: 0, PlacementSize: 4},
			{UUID: "MIG-b1", Profile: "1g.10gb", PlacementStart: 5, PlacementSize: 1},
			{UUID: "MIG-b2", Profile: "1g.10gb"}, // placement unknown
		}},
	}}
	want := []attribution.MIGSlot{
		{UUID: "MIG-b0", ParentUUID: "GPU-b", Profile: "3g.40gb", PlacementStart: 0},
		{UUID: "MIG-b1", ParentUUID: "GPU-b", Profile: "1g.10gb", PlacementStart: 5},
		{UUID: "MIG-b2", ParentUUID: "GPU-b", Profile: "1g.10gb", PlacementStart: -1},
	}
	if got := MIGLayout(inv); !slices.Equal(got, want) {
		t.Errorf("MIGLayout = %+v, want %+v", got, want)
	}
}

// layoutHolders is a holder source that records the MIG layout it is given.
type layoutHolders struct{ layout []attribution.MIGSlot }

func (h *layoutHolders) Current() *attribution.Snapshot           { return &attribution.Snapshot{} }
func (h *layoutHolders) SetMIGLayout(slots []attribution.MIGSlot) { h.layout = slots }

// TestSamplerSetsMIGLayout: the sampler hands the inventory's MIG layout to the
// holder source when it reads the inventory, so dynamic MIG devices of DRA claims
// map to the instances that exist now.
func TestSamplerSetsMIGLayout(t *testing.T) {
	h := &layoutHolders{}
	s := NewSampler(&fakeBackend{power: 100}, SamplerOptions{Now: fixedClock(t0), Holders: h})
	if err := s.Tick(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sl := range h.layout {
		got = append(got, sl.ParentUUID+"/"+sl.UUID+"/"+sl.Profile)
	}
	if want := []string{"GPU-bbbb/MIG-1111/3g.40gb", "GPU-bbbb/MIG-2222/1g.10gb"}; !slices.Equal(got, want) {
		t.Errorf("layout %v, want %v", got, want)
	}
}
