package attribution

import "testing"

func TestResolverCacheResetOnSetDevices(t *testing.T) {
	const gpu = "GPU-00000000-aaaa-bbbb-cccc-000000000000"
	const mig = "MIG-0a0a0a0a-aaaa-bbbb-cccc-0a0a0a0a0a0a"
	var r resolver
	steps := []struct {
		devs []Device // set before the lookups when non-nil
		raw  string
		want string // "" for a miss
	}{
		{raw: "nvidia0", want: ""},             // no table yet: GKE IDs cannot resolve
		{raw: "nvidia0", want: ""},             // the miss is cached
		{raw: gpu + "::3", want: gpu},          // an empty table accepts any UUID
		{raw: "MIG-" + gpu + "/1/0", want: ""}, // legacy MIG needs the table
		{devs: []Device{
			{UUID: gpu, Minor: 0, GPUInstanceID: -1, ComputeInstanceID: -1},
			{UUID: mig, ParentUUID: gpu, Minor: 0, GPUInstanceID: 1, ComputeInstanceID: 0},
		}, raw: "nvidia0", want: gpu}, // the cached miss is gone
		{raw: "MIG-" + gpu + "/1/0", want: mig},
		{raw: "nvidia0/gi1/vgpu2", want: mig},
		{raw: "nvidia0/gi2", want: ""},
		{raw: "GPU-99999999-aaaa-bbbb-cccc-000000000000", want: ""}, // not in the table
		{devs: []Device{}, raw: "GPU-99999999-aaaa-bbbb-cccc-000000000000", want: "GPU-99999999-aaaa-bbbb-cccc-000000000000"},
	}
	for i, s := range steps {
		if s.devs != nil {
			r.setDevices(s.devs)
		}
		got, _, err := r.resolve(s.raw)
		if got != s.want || (err == nil) != (s.want != "") {
			t.Errorf("step %d: resolve(%q) = %q, %v; want %q", i, s.raw, got, err, s.want)
		}
	}
}
