package attribution

import (
	"context"
	"io"
	"log/slog"
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

// fuzzSlices are the fuzzed node's ResourceSlices: GPU 0 whole, GPU 1's MIG
// instance as a static device (with its UUID) and as a dynamic one (parent,
// profile and placement), and a GPU of another node.
var fuzzSlices = []ResourceSlice{{Spec: ResourceSliceSpec{Driver: DefaultDRADriver, Pool: ResourcePool{Name: "node"}, Devices: []DeviceSpec{
	{Name: "gpu-0", DeviceFields: DeviceFields{Attributes: map[string]DeviceAttribute{"uuid": {String: &fuzzDevices[0].UUID}}}},
	{Name: "gpu-1-mig-0", DeviceFields: DeviceFields{Attributes: map[string]DeviceAttribute{"uuid": {String: &fuzzDevices[2].UUID}}}},
	{Name: "gpu-1-mig-1g10gb-19-0", DeviceFields: DeviceFields{Attributes: map[string]DeviceAttribute{
		"parentUUID": {String: &fuzzDevices[1].UUID}, "profile": {String: proto.String("1g.10gb")}}}},
	{Name: "gpu-9", DeviceFields: DeviceFields{Attributes: map[string]DeviceAttribute{"uuid": {String: proto.String("GPU-99999999-aaaa-bbbb-cccc-999999999999")}}}},
}}}}

// fuzzLayout is the MIG layout of fuzzDevices.
var fuzzLayout = []MIGSlot{{UUID: fuzzDevices[2].UUID, ParentUUID: fuzzDevices[1].UUID, Profile: "1g.10gb", PlacementStart: 0}}

// FuzzKubeletAnswer decodes arbitrary bytes as the kubelet's List and
// GetAllocatableResources answers, as the gRPC client does, and builds the
// attribution tables from whatever decodes, device-plugin holders then DRA
// holders (mapped through fuzzSlices). Bytes that are not protobuf are a
// failed call (the client keeps no data from it and reports attribution down);
// every answer that decodes, however absurd (duplicate, unknown or malformed
// IDs, nil entries, huge replica numbers), must give consistent tables: no
// panic, only devices of this node, and on each device shares that sum to the
// replicas held over the replicas offered (free replicas stay unpaid), never
// above 1; DRA holders of a device share all of it, and half of it next to
// device-plugin holders, whose shares are then halved too.
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
		{Namespace: "dra", Name: "p", Containers: []*podresourcesv1.ContainerResources{{Name: "c", DynamicResources: []*podresourcesv1.DynamicResource{
			{ClaimName: "x", ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-0", ShareId: proto.String("s1")},
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-0", ShareId: proto.String("s1")},
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-1-mig-1g10gb-19-0"},
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-9"},
				nil,
			}},
			{ClaimName: "y", ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-0", ShareId: proto.String("s2")},
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-1-mig-0"},
				{DriverName: "other.example.com", PoolName: "node", DeviceName: "gpu-0"},
			}},
			nil,
		}}, {Name: "d", DynamicResources: []*podresourcesv1.DynamicResource{
			{ClaimName: "x", ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: DefaultDRADriver, PoolName: "node", DeviceName: "gpu-0", ShareId: proto.String("s1")},
			}},
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
	sliceSource := NewStaticSlices(nil, fuzzSlices)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
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
		pluginSum := make(map[string]float64) // device UUID → what its device-plugin shares sum to
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
			pluginSum[uuid] = total
		}

		m := newDRAMapper(nil, sliceSource, nil, discard)
		m.setLayout(fuzzLayout)
		m.addHolders(context.Background(), &tb, &list, &res)
		for uuid, hs := range tb.holders {
			if !known[uuid] {
				t.Fatalf("holders for %q, not a device of this node", uuid)
			}
			total, dra := 0.0, false
			for _, h := range hs {
				if h.Replicas < 1 || !(h.Share > 0 && h.Share <= 1) || (h.Sharing == DRA && h.Replicas != 1) {
					t.Fatalf("%s: holder %+v", uuid, h)
				}
				total += h.Share
				dra = dra || h.Sharing == DRA
			}
			plugin, hasPlugin := pluginSum[uuid]
			var want float64
			switch {
			case !dra:
				want = plugin
			case !hasPlugin:
				want = 1
			default:
				want = (plugin + 1) / 2
			}
			if math.Abs(total-want) > 1e-9 || total > 1+1e-9 {
				t.Fatalf("%s: with DRA holders shares sum to %v, want %v (device plugin's %v): %+v", uuid, total, want, plugin, hs)
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
