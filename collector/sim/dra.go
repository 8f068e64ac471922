package sim

import (
	"fmt"
	"strings"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
	"github.com/gputally/gputally/collector"
)

// resourceDRA is the resource of scenario pods that hold their device through a
// DRA claim of NVIDIA's DRA driver rather than the device plugin.
const resourceDRA = attribution.DefaultDRADriver

// draDeviceName is the name NVIDIA's DRA driver gives a device in the node's
// ResourceSlices: gpu-<minor> for a whole GPU, and for a MIG device the dynamic
// MIG form gpu-<parentMinor>-mig-<profile>-<giID>-<placementStart>.
func draDeviceName(g collector.GPU, instance *int) string {
	if instance == nil {
		return fmt.Sprintf("gpu-%d", g.Minor)
	}
	in := g.Instances[*instance]
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", g.Minor, strings.ReplaceAll(in.Profile, ".", ""), in.GPUInstanceID, in.PlacementStart)
}

// draGPUs returns the GPUs that some scenario pod holds through DRA: the DRA
// driver, not the device plugin, hands them out.
func draGPUs(sc *Scenario) map[int]bool {
	gpus := map[int]bool{}
	for _, p := range sc.Pods {
		if p.Resource == resourceDRA {
			gpus[p.Device.GPU] = true
		}
	}
	return gpus
}

// checkClaim validates the claim of pod: required for a DRA pod, and only for one.
func (sc *Scenario) checkClaim(p string, pod *Pod) error {
	switch {
	case pod.Resource != resourceDRA && pod.Claim != "":
		return sc.errAt(p+".claim", "only for %s", resourceDRA)
	case pod.Resource != resourceDRA:
		return nil
	case pod.Claim == "":
		return sc.errAt(p+".claim", "required for %s", resourceDRA)
	case !dnsLabel.MatchString(pod.Claim) || len(pod.Claim) > 63:
		return sc.errAt(p+".claim", "%q is not a valid claim name", pod.Claim)
	}
	return nil
}

// checkDRADevice validates the device of a DRA entry: a whole GPU (not
// time-sliced) or a MIG instance. Several claims may share a whole GPU.
func (sc *Scenario) checkDRADevice(p string, d Device, g gpuFacts, key devKey) (devKey, error) {
	if d.Replica != nil {
		return key, sc.errAt(p+".device.replica", "%s shares a GPU by claims, not replicas", resourceDRA)
	}
	if sc.GPUs[g.group].Replicas > 0 {
		return key, sc.errAt(p+".resource", "GPU %d is time-sliced by the device plugin", d.GPU)
	}
	switch {
	case g.mig == nil && d.Instance != nil:
		return key, sc.errAt(p+".device.instance", "GPU %d is not in MIG mode", d.GPU)
	case g.mig != nil && d.Instance == nil:
		return key, sc.errAt(p+".device.instance", "GPU %d is in MIG mode: give an instance", d.GPU)
	case d.Instance != nil && (*d.Instance < 0 || *d.Instance >= len(g.layout)):
		return key, sc.errAt(p+".device.instance", "GPU %d has %d MIG instances, got instance %d", d.GPU, len(g.layout), *d.Instance)
	case d.Instance != nil:
		key.instance = *d.Instance
	}
	return key, nil
}

// ResourceSlices returns the ResourceSlice (resource.k8s.io/v1) that NVIDIA's DRA
// driver would publish for the GPUs of the node that DRA pods use: whole GPUs with
// their UUID, MIG devices in the dynamic MIG form, without a UUID, with parent
// UUID and profile; their placement start is the last number of their name (the
// simulated node publishes no shared counters). Nil when no pod uses DRA.
func (b *Backend) ResourceSlices() []attribution.ResourceSlice {
	if len(b.draGPUs) == 0 {
		return nil
	}
	attr := func(s string) attribution.DeviceAttribute { return attribution.DeviceAttribute{String: &s} }
	slice := attribution.ResourceSlice{
		APIVersion: "resource.k8s.io/v1",
		Kind:       "ResourceSlice",
		Metadata:   attribution.ResourceSliceMeta{Name: b.hostname + "-" + strings.ReplaceAll(resourceDRA, ".", "-")},
		Spec: attribution.ResourceSliceSpec{
			Driver:   resourceDRA,
			Pool:     attribution.ResourcePool{Name: b.hostname, Generation: 1, ResourceSliceCount: 1},
			NodeName: b.hostname,
		},
	}
	for _, g := range b.inv.GPUs {
		if !b.draGPUs[g.Index] {
			continue
		}
		if !g.MIGEnabled {
			slice.Spec.Devices = append(slice.Spec.Devices, attribution.DeviceSpec{
				Name: draDeviceName(g, nil),
				DeviceFields: attribution.DeviceFields{Attributes: map[string]attribution.DeviceAttribute{
					"type": attr("gpu"), "uuid": attr(g.UUID), "productName": attr(g.Model),
				}},
			})
			continue
		}
		for j, in := range g.Instances {
			slice.Spec.Devices = append(slice.Spec.Devices, attribution.DeviceSpec{
				Name: draDeviceName(g, &j),
				DeviceFields: attribution.DeviceFields{Attributes: map[string]attribution.DeviceAttribute{
					"type": attr("mig"), "parentUUID": attr(g.UUID), "profile": attr(in.Profile), "productName": attr(g.Model),
				}},
			})
		}
	}
	return []attribution.ResourceSlice{slice}
}

// draClaimsPerDevice counts the distinct claims holding each DRA device.
func draClaimsPerDevice(entries []podEntry) map[string]int {
	seen := map[[3]string]bool{}
	n := map[string]int{}
	for _, e := range entries {
		k := [3]string{e.draDevice, e.namespace, e.claim}
		if e.draDevice == "" || seen[k] {
			continue
		}
		seen[k] = true
		n[e.draDevice]++
	}
	return n
}

// kubeletClaim is a DRA allocation as the kubelet reports it in dynamic_resources.
func kubeletClaim(a Allocation) kubeletsim.Claim {
	c := kubeletsim.Claim{Name: a.Claim, Namespace: a.Namespace}
	for _, d := range a.DRADevices {
		c.Devices = append(c.Devices, kubeletsim.ClaimDevice{Driver: resourceDRA, Pool: a.Pool, Device: d, ShareID: a.ShareID})
	}
	return c
}
