package sim

import "strings"

// modelSpec is what the simulator needs to know of a GPU model.
type modelSpec struct {
	memoryMiB   int     // framebuffer, MiB
	reservedMiB int     // framebuffer the driver keeps, MiB
	tdpW, idleW float64 // power limit and power at rest, W
	smMaxMHz    float64 // SM clock under load
	smIdleMHz   float64 // SM clock at rest
	memMHz      float64 // memory clock
}

// specFor returns the simulator's figures for a product name, first match wins.
func specFor(model string) (modelSpec, bool) {
	n := strings.ToUpper(model)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if !strings.Contains(n, s) {
				return false
			}
		}
		return true
	}
	switch {
	case has("GH200"):
		return modelSpec{}, false
	case has("H200"):
		return modelSpec{memoryMiB: 143771, reservedMiB: 620, tdpW: 700, idleW: 85, smMaxMHz: 1980, smIdleMHz: 345, memMHz: 3201}, true
	case has("H100", "PCIE"):
		return modelSpec{memoryMiB: 81559, reservedMiB: 565, tdpW: 350, idleW: 48, smMaxMHz: 1755, smIdleMHz: 345, memMHz: 1593}, true
	case has("H100", "80GB"):
		return modelSpec{memoryMiB: 81559, reservedMiB: 565, tdpW: 700, idleW: 72, smMaxMHz: 1980, smIdleMHz: 345, memMHz: 2619}, true
	case has("A100", "80GB", "PCIE"):
		return modelSpec{memoryMiB: 81920, reservedMiB: 593, tdpW: 300, idleW: 44, smMaxMHz: 1410, smIdleMHz: 210, memMHz: 1512}, true
	case has("A100", "80GB"):
		return modelSpec{memoryMiB: 81920, reservedMiB: 593, tdpW: 400, idleW: 58, smMaxMHz: 1410, smIdleMHz: 210, memMHz: 1593}, true
	case has("A100", "40GB", "PCIE"):
		return modelSpec{memoryMiB: 40960, reservedMiB: 424, tdpW: 250, idleW: 35, smMaxMHz: 1410, smIdleMHz: 210, memMHz: 1215}, true
	case has("A100", "40GB"):
		return modelSpec{memoryMiB: 40960, reservedMiB: 424, tdpW: 400, idleW: 52, smMaxMHz: 1410, smIdleMHz: 210, memMHz: 1215}, true
	case has("L40S"):
		return modelSpec{memoryMiB: 46068, reservedMiB: 470, tdpW: 350, idleW: 34, smMaxMHz: 2520, smIdleMHz: 210, memMHz: 9001}, true
	case n == "NVIDIA L4":
		return modelSpec{memoryMiB: 23034, reservedMiB: 310, tdpW: 72, idleW: 16, smMaxMHz: 2040, smIdleMHz: 210, memMHz: 6251}, true
	case has("T4"):
		return modelSpec{memoryMiB: 15360, reservedMiB: 255, tdpW: 70, idleW: 10, smMaxMHz: 1590, smIdleMHz: 300, memMHz: 5000}, true
	}
	return modelSpec{}, false
}

// specOf applies a group's overrides to its model's figures. It reports false when
// the model is unknown and the group does not give memory and TDP.
func specOf(g *GPUGroup) (modelSpec, bool) {
	s, ok := specFor(g.Model)
	if !ok {
		if g.MemoryMiB <= 0 || g.TDPWatts <= 0 {
			return modelSpec{}, false
		}
		s = modelSpec{smMaxMHz: 1500, smIdleMHz: 210, memMHz: 1500}
	}
	if g.MemoryMiB > 0 {
		s.memoryMiB = g.MemoryMiB
		s.reservedMiB = g.MemoryMiB / 128
	}
	if g.TDPWatts > 0 {
		s.tdpW = g.TDPWatts
		if s.idleW == 0 || s.idleW >= s.tdpW {
			s.idleW = g.TDPWatts / 10
		}
	}
	if g.IdleWatts > 0 {
		s.idleW = g.IdleWatts
	}
	return s, true
}
