package sim

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDefaultScenario(t *testing.T) {
	sc := Default()
	if got := len(sc.GPUs); got == 0 {
		t.Fatal("default scenario has no GPUs")
	}
	b, err := New(sc, Options{})
	if err != nil {
		t.Fatalf("New(Default()): %v", err)
	}
	if b.Hostname() != DefaultHostname {
		t.Errorf("hostname %q, want %q", b.Hostname(), DefaultHostname)
	}
	inv := b.inv
	if len(inv.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(inv.GPUs))
	}
	for i, g := range inv.GPUs {
		if g.Model != "NVIDIA H100 80GB HBM3" {
			t.Errorf("GPU %d model %q", i, g.Model)
		}
		if wantMIG := i >= 6; g.MIGEnabled != wantMIG {
			t.Errorf("GPU %d MIGEnabled=%v, want %v", i, g.MIGEnabled, wantMIG)
		}
	}
}

func TestExampleScenarios(t *testing.T) {
	files, err := filepath.Glob("../../testdata/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(sc, Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("Load of a missing file = %v, want an error naming it", err)
	}
}

// base is a valid scenario the bad-input cases break one line of.
const base = `seed: 1
gpus:
  - model: NVIDIA H100 80GB HBM3
    count: 2
  - model: NVIDIA H100 80GB HBM3
    replicas: 2
  - model: NVIDIA H100 80GB HBM3
    mig: [3g.40gb, 1g.10gb]
workloads:
  - {name: train, pattern: training, fb_mib: 60000}
  - {name: dev, pattern: bursty-dev, fb_mib: 4000}
pods:
  - namespace: ml
    pod: train-0
    container: main
    resource: nvidia.com/gpu
    device: {gpu: 0}
    workload: train
    pids: [100]
events:
  - {at: 1h, gpu: 1, xid: 13}
`

