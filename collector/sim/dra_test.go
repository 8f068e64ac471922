package sim

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// draBase: GPU 0 whole, GPU 1 time-sliced, GPU 2 in MIG mode, GPU 3 whole; GPU 0
// is shared by two DRA claims, one of them with two containers.
const draBase = `seed: 1
node: {hostname: dra-node}
gpus:
  - model: NVIDIA H100 80GB HBM3
  - model: NVIDIA H100 80GB HBM3
    replicas: 2
  - model: NVIDIA H100 80GB HBM3
    mig: [1g.10gb, 2g.20gb, 3g.40gb]
  - model: NVIDIA H100 80GB HBM3
workloads:
  - {name: dev, pattern: bursty-dev, fb_mib: 4000}
pods:
  - {namespace: lab, pod: a, container: c, resource: gpu.nvidia.com, claim: claim-a, device: {gpu: 0}, workload: dev}
  - {namespace: lab, pod: b, container: c1, resource: gpu.nvidia.com, claim: claim-b, device: {gpu: 0}, workload: dev}
  - {namespace: lab, pod: b, container: c2, resource: gpu.nvidia.com, claim: claim-b, device: {gpu: 0}, workload: dev}
  - {namespace: lab, pod: m, container: c, resource: gpu.nvidia.com, claim: claim-m, device: {gpu: 2, instance: 1}, workload: dev}
`

