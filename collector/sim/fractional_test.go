package sim

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gputally/gputally/attribution"
)

// fracBase: GPU 0 HAMi's (split 4, memory scaling 2), shared by a
// two-container pod and a notebook; GPU 1 shared by two KAI fractions, the
// second from 2h to 3h; GPU 2 whole.
const fracBase = `seed: 7
node: {hostname: frac-node}
gpus:
  - model: NVIDIA H100 80GB HBM3
    hami: {split: 4, memory_scaling: 2}
  - model: NVIDIA H100 80GB HBM3
  - model: NVIDIA H100 80GB HBM3
workloads:
  - {name: dev, pattern: bursty-dev, fb_mib: 4000}
pods:
  - {namespace: ml, pod: chat, container: server, resource: nvidia.com/gpu, device: {gpu: 0}, hami: {memory_mib: 40000, cores: 30}, workload: dev}
  - {namespace: ml, pod: chat, container: tok, resource: nvidia.com/gpu, device: {gpu: 0}, hami: {memory_mib: 2000, cores: 0}, workload: dev}
  - {namespace: dev, pod: nb, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, hami: {memory_mib: 80000, cores: 50}, workload: dev}
  - {namespace: team-a, pod: a, container: main, device: {gpu: 1}, kai: {fraction: 0.5}, workload: dev}
  - {namespace: team-b, pod: b, container: main, device: {gpu: 1}, kai: {memory_mib: 24467}, workload: dev, start: 2h, end: 3h}
  - {namespace: ml, pod: whole, container: main, resource: nvidia.com/gpu, device: {gpu: 2}, workload: dev}
`