func TestParseBase(t *testing.T) {
	if _, err := Parse([]byte(base), "base.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		old, new  string // replace old by new in base
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"unknown top-level key", "seed: 1", "sed: 1", 1, "sed", "unknown field"},
		{"unknown nested key", "    count: 2", "    cuont: 2", 4, "gpus[0].cuont", "unknown field"},
		{"unknown key in flow mapping", "{gpu: 0}", "{gpu: 0, gpus: 1}", 17, "pods[0].device.gpus", "unknown field"},
		{"duplicate key", "    count: 2", "    count: 2\n    count: 3", 5, "gpus[0].count", "twice"},
		{"wrong type", "    count: 2", "    count: two", 4, "gpus[0].count", "expected an integer"},
		{"null value", "    count: 2", "    count:", 4, "gpus[0].count", "missing value"},
		{"string for list", "    mig: [3g.40gb, 1g.10gb]", "    mig: 3g.40gb", 8, "gpus[2].mig", "expected a list"},
		{"negative count", "    count: 2", "    count: -2", 4, "gpus[0].count", "at least 1"},
		{"zero count", "    count: 2", "    count: 0", 4, "gpus[0].count", "at least 1"},
		{"too many GPUs", "    count: 2", "    count: 100", 4, "gpus[0].count", "more than 64"},
		{"count overflow", "    count: 2", "    count: 9223372036854775807", 4, "gpus[0].count", "more than 64"},
		{"integer overflow", "    count: 2", "    count: 99999999999999999999", 4, "gpus[0].count", "expected an integer"},
		{"missing model", "  - model: NVIDIA H100 80GB HBM3\n    count: 2", "  - count: 2", 3, "gpus[0].model", "required"},
		{"unknown model", "  - model: NVIDIA H100 80GB HBM3\n    count: 2", "  - model: Acme 9000\n    count: 2", 3, "gpus[0].model", "memory_mib and tdp_watts"},
		{"negative memory", "    count: 2", "    count: 2\n    memory_mib: -1", 5, "gpus[0].memory_mib", "between"},
		{"idle above TDP", "    count: 2", "    count: 2\n    idle_watts: 900", 5, "gpus[0].idle_watts", "below the TDP"},
		{"negative replicas", "    replicas: 2", "    replicas: -1", 6, "gpus[1].replicas", "between"},
		{"MIG slices overflow", "[3g.40gb, 1g.10gb]", "[3g.40gb, 3g.40gb, 1g.10gb]", 8, "gpus[2].mig[2]", "memory slices"},
		{"MIG profile the model lacks", "[3g.40gb, 1g.10gb]", "[3g.40gb, 1g.5gb]", 8, "gpus[2].mig[1]", `no MIG profile "1g.5gb"`},
		{"MIG on a model without MIG", "  - model: NVIDIA H100 80GB HBM3\n    mig:", "  - model: NVIDIA L4\n    mig:", 8, "gpus[2].mig", "no MIG profiles"},
		{"MIG and replicas", "    mig: [3g.40gb, 1g.10gb]", "    mig: [3g.40gb, 1g.10gb]\n    replicas: 2", 9, "gpus[2].replicas", "not simulated"},
		{"duplicate workload", "  - {name: dev,", "  - {name: train,", 11, "workloads[1].name", "already defined"},
		{"unknown pattern", "pattern: bursty-dev", "pattern: sometimes", 11, "workloads[1].pattern", "unknown pattern"},
		{"negative fb", "fb_mib: 4000", "fb_mib: -5", 11, "workloads[1].fb_mib", "between"},
		{"bad namespace", "- namespace: ml", "- namespace: ML_team", 13, "pods[0].namespace", "not a valid namespace"},
		{"path in pod name", "    pod: train-0", "    pod: ../../etc", 14, "pods[0].pod", "not a valid pod name"},
		{"bad uid", "    pod: train-0", "    pod: train-0\n    uid: xyz", 15, "pods[0].uid", "UUID"},
		{"unknown resource", "    resource: nvidia.com/gpu", "    resource: amd.com/gpu", 16, "pods[0].resource", "unknown resource"},
		{"missing GPU", "{gpu: 0}", "{gpu: 9}", 17, "pods[0].device.gpu", "no GPU 9"},
		{"negative GPU", "{gpu: 0}", "{gpu: -1}", 17, "pods[0].device.gpu", "no GPU -1"},
		{"missing device", "    device: {gpu: 0}\n", "", 13, "pods[0].device.gpu", "required"},
		{"exclusive on MIG GPU", "{gpu: 0}", "{gpu: 3}", 16, "pods[0].resource", "MIG mode"},
		{"exclusive on time-sliced GPU", "{gpu: 0}", "{gpu: 2}", 16, "pods[0].resource", "time-sliced"},
		{"replica out of range", "    resource: nvidia.com/gpu\n    device: {gpu: 0}", "    resource: nvidia.com/gpu.shared\n    device: {gpu: 2, replica: 2}", 17, "pods[0].device.replica", "replicas 0 to 1"},
		{"replica resource without replicas", "    count: 2", "    count: 2\n    resource: nvidia.com/gpu", 5, "gpus[0].resource", "set replicas"},
		{"unknown replica resource", "    replicas: 2", "    replicas: 2\n    resource: nvidia.com/mig-1g.10gb", 7, "gpus[1].resource", "want nvidia.com/gpu.shared or nvidia.com/gpu"},
		{"shared without replica", "    resource: nvidia.com/gpu\n    device: {gpu: 0}", "    resource: nvidia.com/gpu.shared\n    device: {gpu: 2}", 17, "pods[0].device.replica", "required"},
		{"MIG instance missing", "    resource: nvidia.com/gpu\n    device: {gpu: 0}", "    resource: nvidia.com/mig-1g.10gb\n    device: {gpu: 3, instance: 5}", 17, "pods[0].device.instance", "2 MIG instances"},
		{"MIG profile mismatch", "    resource: nvidia.com/gpu\n    device: {gpu: 0}", "    resource: nvidia.com/mig-1g.10gb\n    device: {gpu: 3, instance: 0}", 16, "pods[0].resource", "is a 3g.40gb"},
		{"workload too big for instance", "    resource: nvidia.com/gpu\n    device: {gpu: 0}", "    resource: nvidia.com/mig-1g.10gb\n    device: {gpu: 3, instance: 1}", 18, "pods[0].workload", "needs 60000 MiB"},
		{"missing workload", "    workload: train", "    workload: serve", 18, "pods[0].workload", `no workload named "serve"`},
		{"PID out of range", "pids: [100]", "pids: [0]", 19, "pods[0].pids[0]", "between 1"},
		{"two exclusive pods on one GPU", "events:", "  - {namespace: ml, pod: train-1, container: main, resource: nvidia.com/gpu, device: {gpu: 0}, workload: train}\nevents:", 20, "pods[1].device", "already held by pods[0]"},
		{"duplicate PID", "events:", "  - {namespace: ml, pod: train-1, container: main, resource: nvidia.com/gpu, device: {gpu: 1}, workload: train, pids: [100]}\nevents:", 20, "pods[1].pids[0]", "already used"},
		{"second UID for a pod", "events:", "  - {namespace: ml, pod: train-0, uid: 0b6f2a1c-5d3e-4f70-9a8b-1c2d3e4f5a6b, container: side, resource: nvidia.com/gpu, device: {gpu: 1}, workload: train}\n  - {namespace: ml, pod: train-0, uid: 1b6f2a1c-5d3e-4f70-9a8b-1c2d3e4f5a6b, container: c, resource: nvidia.com/gpu.shared, device: {gpu: 2, replica: 0}, workload: dev}\nevents:", 21, "pods[2].uid", "already has UID"},
		{"negative event time", "{at: 1h,", "{at: -1h,", 21, "events[0].at", "between 0s"},
		{"bad duration", "{at: 1h,", "{at: soon,", 21, "events[0].at", "duration"},
		{"event on missing GPU", "gpu: 1, xid: 13", "gpu: 8, xid: 13", 21, "events[0].gpu", "no GPU 8"},
		{"event without kind", "gpu: 1, xid: 13", "gpu: 1", 21, "events[0]", "give xid or lost"},
		{"event with both", "gpu: 1, xid: 13", "gpu: 1, xid: 13, lost: true", 21, "events[0]", "not both"},
		{"XID out of range", "xid: 13", "xid: 5000", 21, "events[0].xid", "between 1"},
		{"no GPUs", "gpus:\n  - model: NVIDIA H100 80GB HBM3\n    count: 2\n  - model: NVIDIA H100 80GB HBM3\n    replicas: 2\n  - model: NVIDIA H100 80GB HBM3\n    mig: [3g.40gb, 1g.10gb]\n", "gpus: []\n", 2, "gpus", "at least one GPU"},
		{"anchor", "seed: 1", "seed: &s 1", 1, "seed", "anchors"},
		{"syntax error", "    count: 2", "    count: [2", 0, "", "yaml:"},
		{"second document", "seed: 1", "seed: 1\n---\nseed: 2", 2, "", "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.old) {
				t.Fatalf("base scenario lacks %q", tt.old)
			}
			data := strings.Replace(base, tt.old, tt.new, 1)
			_, err := Parse([]byte(data), "bad.yaml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", data)
			}
			msg := err.Error()
			prefix := "bad.yaml:"
			if tt.wantLine > 0 {
				prefix = "bad.yaml:" + strconv.Itoa(tt.wantLine) + ": "
			}
			if tt.wantField != "" {
				prefix += tt.wantField + ": "
			}
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("error %q\nwant prefix %q and %q", msg, prefix, tt.wantMsg)
			}
			if strings.Count(msg, "\n") > 0 {
				t.Fatalf("error spans lines: %q", msg)
			}
		})
	}
}