func TestDRAScenarioErrors(t *testing.T) {
	tests := []struct {
		name, old, new, wantField, wantMsg string
	}{
		{"DRA without claim", "claim: claim-a, ", "", "pods[0].claim", "required for gpu.nvidia.com"},
		{"bad claim name", "claim: claim-a", "claim: Claim_A", "pods[0].claim", "not a valid claim name"},
		{"claim on a device-plugin resource", "resource: gpu.nvidia.com, claim: claim-a, device: {gpu: 0}", "resource: nvidia.com/gpu, claim: claim-a, device: {gpu: 3}", "pods[0].claim", "only for gpu.nvidia.com"},
		{"DRA replica", "device: {gpu: 0}, workload: dev}\n  - {namespace: lab, pod: b, container: c1", "device: {gpu: 0, replica: 0}, workload: dev}\n  - {namespace: lab, pod: b, container: c1", "pods[0].device.replica", "claims, not replicas"},
		{"DRA on a time-sliced GPU", "claim: claim-a, device: {gpu: 0}", "claim: claim-a, device: {gpu: 1}", "pods[0].resource", "time-sliced"},
		{"DRA on a MIG GPU without instance", "device: {gpu: 2, instance: 1}", "device: {gpu: 2}", "pods[3].device.instance", "give an instance"},
		{"DRA instance out of range", "device: {gpu: 2, instance: 1}", "device: {gpu: 2, instance: 3}", "pods[3].device.instance", "3 MIG instances"},
		{"two DRA pods on one MIG instance", "", "  - {namespace: lab, pod: n, container: c, resource: gpu.nvidia.com, claim: claim-n, device: {gpu: 2, instance: 1}, workload: dev}\n", "pods[4].device", "already held"},
		{"device plugin on a DRA GPU", "", "  - {namespace: lab, pod: p, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, workload: dev}\n", "pods[4].device", "already held"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := draBase + tc.new
			if tc.old != "" {
				if !strings.Contains(draBase, tc.old) {
					t.Fatalf("draBase lacks %q", tc.old)
				}
				src = strings.Replace(draBase, tc.old, tc.new, 1)
			}
			_, err := Parse([]byte(src), "dra.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %v, want %s: …%s…", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestDRAPodsAndSlices(t *testing.T) {
	sc, err := Parse([]byte(draBase), "dra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	allocs, avail := b.podsAt(0)
	type got struct{ pod, ctr, claim, pool, share, devices string }
	var gots []got
	for _, a := range allocs {
		if len(a.DeviceIDs) != 0 || a.Resource != resourceDRA {
			t.Errorf("allocation %+v: want a DRA allocation without device-plugin IDs", a)
		}
		gots = append(gots, got{a.Pod, a.Container, a.Claim, a.Pool, a.ShareID, strings.Join(a.DRADevices, ",")})
	}
	mDevice := draDeviceName(b.inv.GPUs[2], ptrTo(1))
	want := []got{
		{"a", "c", "claim-a", "dra-node", "lab-claim-a", "gpu-0"},
		{"b", "c1", "claim-b", "dra-node", "lab-claim-b", "gpu-0"},
		{"b", "c2", "claim-b", "dra-node", "lab-claim-b", "gpu-0"},
		{"m", "c", "claim-m", "dra-node", "", mDevice},
	}
	if !slices.Equal(gots, want) {
		t.Errorf("allocations\n%+v\nwant\n%+v", gots, want)
	}
	// The device plugin advertises the time-sliced GPU 1 and GPU 3, not the DRA GPUs 0 and 2.
	var advertised []string
	for _, a := range avail {
		advertised = append(advertised, a.DeviceIDs...)
	}
	for i, g := range b.inv.GPUs {
		held := slices.ContainsFunc(advertised, func(id string) bool { return strings.HasPrefix(id, g.UUID) })
		if wantHeld := i == 1 || i == 3; held != wantHeld {
			t.Errorf("GPU %d advertised by the device plugin: %v, want %v", i, held, wantHeld)
		}
	}

	// The slice: GPU 0 whole with its UUID; GPU 2's three MIG devices without
	// UUID, placed at 0 (1g.10gb), 2 (2g.20gb, aligned to 2), 4 (3g.40gb, aligned to 4).
	sl := b.ResourceSlices()
	if len(sl) != 1 || sl[0].Spec.Pool.Name != "dra-node" || sl[0].Spec.NodeName != "dra-node" || sl[0].Spec.Driver != resourceDRA {
		t.Fatalf("slices %+v", sl)
	}
	var names []string
	for _, d := range sl[0].Spec.Devices {
		names = append(names, d.Name)
		_, hasUUID := d.Attributes["uuid"]
		if isMIG := strings.Contains(d.Name, "-mig-"); hasUUID == isMIG {
			t.Errorf("device %s: uuid attribute %v", d.Name, hasUUID)
		}
	}
	gi := func(j int) int { return b.inv.GPUs[2].Instances[j].GPUInstanceID }
	wantNames := []string{"gpu-0",
		"gpu-2-mig-1g10gb-" + strconv.Itoa(gi(0)) + "-0", "gpu-2-mig-2g20gb-" + strconv.Itoa(gi(1)) + "-2", "gpu-2-mig-3g40gb-" + strconv.Itoa(gi(2)) + "-4"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("devices %v, want %v", names, wantNames)
	}
}

// TestDRAPodWindow: a DRA pod that starts later is absent before its start,
// and its claim's share ID does not come and go with it: it is set from the
// whole scenario, as a driver sharing the device sets it.
func TestDRAPodWindow(t *testing.T) {
	src := strings.Replace(draBase, "claim: claim-a, device: {gpu: 0}, workload: dev}", "claim: claim-a, device: {gpu: 0}, workload: dev, start: 1h}", 1)
	sc, err := Parse([]byte(src), "dra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	shares := func(since time.Duration) map[string]string {
		allocs, _ := b.podsAt(since)
		got := map[string]string{}
		for _, a := range allocs {
			got[a.Pod+"/"+a.Container] = a.ShareID
		}
		return got
	}
	before, after := shares(30*time.Minute), shares(2*time.Hour)
	if _, ok := before["a/c"]; ok {
		t.Errorf("pod a runs before its start: %v", before)
	}
	if after["a/c"] != "lab-claim-a" || before["b/c1"] != "lab-claim-b" || after["b/c1"] != "lab-claim-b" {
		t.Errorf("share IDs before %v, after %v; want lab-claim-a and lab-claim-b throughout", before, after)
	}
}

func ptrTo(i int) *int { return &i }
