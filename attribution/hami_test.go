package attribution

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const (
	hamiGPUa = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"
	hamiGPUb = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec"
)

func TestParseHAMiAllocated(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    [][]hamiDevice
		wantErr string
	}{
		// Project-HAMi/HAMi@4707fb0:docs/develop/protocol.md: two containers on
		// one GPU, 3000 and 5000 MiB, no core limit.
		{"protocol.md", hamiGPUa + ",NVIDIA,3000,0:;" + hamiGPUa + ",NVIDIA,5000,0:;",
			[][]hamiDevice{{{hamiGPUa, 3000, 0}}, {{hamiGPUa, 5000, 0}}}, ""},
		// An init container without a GPU, then one with two GPUs (the
		// encoder's form, devices.go:451-483).
		{"empty init entry, two GPUs", ";" + hamiGPUa + ",NVIDIA,20480,30:" + hamiGPUb + ",NVIDIA,20480,30:;",
			[][]hamiDevice{nil, {{hamiGPUa, 20480, 30}, {hamiGPUb, 20480, 30}}}, ""},
		{"no trailing separator", hamiGPUa + ",NVIDIA,1024,25", [][]hamiDevice{{{hamiGPUa, 1024, 25}}}, ""},
		{"extra fields are HAMi's to add", hamiGPUa + ",NVIDIA,1024,25,extra:;", [][]hamiDevice{{{hamiGPUa, 1024, 25}}}, ""},
		{"nothing", "", [][]hamiDevice{}, ""},
		{"three fields", hamiGPUa + ",NVIDIA,1024:;", nil, "want UUID,type,memory,cores"},
		{"no comma", "garbage:;", nil, "want UUID,type,memory,cores"},
		{"bad memory", hamiGPUa + ",NVIDIA,1k,25:;", nil, "bad memory"},
		{"negative cores", hamiGPUa + ",NVIDIA,1024,-5:;", nil, "bad cores"},
		{"memory beyond int32", hamiGPUa + ",NVIDIA,4294967296,0:;", nil, "bad memory"},
		{"short UUID", "GPU-1234,NVIDIA,1024,0:;", nil, "bad GPU UUID"},
		{"a MIG device", "MIG-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,1024,0:;", nil, "bad GPU UUID"},
		{"oversized", oversized, nil, "longer than"},
	}
	for _, tc := range tests {
		got, err := parseHAMiAllocated(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	// Older MIG builds append [template-slot] to the UUID (HAMi #1043).
	if _, err := parseHAMiAllocated("GPU-30f90f49-43ab-0a78-bf5c-93ed41ef2da2[1-0],NVIDIA,10240,45:;"); !errors.Is(err, errHAMiMIG) {
		t.Errorf("legacy MIG grant: %v, want errHAMiMIG", err)
	}
}

func FuzzParseHAMiAllocated(f *testing.F) {
	for _, s := range []string{
		hamiGPUa + ",NVIDIA,3000,0:;" + hamiGPUa + ",NVIDIA,5000,0:;", ";" + hamiGPUa + ",NVIDIA,20480,30:;", "", ";;", ":", ",,,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ctrs, err := parseHAMiAllocated(s)
		if err != nil {
			return
		}
		for _, ds := range ctrs {
			for _, d := range ds {
				if len(d.uuid) != len("GPU-")+36 || d.memMiB < 0 || d.cores < 0 {
					t.Fatalf("%q parsed to %+v", s, d)
				}
			}
		}
	})
}

