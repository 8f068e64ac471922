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
