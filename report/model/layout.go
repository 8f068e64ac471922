package model

import (
	"maps"
	"slices"
)

// EndLayout is what the ledger says of a GPU's MIG layout as the range ends
// for it: the instances with ledger data in its last step bucket with data.
type EndLayout struct {
	// Last is the GPU's last step bucket with ledger data, over all its
	// devices and holders; -1: none.
	Last int
	// Instances are its MIG instances with data in bucket Last, one per
	// GPU_I_ID, in CompareGPUIndex order of the id; empty without MIG.
	Instances []DeviceKey
	// MixedGI is a GPU_I_ID that had two or more profiles in bucket Last —
	// the GPU was repartitioned within it, so its layout at the end is not
	// known — and MixedProfiles those profiles; empty when there is none.
	MixedGI       string
	MixedProfiles []string
}

// Profiles returns the profiles of the instances ks, in their order.
func Profiles(ks []DeviceKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Profile
	}
	return out
}

// EndLayouts returns the layout at the end of every GPU of the ledger. An
// instance id seen with several profiles in the GPU's last bucket is one
// instance of the profile that sorts last, and the GPU's MixedGI says so
// (the last such id, when there are several).
func (d *Dataset) EndLayouts() map[GPUKey]*EndLayout {
	out := map[GPUKey]*EndLayout{}
	keys := SortedKeys(d.Ledger)
	for _, k := range keys {
		l := out[k.Dev.GPU()]
		if l == nil {
			l = &EndLayout{Last: -1}
			out[k.Dev.GPU()] = l
		}
		l.Last = max(l.Last, d.Ledger[k].Last)
	}
	gis := map[GPUKey]map[string][]string{} // GPU → GPU_I_ID → profiles in its last bucket
	for _, k := range keys {
		e, gpu := d.Ledger[k], k.Dev.GPU()
		if k.Dev.GI == "" || e.Last < 0 || e.Last != out[gpu].Last {
			continue
		}
		if gis[gpu] == nil {
			gis[gpu] = map[string][]string{}
		}
		if ps := gis[gpu][k.Dev.GI]; !slices.Contains(ps, k.Dev.Profile) {
			gis[gpu][k.Dev.GI] = append(ps, k.Dev.Profile)
		}
	}
	for gpu, byGI := range gis {
		l := out[gpu]
		for _, gi := range slices.SortedFunc(maps.Keys(byGI), CompareGPUIndex) {
			ps := byGI[gi]
			if len(ps) > 1 {
				l.MixedGI, l.MixedProfiles = gi, ps
			}
			l.Instances = append(l.Instances, DeviceKey{Cluster: gpu.Cluster, UUID: gpu.UUID, GI: gi, Profile: ps[len(ps)-1]})
		}
	}
	return out
}
