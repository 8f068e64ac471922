package kubeletsim

import podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

// Claim is one ResourceClaim of a container and the DRA devices allocated to it,
// served as a DynamicResource of the container.
type Claim struct {
	Name      string
	Namespace string
	Devices   []ClaimDevice
}

// ClaimDevice is one allocated device of a claim: a ClaimResource.
type ClaimDevice struct {
	Driver string // e.g. "gpu.nvidia.com"
	Pool   string // the NVIDIA driver's pool is the node name
	Device string // e.g. "gpu-0"
	// ShareID is set when the driver shares the device among claims; "" omits it.
	ShareID string
}

func toDynamicResources(claims []Claim) []*podresourcesv1.DynamicResource {
	var out []*podresourcesv1.DynamicResource
	for _, c := range claims {
		dr := &podresourcesv1.DynamicResource{ClaimName: c.Name, ClaimNamespace: c.Namespace}
		for _, d := range c.Devices {
			cr := &podresourcesv1.ClaimResource{DriverName: d.Driver, PoolName: d.Pool, DeviceName: d.Device}
			if d.ShareID != "" {
				cr.ShareId = &d.ShareID
			}
			dr.ClaimResources = append(dr.ClaimResources, cr)
		}
		out = append(out, dr)
	}
	return out
}