// TestHAMiGrants: what each container holds per GPU, by HAMi's scheduler's
// rules for multi-container and init-container pods
// (pkg/device/initContainer.go). Expected grants by hand.
func TestHAMiGrants(t *testing.T) {
	dev := func(uuid string, mem, cores int64) hamiDevice { return hamiDevice{uuid, mem, cores} }
	g := func(ctr, uuid string, mem, cores int64) hamiGrant { return hamiGrant{ctr, uuid, mem, cores} }
	tests := []struct {
		name    string
		pod     Pod
		devs    [][]hamiDevice
		want    []hamiGrant
		wantErr bool
	}{
		{"two app containers on one GPU hold their own",
			Pod{Containers: []string{"server", "sidecar"}},
			[][]hamiDevice{{dev(hamiGPUa, 3000, 20)}, {dev(hamiGPUa, 5000, 30)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20), g("sidecar", hamiGPUa, 5000, 30)}, false},
		{"one container on two GPUs",
			Pod{Containers: []string{"main"}},
			[][]hamiDevice{{dev(hamiGPUa, 20480, 30), dev(hamiGPUb, 20480, 30)}},
			[]hamiGrant{g("main", hamiGPUa, 20480, 30), g("main", hamiGPUb, 20480, 30)}, false},
		// While init runs: per axis max(init peak, app sum). Memory: peak
		// 8000 (init "fetch") > app 3000 + 2000 = 5000: fetch holds the
		// extra 3000. Cores: peak 40 ("warm") < app 20 + 30 = 50: no extra.
		{"init containers running",
			Pod{InitContainers: []string{"fetch", "warm"}, Containers: []string{"server", "sidecar"}},
			[][]hamiDevice{{dev(hamiGPUa, 8000, 10)}, {dev(hamiGPUa, 1000, 40)}, {dev(hamiGPUa, 3000, 20)}, {dev(hamiGPUa, 2000, 30)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20), g("sidecar", hamiGPUa, 2000, 30), g("fetch", hamiGPUa, 3000, 0)}, false},
		// Memory from one init container, cores from another: each holds
		// its axis's extra. Memory: 8000 − 3000 = 5000 (fetch); cores:
		// 90 − 20 = 70 (warm).
		{"init peaks on two containers",
			Pod{InitContainers: []string{"fetch", "warm"}, Containers: []string{"server"}},
			[][]hamiDevice{{dev(hamiGPUa, 8000, 10)}, {dev(hamiGPUa, 1000, 90)}, {dev(hamiGPUa, 3000, 20)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20), g("fetch", hamiGPUa, 5000, 0), g("warm", hamiGPUa, 0, 70)}, false},
		// An init container on a GPU the app containers do not use holds its peak there.
		{"init on another GPU",
			Pod{InitContainers: []string{"fetch"}, Containers: []string{"server"}},
			[][]hamiDevice{{dev(hamiGPUb, 4000, 25)}, {dev(hamiGPUa, 3000, 20)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20), g("fetch", hamiGPUb, 4000, 25)}, false},
		{"init containers done: the app containers alone",
			Pod{InitContainers: []string{"fetch"}, Containers: []string{"server"}, InitDone: true},
			[][]hamiDevice{{dev(hamiGPUa, 8000, 10)}, {dev(hamiGPUa, 3000, 20)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20)}, false},
		{"an init container without a GPU keeps its place",
			Pod{InitContainers: []string{"setup"}, Containers: []string{"server"}},
			[][]hamiDevice{nil, {dev(hamiGPUa, 3000, 20)}},
			[]hamiGrant{g("server", hamiGPUa, 3000, 20)}, false},
		{"more entries than containers",
			Pod{Containers: []string{"server"}},
			[][]hamiDevice{{dev(hamiGPUa, 3000, 20)}, {dev(hamiGPUa, 3000, 20)}}, nil, true},
	}
	for _, tc := range tests {
		got, err := hamiGrants(&tc.pod, tc.devs)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestParseHAMiRegistration reads the JSON HAMi's device plugin writes
// (device.MarshalNodeDevices; omitempty drops index 0, numa 0 and health
// false), here for an H100 with deviceMemoryScaling 2 and a second one
// registered without devcore.
func TestParseHAMiRegistration(t *testing.T) {
	reg := `[{"id":"` + hamiGPUa + `","count":10,"devmem":163118,"devcore":100,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true},` +
		`{"id":"` + hamiGPUb + `","index":1,"count":10,"devmem":81559,"type":"NVIDIA H100 80GB HBM3","numa":1,"mode":"hami-core"}]`
	got, err := parseHAMiRegistration(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]hamiCapacity{hamiGPUa: {163118, 100}, hamiGPUb: {81559, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	// The denominators: registered memory; a devcore left out counts 100;
	// a GPU not registered falls back to NVML's memory and 100 cores.
	for _, tc := range []struct {
		d    Device
		want hamiCapacity
	}{
		{Device{UUID: hamiGPUa, MemoryMiB: 81559}, hamiCapacity{163118, 100}},
		{Device{UUID: hamiGPUb, MemoryMiB: 81559}, hamiCapacity{81559, 100}},
		{Device{UUID: "GPU-77777777-aaaa-bbbb-cccc-777777777777", MemoryMiB: 46068}, hamiCapacity{46068, 100}},
	} {
		if c := hamiCapacityOf(got, tc.d); c != tc.want {
			t.Errorf("capacity of %s = %+v, want %+v", tc.d.UUID, c, tc.want)
		}
	}
	// protocol.md's older comma form is not JSON: an error, not a guess.
	if _, err := parseHAMiRegistration(hamiGPUb + ",10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"); err == nil {
		t.Error("the comma form parsed")
	}
}

func TestKAIPortion(t *testing.T) {
	pod := func(ann map[string]string) *Pod { return &Pod{Annotations: ann} }
	tests := []struct {
		name    string
		ann     map[string]string
		memMiB  uint64
		want    float64
		wantErr bool
	}{
		{"fraction", map[string]string{kaiFraction: "0.5"}, 81559, 0.5, false},
		{"fraction wins over memory", map[string]string{kaiFraction: "0.3", kaiMemory: "40000"}, 81559, 0.3, false},
		{"a whole GPU as a fraction", map[string]string{kaiFraction: "1"}, 81559, 1, false},
		// KAI's docs (docs/gpu-sharing/hami/README.md): 4096 MiB on a 15360
		// MiB T4 is 0.27 — ceil(26.67) / 100.
		{"memory ceiled to 0.01", map[string]string{kaiMemory: "4096"}, 15360, 0.27, false},
		// 5120 / 15360 = 0.3333…: ceil to 0.34 (three of them sum to 1.02).
		{"a third", map[string]string{kaiMemory: "5120"}, 15360, 0.34, false},
		{"exactly half", map[string]string{kaiMemory: "7680"}, 15360, 0.5, false},
		{"zero fraction", map[string]string{kaiFraction: "0"}, 15360, 0, true},
		{"fraction above 1", map[string]string{kaiFraction: "1.5"}, 15360, 0, true},
		{"NaN", map[string]string{kaiFraction: "NaN"}, 15360, 0, true},
		{"memory with a unit", map[string]string{kaiMemory: "4Gi"}, 15360, 0, true},
		{"more memory than the GPU", map[string]string{kaiMemory: "20000"}, 15360, 0, true},
		{"memory of an unknown GPU", map[string]string{kaiMemory: "4096"}, 0, 0, true},
		{"neither", map[string]string{}, 15360, 0, true},
	}
	for _, tc := range tests {
		got, err := kaiPortion(pod(tc.ann), tc.memMiB)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("%s: %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestKAIGroupsAndContainer(t *testing.T) {
	p := &Pod{Labels: map[string]string{kaiGPUGroup + "/g2": "g2", kaiGPUGroup + "/g1": "g1", "app": "x"},
		InitContainers: []string{"init"}, Containers: []string{"main", "side"}}
	if got := kaiGroups(p); !reflect.DeepEqual(got, []string{"g1", "g2"}) {
		t.Errorf("multi-GPU groups %v, want [g1 g2]", got)
	}
	if got := kaiGroups(&Pod{Labels: map[string]string{kaiGPUGroup: "g"}}); !reflect.DeepEqual(got, []string{"g"}) {
		t.Errorf("groups %v, want [g]", got)
	}
	for _, tc := range []struct {
		ann     map[string]string
		want    string
		wantErr bool
	}{
		{nil, "main", false},
		{map[string]string{kaiContainerName: "side"}, "side", false},
		{map[string]string{kaiContainerName: "init"}, "init", false},
		{map[string]string{kaiContainerName: "nope"}, "", true},
	} {
		p.Annotations = tc.ann
		got, err := kaiContainer(p)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.ann, got, err, tc.want)
		}
	}
}
