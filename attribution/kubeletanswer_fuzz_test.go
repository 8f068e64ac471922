package attribution

import (
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// The device table of the fuzzed node: two GPUs, the second in MIG mode.
var fuzzDevices = []Device{
	{UUID: "GPU-00000000-aaaa-bbbb-cccc-000000000000", Minor: 0, GPUInstanceID: -1, ComputeInstanceID: -1},
	{UUID: "GPU-11111111-aaaa-bbbb-cccc-111111111111", Minor: 1, GPUInstanceID: -1, ComputeInstanceID: -1},
	{UUID: "MIG-0a0a0a0a-aaaa-bbbb-cccc-0a0a0a0a0a0a", ParentUUID: "GPU-11111111-aaaa-bbbb-cccc-111111111111", Minor: 1, GPUInstanceID: 1, ComputeInstanceID: 0},
}

// FuzzKubeletAnswer decodes arbitrary bytes as the kubelet's List and
// GetAllocatableResources answers, as the gRPC client does, and builds the
// attribution tables from whatever decodes. Bytes that are not protobuf are a
// failed call (the client keeps no data from it and reports attribution down);
// every answer that decodes, however absurd (duplicate, unknown or malformed
// IDs, nil entries, huge replica numbers), must give consistent tables: no
// panic, only devices of this node, and on each device shares that sum to the
// replicas held over the replicas offered (free replicas stay unpaid), never
// above 1.
func FuzzKubeletAnswer(f *testing.F) {
	gpu0, gpu1, mig := fuzzDevices[0].UUID, fuzzDevices[1].UUID, fuzzDevices[2].UUID
	list := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		{Namespace: "ml", Name: "train", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu0, gpu0, "GPU-ffffffff-aaaa-bbbb-cccc-ffffffffffff"}},
		}}}},
		{Namespace: "dev", Name: "nb", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{gpu0 + "::3", gpu0 + "::99999999999", "nvidia0/vgpu2"}},
			{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{mig, "MIG-GPU-" + gpu1[4:] + "/1/0", "nvidia1/gi1"}},
		}}}},
		nil,
	}}
	alloc := &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
		{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu0, gpu1, gpu1, "", "GPU-"}}, nil,
	}}
	// Two replicas of gpu1 offered, one held: its one share is 1/2.
	halfList := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		{Namespace: "dev", Name: "nb", Containers: []*podresourcesv1.ContainerResources{{Name: "c", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{gpu1 + "::0"}},
		}}}},
	}}
	halfAlloc := &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
		{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{gpu1 + "::0", gpu1 + "::1"}},
	}}
	for _, seed := range [][2]proto.Message{
		{list, alloc},
		{halfList, halfAlloc},
		{&podresourcesv1.ListPodResourcesResponse{}, &podresourcesv1.AllocatableResourcesResponse{}},
	} {
		a, err := proto.Marshal(seed[0])
		if err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(seed[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a, b)
	}
	// testdata/fuzz/FuzzKubeletAnswer holds a length far beyond the message.
	known := map[string]bool{}
	for _, d := range fuzzDevices {
		known[d.UUID] = true
	}
	f.Fuzz(func(t *testing.T, listBytes, allocBytes []byte) {
		var list podresourcesv1.ListPodResourcesResponse
		var alloc podresourcesv1.AllocatableResourcesResponse
		if proto.Unmarshal(listBytes, &list) != nil || proto.Unmarshal(allocBytes, &alloc) != nil {
			return // the gRPC call fails: covered by the client's failure path
		}
		var res resolver
		res.setDevices(fuzzDevices)
		tb := buildTables(&list, &alloc, &res, newResourceFilter([]string{"example.com/gpu"}, nil))
		ids := 0
		for _, p := range list.GetPodResources() {
			for _, c := range p.GetContainers() {
				for _, d := range c.GetDevices() {
					ids += len(d.GetDeviceIds())
				}
			}
		}
		for _, d := range alloc.GetDevices() {
			ids += len(d.GetDeviceIds())
		}
		if len(tb.unknown) > ids {
			t.Fatalf("%d unknown IDs out of %d", len(tb.unknown), ids)
		}
		for uuid, hs := range tb.holders {
			if !known[uuid] {
				t.Fatalf("holders for %q, not a device of this node", uuid)
			}
			total, held := 0.0, 0
			for _, h := range hs {
				if h.Replicas < 1 || !(h.Share > 0 && h.Share <= 1) {
					t.Fatalf("%s: holder %+v", uuid, h)
				}
				total += h.Share
				held += h.Replicas
			}
			want := float64(held) / float64(max(tb.replicas[uuid], held))
			if math.Abs(total-want) > 1e-9 || total > 1+1e-9 {
				t.Fatalf("%s: shares sum to %v, want %d held / max(%d offered, %d held) = %v: %+v",
					uuid, total, held, tb.replicas[uuid], held, want, hs)
			}
			if !slices.IsSortedFunc(hs, compareHolders) {
				t.Fatalf("%s: holders not sorted: %+v", uuid, hs)
			}
		}
		for resource, uuids := range tb.allocatable {
			if !slices.IsSorted(uuids) || len(slices.Compact(slices.Clone(uuids))) != len(uuids) {
				t.Fatalf("%s: allocatable %v not sorted and unique", resource, uuids)
			}
			for _, u := range uuids {
				if !known[u] {
					t.Fatalf("%s: allocatable %q, not a device of this node", resource, u)
				}
			}
		}
	})
}
