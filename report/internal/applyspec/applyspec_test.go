package applyspec

import (
	"strings"
	"testing"
)

// TestStrictDecodersReject makes sure the decoders above can fail: each
// broken config must be rejected.
func TestStrictDecodersReject(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown field", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: false\n      extra: 1\n", "not found"},
		{"no mig-enabled", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n", "mig-enabled is required"},
		{"devices missing", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n", "devices"},
		{"mig-devices when disabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {1g.10gb: 1}\n", "forbidden"},
		{"no mig-devices when enabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n", "required when"},
		{"bad profile", "version: v1\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: true\n      mig-devices: {big: 1}\n", "not a profile"},
		{"empty config", "version: v1\nmig-configs:\n  a: []\n", "empty"},
		{"version", "version: v2\nmig-configs:\n  a:\n    - devices: [0]\n      mig-enabled: false\n", "version"},
	} {
		if _, err := parseMIGParted(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	const ts = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 2\n"
	for _, tc := range []struct{ name, text, want string }{
		{"unknown field", ts + "        color: red\n", "not found"},
		{"rename", ts + "        rename: nvidia.com/gpu.small\n", "ignores"},
		{"devices", ts + "        devices: [0, 1]\n", "ignores"},
		{"twice", ts + "      - name: nvidia.com/gpu\n        replicas: 4\n", "twice"},
		{"one replica", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 1\n", "replicas ≥ 2"},
	} {
		if _, err := parseDevicePlugin(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("device plugin config, %s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if c, err := parseDevicePlugin(ts + "        devices: all\n"); err != nil || c.Replicas["nvidia.com/gpu"] != 2 {
		t.Errorf("devices: all: %+v, %v; want nvidia.com/gpu ×2", c, err)
	}
	if _, err := strictDecode[kueueSpec]("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec: {cohort: x}\n"); err == nil {
		t.Error("Kueue v1beta1 `cohort` accepted")
	}
}

// TestSchedulerAndVolcanoDecodersReject: the kube-scheduler and Volcano
// checks can fail — an unknown field, a weight past 100, a strategy
// kube-scheduler does not know, Volcano's documented guarantee mistake
// (guarantee: {<resource>: …} for guarantee.resource.<resource>).
func TestSchedulerAndVolcanoDecodersReject(t *testing.T) {
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: default-scheduler\n    pluginConfig:\n      - name: NodeResourcesFit\n        args:\n          scoringStrategy:\n"
	for _, tc := range []struct{ name, text, want string }{
		{"unknown field", head + "            type: MostAllocated\n            packing: true\n", "unknown field"},
		{"weight 101", head + "            type: MostAllocated\n            resources:\n              - name: nvidia.com/gpu\n                weight: 101\n", "not in valid range (0, 100]"},
		{"strategy", head + "            type: Tightest\n", "not supported"},
		{"no strategy", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: x\n    pluginConfig:\n      - name: NodeResourcesFit\n        args: {}\n", "scoringStrategy is required"},
		{"v1beta3", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", "want kubescheduler.config.k8s.io/v1"},
	} {
		if _, err := parseSchedulerConfig(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if p, err := parseSchedulerConfig(head + "            type: MostAllocated\n            resources:\n              - name: nvidia.com/gpu\n                weight: 100\n"); err != nil || p["default-scheduler"].Weights["nvidia.com/gpu"] != 100 {
		t.Errorf("weight 100: %+v, %v", p, err)
	}
	if _, err := strictDecode[volcanoSpec]("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: a}\nspec:\n  guarantee:\n    \"deviceclass/gpu.nvidia.com\": \"1\"\n"); err == nil {
		t.Error("guarantee without resource: accepted")
	}
}