func TestFractionalScenarioErrors(t *testing.T) {
	tests := []struct {
		name, old, new, wantField, wantMsg string
	}{
		{"a pod on a HAMi GPU without a grant", "hami: {memory_mib: 80000, cores: 50}, ", "", "pods[2].hami", "GPU 0 is HAMi's"},
		{"a grant on another GPU", "device: {gpu: 2}, workload", "device: {gpu: 2}, hami: {memory_mib: 1000, cores: 0}, workload", "pods[5].hami", "not HAMi's"},
		// 40000 + 2000 + 80000 > 81559 × 2 = 163118? No: 122000 fits; 130000 more does not.
		{"grants beyond the registered memory", "memory_mib: 80000, cores: 50", "memory_mib: 130000, cores: 50", "pods[2].hami.memory_mib", "registers 163118 MiB"},
		{"cores beyond 100", "memory_mib: 80000, cores: 50", "memory_mib: 80000, cores: 71", "pods[2].hami.cores", "registers 100 cores"},
		{"more grants than the split", "", "  - {namespace: x, pod: p, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, hami: {memory_mib: 1, cores: 0}, workload: dev}\n" +
			"  - {namespace: x, pod: q, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, hami: {memory_mib: 1, cores: 0}, workload: dev}\n", "pods[7].device", "split 4 ways"},
		{"a HAMi GPU in MIG mode", "hami: {split: 4, memory_scaling: 2}", "hami: {split: 4}\n    mig: [7g.80gb]", "gpus[0].hami", "neither in MIG mode"},
		{"a KAI fraction with a resource", "device: {gpu: 1}, kai: {fraction: 0.5}", "resource: nvidia.com/gpu, device: {gpu: 1}, kai: {fraction: 0.5}", "pods[3].resource", "requests no resource"},
		{"fraction and memory", "kai: {fraction: 0.5}", "kai: {fraction: 0.5, memory_mib: 1000}", "pods[3].kai", "one of fraction and memory_mib"},
		{"fraction above 1", "kai: {fraction: 0.5}", "kai: {fraction: 1.5}", "pods[3].kai.fraction", "(0, 1]"},
		{"fractions beyond the GPU", "kai: {fraction: 0.5}", "kai: {fraction: 0.8}", "pods[4].kai", "81559 MiB"},
		{"KAI on a HAMi GPU", "device: {gpu: 1}, kai: {fraction: 0.5}", "device: {gpu: 0}, kai: {fraction: 0.5}", "pods[3].device.gpu", "HAMi's"},
		{"a device-plugin pod on a KAI GPU", "device: {gpu: 2}, workload: dev}", "device: {gpu: 1}, workload: dev}", "pods[5].device", "already held"},
		{"a job on a HAMi GPU", "", "jobs:\n  - {namespace: ci, name: j, container: c, resource: nvidia.com/gpu, device: {gpu: 0}, workload: dev, every: 1h, run: 10m}\n", "jobs[0].device.gpu", "HAMi's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := fracBase + tc.new
			if tc.old != "" {
				if !strings.Contains(fracBase, tc.old) {
					t.Fatalf("fracBase lacks %q", tc.old)
				}
				src = strings.Replace(fracBase, tc.old, tc.new, 1)
			}
			_, err := Parse([]byte(src), "frac.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %v, want %s: …%s…", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// TestFractionalKubeletAndPods: the kubelet shows HAMi's virtual devices and
// KAI's reservation pod, not its sharers; the pod watch sees the annotations
// and labels HAMi and KAI write, as a cluster shows them.
func TestFractionalKubeletAndPods(t *testing.T) {
	sc, err := Parse([]byte(fracBase), "frac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: time.Unix(1767225600, 0)})
	if err != nil {
		t.Fatal(err)
	}
	g0, g1, g2 := b.inv.GPUs[0].UUID, b.inv.GPUs[1].UUID, b.inv.GPUs[2].UUID
	group := kaiGroup(b.seed, g1)
	reservation := kaiReservationName("frac-node", group)
	if !strings.HasPrefix(reservation, "gpu-reservation-") || len(reservation) != len("gpu-reservation-")+16 {
		t.Errorf("reservation pod %q, want gpu-reservation-<16 hex digits>", reservation)
	}
	allocs, avail := b.podsAt(0)
	var got []string
	for _, a := range allocs {
		got = append(got, fmt.Sprintf("%s/%s/%s %s %v", a.Namespace, a.Pod, a.Container, a.Resource, a.DeviceIDs))
	}
	want := []string{
		fmt.Sprintf("ml/chat/server nvidia.com/gpu [%s-0]", g0),
		fmt.Sprintf("ml/chat/tok nvidia.com/gpu [%s-1]", g0),
		fmt.Sprintf("dev/nb/main nvidia.com/gpu [%s-2]", g0),
		fmt.Sprintf("ml/whole/main nvidia.com/gpu [%s]", g2),
		fmt.Sprintf("kai-resource-reservation/%s/resource-reservation nvidia.com/gpu [%s]", reservation, g1),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kubelet List:\n got %q\nwant %q", got, want)
	}
	wantAvail := []string{g0 + "-0", g0 + "-1", g0 + "-2", g0 + "-3", g1, g2}
	if len(avail) != 1 || avail[0].Resource != resourceGPU || !reflect.DeepEqual(avail[0].DeviceIDs, wantAvail) {
		t.Errorf("allocatable %+v, want %s of nvidia.com/gpu", avail, wantAvail)
	}

	v := b.podView(b.running(0))
	byName := map[string]attribution.Pod{}
	for _, p := range v.Pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	chat := byName["ml/chat"]
	// One entry per container, ';' after each, in container order.
	wantAlloc := g0 + ",NVIDIA,40000,30:;" + g0 + ",NVIDIA,2000,0:;"
	if chat.Annotations["hami.io/vgpu-devices-allocated"] != wantAlloc || chat.Annotations["hami.io/bind-phase"] != "success" ||
		!reflect.DeepEqual(chat.Containers, []string{"server", "tok"}) {
		t.Errorf("HAMi pod %+v, want allocated %q", chat, wantAlloc)
	}
	a := byName["team-a/a"]
	if a.Labels["runai-gpu-group"] != group || a.Annotations["gpu-fraction"] != "0.5" || a.Annotations["received-resource-type"] != "Fraction" {
		t.Errorf("KAI sharer %+v", a)
	}
	r := byName["kai-resource-reservation/"+reservation]
	if r.Labels["app"] != "kai-resource-reservation" || r.Labels["runai-gpu-group"] != group || r.Annotations["run.ai/reserve_for_gpu_index"] != g1 {
		t.Errorf("reservation pod %+v", r)
	}
	if _, ok := byName["team-b/b"]; ok {
		t.Error("team-b/b runs from 2h, but is in the view at 0")
	}
	// HAMi's registration: 81559 MiB × 2, 100 cores, split 4.
	wantReg := `[{"id":"` + g0 + `","count":4,"devmem":163118,"devcore":100,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true}]`
	if v.HAMiRegistration != wantReg {
		t.Errorf("registration\n got %s\nwant %s", v.HAMiRegistration, wantReg)
	}
	if vb := b.podView(b.running(int64(2 * time.Hour))); !slices.ContainsFunc(vb.Pods, func(p attribution.Pod) bool {
		return p.Name == "b" && p.Annotations["gpu-memory"] == "24467"
	}) {
		t.Error("team-b/b not in the view at 2h with its gpu-memory")
	}
}

// TestFractionalThroughTheClient: the simulated node's kubelet and pods give
// the attribution client the shares a cluster's would.
func TestFractionalThroughTheClient(t *testing.T) {
	sc, err := Parse([]byte(fracBase), "frac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(sc, Options{Start: time.Unix(1767225600, 0)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	c, err := attribution.New(attribution.Config{Socket: k.Socket, Timeout: time.Minute, Pods: k.Pods()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inv, _ := b.Inventory(context.Background())
	devs := make([]attribution.Device, len(inv.GPUs))
	for i, g := range inv.GPUs {
		devs[i] = attribution.Device{UUID: g.UUID, GPUInstanceID: -1, ComputeInstanceID: -1, MemoryMiB: g.MemoryTotalMiB}
	}
	c.SetDevices(devs)
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := c.Current()
	type share struct {
		who          string
		sharing      attribution.Sharing
		memory, core float64
	}
	var got []share
	for _, uuid := range []string{inv.GPUs[0].UUID, inv.GPUs[1].UUID} {
		for _, h := range s.Holders[uuid] {
			got = append(got, share{h.Namespace + "/" + h.Pod + "/" + h.Container, h.Sharing, h.Memory, h.Cores})
		}
	}
	// HAMi: of 163118 MiB registered and 100 cores; KAI: a's 0.5 (b not yet).
	want := []share{
		{"dev/nb/main", attribution.HAMi, 80000.0 / 163118, 0.5},
		{"ml/chat/server", attribution.HAMi, 40000.0 / 163118, 0.3},
		{"ml/chat/tok", attribution.HAMi, 2000.0 / 163118, 0},
		{"team-a/a/main", attribution.KAI, 0.5, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shares\n got %+v\nwant %+v", got, want)
	}
	if len(s.Unresolved) != 0 {
		t.Errorf("unresolved %+v", s.Unresolved)
	}
}