func TestNewValidatesScenariosBuiltInCode(t *testing.T) {
	sc := &Scenario{GPUs: []GPUGroup{{Model: "NVIDIA H100 80GB HBM3", MIG: []string{"7g.80gb", "1g.10gb"}}}}
	_, err := New(sc, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "scenario: gpus[0].mig[1]: ") {
		t.Fatalf("New = %v, want a located layout error", err)
	}
	sc = &Scenario{GPUs: []GPUGroup{{Model: "NVIDIA H100 80GB HBM3", MIG: []string{}}}}
	b, err := New(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g := b.inv.GPUs[0]; !g.MIGEnabled || len(g.Instances) != 0 {
		t.Fatalf("mig: [] gave %+v, want MIG mode without instances", g)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(lifeBase))
	f.Add([]byte(migBase))
	f.Add(defaultScenario)
	files, _ := filepath.Glob("../../testdata/scenarios/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("gpus: [{model: NVIDIA H100 80GB HBM3, mig: [1g.10gb]}]\npods: [{namespace: a, pod: b, container: c, resource: nvidia.com/mig-1g.10gb, device: {gpu: 0, instance: 0}, workload: w}]\nworkloads: [{name: w, pattern: idle, fb_mib: 1}]"))
	f.Add([]byte("a: &x [*x]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		// A scenario that parses must build and sample.
		b, err := New(sc, Options{})
		if err != nil {
			t.Fatalf("Parse accepted what New rejects: %v", err)
		}
		sampleOnce(t, b)
	})
}
