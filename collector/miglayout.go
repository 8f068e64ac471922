package collector

import "github.com/gputally/gputally/attribution"

// migLayoutTable is implemented by holder sources that map DRA devices without
// a UUID (dynamic MIG) through the inventory (*attribution.Client does).
type migLayoutTable interface {
	SetMIGLayout([]attribution.MIGSlot)
}

// MIGLayout lists the MIG instances of inv with their profiles and placements,
// for mapping dynamic MIG devices of DRA claims.
func MIGLayout(inv Inventory) []attribution.MIGSlot {
	var slots []attribution.MIGSlot
	for _, g := range inv.GPUs {
		for _, in := range g.Instances {
			start := -1
			if in.PlacementSize > 0 {
				start = in.PlacementStart
			}
			slots = append(slots, attribution.MIGSlot{UUID: in.UUID, ParentUUID: g.UUID, Profile: in.Profile, PlacementStart: start})
		}
	}
	return slots
}
