package mig

import (
	"strconv"
	"strings"
)

// ParseName reads what a GPU instance profile's name says: "3g.40gb" is 3
// compute slices and 40 GB of framebuffer, "1g.10gb+me" the same with the
// suffix "me". ok is false for a name not of that form.
func ParseName(name string) (compute, memoryGB int, suffix string, ok bool) {
	base, suffix, _ := strings.Cut(name, "+")
	c, m, found := strings.Cut(base, "g.")
	if !found || !strings.HasSuffix(m, "gb") {
		return 0, 0, "", false
	}
	compute, err1 := strconv.Atoi(c)
	memoryGB, err2 := strconv.Atoi(strings.TrimSuffix(m, "gb"))
	if err1 != nil || err2 != nil || compute <= 0 || memoryGB <= 0 {
		return 0, 0, "", false
	}
	return compute, memoryGB, suffix, true
}

// Resolve returns which of the profiles offered (the device plugin's, as a
// node's capacity names them: "7g.80gb" for nvidia.com/mig-7g.80gb) an
// exporter's GPU_I_PROFILE spelled names, on a GPU of modelName. A spelling
// names itself when offered. Otherwise exporters round an instance's
// usable memory down — 7g.79gb for 7g.80gb on an A100 80GB (gpu-operator
// #687), 1g.11gb for 1g.12gb on an H100 NVL (dcgm-exporter #544) — so it
// names the offered profile of the same compute slices and suffix whose
// memory is at or above its own by less than a memory slice's worth (an
// eighth of that memory, at least 1 GB), the nearest (two profiles of one
// compute size and suffix differ in memory); where the model's MIG table is
// known, only its profiles count. ok is false when no profile fits.
func Resolve(modelName, spelled string, offered []string) (profile string, ok bool) {
	for _, o := range offered {
		if o == spelled {
			return o, true
		}
	}
	compute, memory, suffix, ok := ParseName(spelled)
	if !ok {
		return "", false
	}
	table, tabled := ForModel(modelName)
	best, gap := "", -1
	for _, o := range offered {
		c, m, s, ok := ParseName(o)
		if !ok || c != compute || s != suffix || m < memory || m-memory > max(1, m/8) {
			continue
		}
		if tabled {
			if _, ok := table.Profile(o); !ok {
				continue
			}
		}
		if d := m - memory; gap < 0 || d < gap {
			best, gap = o, d
		}
	}
	return best, best != ""
}
