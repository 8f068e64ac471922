package advice

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gputally/gputally/mig"
	"github.com/gputally/gputally/report/model"
)

// The demand that waits counts devices of a resource (a whole GPU, a MIG
// instance, a time-sliced replica each 1), the ledger GPU-hours (a MIG
// instance or a replica its part of a GPU). devicePart converts: the EUR of
// a device-hour of a resource is the GPU's EUR per hour × its part.

// devicePart returns the part of a GPU one device of extended resource r is
// in d (one cluster's data), and whether it is known:
//   - nvidia.com/gpu: 1;
//   - nvidia.com/mig-<profile>: the profile's weight by the price book's
//     mig_weight, from the MIG table of the model of a GPU in d that holds
//     an instance of it, else of any GPU model in d whose table has it;
//   - nvidia.com/gpu.shared: 1 ÷ the replicas a GPU offers — what the nodes
//     of d offer at the range's end (kube_node_status_allocatable) over the
//     GPUs the ledger has of those nodes.
func (a *adviser) devicePart(d *model.Dataset, r string) (float64, bool) {
	switch {
	case r == "nvidia.com/gpu":
		return 1, true
	case strings.HasPrefix(r, "nvidia.com/mig-"):
		return a.migPart(d, strings.TrimPrefix(r, "nvidia.com/mig-"))
	case r == "nvidia.com/gpu.shared":
		return replicaPart(d, r)
	}
	return 0, false
}

// migPart is the weight of an instance of MIG profile p (devicePart).
func (a *adviser) migPart(d *model.Dataset, p string) (float64, bool) {
	var found *mig.Profile
	for _, k := range slices.SortedFunc(maps.Keys(d.Ledger), model.CompareHoldingKeys) {
		e := d.Ledger[k]
		m, ok := mig.ForModel(e.Model)
		if !ok {
			continue
		}
		if pr, ok := m.Profile(p); ok && (found == nil || e.Profile == p) {
			found = &pr
			if e.Profile == p {
				break
			}
		}
	}
	if found == nil {
		return 0, false
	}
	return a.migWeight.Weight(found.ComputeSlices, found.MemorySlices), true
}

// replicaPart is 1 ÷ the replicas of resource r a GPU offers (devicePart).
func replicaPart(d *model.Dataset, r string) (float64, bool) {
	if d.Waiting == nil {
		return 0, false
	}
	gpus := map[model.NodeKey]map[model.GPUKey]bool{}
	for k, e := range d.Ledger {
		n := model.NodeKey{Cluster: k.Dev.Cluster, Node: e.Host}
		if gpus[n] == nil {
			gpus[n] = map[model.GPUKey]bool{}
		}
		gpus[n][k.Dev.GPU()] = true
	}
	replicas, of := 0.0, 0
	for k, levels := range d.Waiting.Capacity {
		v := model.LevelAt(levels, d.End)
		if n := len(gpus[model.NodeKey{Cluster: k.Cluster, Node: k.Node}]); k.Resource == r && n > 0 && !math.IsNaN(v) && v > 0 {
			replicas += v
			of += n
		}
	}
	if of == 0 {
		return 0, false
	}
	return float64(of) / replicas, true
}
