package dcgmexporter

import (
	"strings"

	"github.com/gputally/gputally/mig"
)

// A MIG instance's profile (docs/report.md, "MIG profiles by what they
// are"). dcgm-exporter writes GPU_I_PROFILE as DCGM names the instance,
// which can differ from the device plugin's resource: 7g.79gb for
// nvidia.com/mig-7g.80gb on an A100 80GB (gpu-operator #687), 1g.11gb for
// nvidia.com/mig-1g.12gb on an H100 NVL (dcgm-exporter #544). An instance
// is the profile of the node's capacity (else its model's MIG table) with
// the same compute slices whose memory its spelling rounds down
// (mig.Resolve); the rules, the split of the GPU's cost and the dataset
// use that profile, and a warning names both spellings.

// resolveProfiles sets the profile of every MIG instance of the node's
// GPUs (uuids): what the device plugin offers it as — capacity, when known
// — or, without the node's capacity, its model's table.
func resolveProfiles(capacity map[string]float64, known bool, uuids []string, gpus map[string]*deviceReading, instances map[string][]*deviceReading) {
	var offered []string
	if known {
		offered = offeredProfiles(capacity)
	}
	for _, uuid := range uuids {
		for _, in := range instances[uuid] {
			spelled := in.id.dev.Profile
			in.profile = spelled
			names := offered
			if !known {
				if t, ok := mig.ForModel(gpus[uuid].id.model); ok {
					names = t.ProfileNames()
				}
			}
			if p, ok := mig.Resolve(gpus[uuid].id.model, spelled, names); ok {
				in.profile = p
			}
		}
	}
}

// offeredProfiles returns the MIG profiles a node's capacity offers:
// nvidia_com_mig_1g_10gb_me is 1g.10gb+me.
func offeredProfiles(capacity map[string]float64) []string {
	var out []string
	for res, n := range capacity {
		name, ok := strings.CutPrefix(res, ksmMIGPrefix)
		if !ok || n <= 0 {
			continue
		}
		parts := strings.Split(name, "_")
		if len(parts) < 2 {
			continue
		}
		p := parts[0] + "." + parts[1]
		if len(parts) > 2 {
			p += "+" + strings.Join(parts[2:], "_")
		}
		out = append(out, p)
	}
	return out
}
