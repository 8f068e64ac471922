package collector

import "github.com/gputally/gputally/cost"

// listedDevice is a device as an inventory listed it: its GPU, and its MIG
// instance (nil for the GPU itself). A MIG instance that a reconfiguration
// removed keeps its ledger series for the retention window, and they keep the
// identity labels it had.
type listedDevice struct {
	gpu      GPU
	instance *MIGInstance
}

// listedDevices returns every device a ledger series may belong to: those of
// inv, and those of earlier (the result for the inventory before) that left
// but still have a series in totals, the ledger's latest. The sampler calls
// it at each inventory read, so the devices that left are known however
// many inventories pass between two scrapes.
func listedDevices(inv Inventory, earlier map[string]listedDevice, totals []cost.Total) map[string]listedDevice {
	out := make(map[string]listedDevice, len(earlier))
	for _, t := range totals {
		if d, ok := earlier[t.Device]; ok {
			out[t.Device] = d
		}
	}
	for _, g := range inv.GPUs {
		out[g.UUID] = listedDevice{gpu: g}
		for j := range g.Instances {
			out[g.Instances[j].UUID] = listedDevice{gpu: g, instance: &g.Instances[j]}
		}
	}
	return out
}
