package attribution

import (
	"strings"
	"testing"
)

func TestParseDeviceID(t *testing.T) {
	const u = "GPU-3a5b8c1d-1111-2222-3333-444455556666"
	const m = "MIG-7f1e2d3c-aaaa-bbbb-cccc-ddddeeeeffff"
	none := DeviceID{Replica: -1, VGPU: -1, Minor: -1, GPUInstanceID: -1, ComputeInstanceID: -1}
	with := func(f func(*DeviceID)) DeviceID {
		id := none
		f(&id)
		return id
	}
	tests := []struct {
		in      string
		want    DeviceID
		wantErr bool
	}{
		{in: u, want: with(func(d *DeviceID) { d.Form, d.UUID = FormGPU, u })},
		{in: u + "::0", want: with(func(d *DeviceID) { d.Form, d.UUID, d.Replica = FormGPU, u, 0 })},
		{in: u + "::17", want: with(func(d *DeviceID) { d.Form, d.UUID, d.Replica = FormGPU, u, 17 })},
		// HAMi's virtual devices (rm/devices.go:208): the GPU's UUID and k, no replica.
		{in: u + "-0", want: with(func(d *DeviceID) { d.Form, d.UUID, d.VGPU = FormGPU, u, 0 })},
		{in: u + "-9", want: with(func(d *DeviceID) { d.Form, d.UUID, d.VGPU = FormGPU, u, 9 })},
		{in: u + "-12", want: with(func(d *DeviceID) { d.Form, d.UUID, d.VGPU = FormGPU, u, 12 })},
		// Not the canonical 8-4-4-4-12 UUID before the suffix: an ordinary (unknown) UUID.
		{in: "GPU-3a5b8c1d-1111-2222-3333-4444-5", want: with(func(d *DeviceID) {
			d.Form, d.UUID = FormGPU, "GPU-3a5b8c1d-1111-2222-3333-4444-5"
		})},
		{in: m, want: with(func(d *DeviceID) { d.Form, d.UUID = FormMIG, m })},
		{in: m + "::3", want: with(func(d *DeviceID) { d.Form, d.UUID, d.Replica = FormMIG, m, 3 })},
		{in: "MIG-" + u + "/7/0", want: with(func(d *DeviceID) {
			d.Form, d.UUID, d.GPUInstanceID, d.ComputeInstanceID = FormLegacyMIG, u, 7, 0
		})},
		{in: "nvidia0", want: with(func(d *DeviceID) { d.Form, d.Minor = FormGKE, 0 })},
		{in: "nvidia0/vgpu0", want: with(func(d *DeviceID) { d.Form, d.Minor, d.Replica = FormGKE, 0, 0 })},
		{in: "nvidia12/vgpu3", want: with(func(d *DeviceID) { d.Form, d.Minor, d.Replica = FormGKE, 12, 3 })},
		{in: "nvidia0/gi1", want: with(func(d *DeviceID) { d.Form, d.Minor, d.GPUInstanceID = FormGKE, 0, 1 })},
		{in: "nvidia0/gi1/vgpu0", want: with(func(d *DeviceID) {
			d.Form, d.Minor, d.GPUInstanceID, d.Replica = FormGKE, 0, 1, 0
		})},
		{in: "", wantErr: true},
		{in: "GPU-", wantErr: true},
		{in: "GPU-xyz", wantErr: true},
		{in: "GPU-1234", wantErr: true},
		{in: u + "::", wantErr: true},
		{in: u + "::-1", wantErr: true},
		{in: u + "::01", wantErr: true},
		{in: u + "::1::2", wantErr: true},
		{in: u + "::99999999", wantErr: true},
		{in: "MIG-" + u + "/7", wantErr: true},
		{in: "MIG-" + u + "/7/0/1", wantErr: true},
		{in: "MIG-" + u + "/a/0", wantErr: true},
		{in: "MIG-GPU-zz/1/0", wantErr: true},
		{in: "nvidia", wantErr: true},
		{in: "nvidiaX", wantErr: true},
		{in: "nvidia0/", wantErr: true},
		{in: "nvidia0/vgpu", wantErr: true},
		{in: "nvidia0/vgpu0/gi1", wantErr: true},
		{in: "nvidia0/gi1/vgpu0/x", wantErr: true},
		{in: "nvidia0/foo1", wantErr: true},
		{in: "gpu0", wantErr: true},
		{in: "GPU-" + strings.Repeat("a", 300), wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseDeviceID(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseDeviceID(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if tt.wantErr {
			if got != none {
				t.Errorf("ParseDeviceID(%q) = %+v with an error, want the zero ID", tt.in, got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDeviceID(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("ParseDeviceID(%q).String() = %q", tt.in, s)
		}
	}
}

func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{
		"GPU-3a5b8c1d-1111-2222-3333-444455556666", "GPU-3a5b8c1d-1111-2222-3333-444455556666::4",
		"MIG-7f1e2d3c-aaaa-bbbb-cccc-ddddeeeeffff::0", "MIG-GPU-3a5b8c1d-1111-2222-3333-444455556666/1/0",
		"GPU-3a5b8c1d-1111-2222-3333-444455556666-7", "nvidia0/vgpu0", "nvidia1/gi2/vgpu3", "nvidia3/gi1", "", "::", "nvidia/", "MIG-GPU-/1/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseDeviceID(s)
		if err != nil {
			return
		}
		// Whatever parses is printed back unchanged, with the fields its form carries.
		if got := id.String(); got != s {
			t.Fatalf("ParseDeviceID(%q).String() = %q", s, got)
		}
		switch id.Form {
		case FormGPU:
			if !strings.HasPrefix(id.UUID, "GPU-") || id.Minor != -1 || id.GPUInstanceID != -1 ||
				(id.VGPU >= 0 && (id.Replica >= 0 || len(id.UUID) != len("GPU-")+36)) {
				t.Fatalf("GPU form %q parsed to %+v", s, id)
			}
		case FormMIG:
			if !strings.HasPrefix(id.UUID, "MIG-") || id.Minor != -1 || id.GPUInstanceID != -1 || id.VGPU != -1 {
				t.Fatalf("MIG form %q parsed to %+v", s, id)
			}
		case FormLegacyMIG:
			if !strings.HasPrefix(id.UUID, "GPU-") || id.GPUInstanceID < 0 || id.ComputeInstanceID < 0 || id.Replica != -1 {
				t.Fatalf("legacy MIG form %q parsed to %+v", s, id)
			}
		case FormGKE:
			if id.UUID != "" || id.Minor < 0 || id.ComputeInstanceID != -1 {
				t.Fatalf("GKE form %q parsed to %+v", s, id)
			}
		default:
			t.Fatalf("ParseDeviceID(%q) = %+v: no form", s, id)
		}
	})
}
