package mig

import "testing"

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name            string
		compute, memory int
		suffix          string
		ok              bool
	}{
		{"3g.40gb", 3, 40, "", true},
		{"1g.10gb+me", 1, 10, "me", true},
		{"7g.79gb", 7, 79, "", true},
		{"7g.141gb", 7, 141, "", true},
		{"**1g.11gb**", 0, 0, "", false}, // as dcgm-exporter #544's reporter bolded it
		{"1g.10", 0, 0, "", false},
		{"g.10gb", 0, 0, "", false},
		{"0g.10gb", 0, 0, "", false},
		{"<<<NULL>>>", 0, 0, "", false}, // gpu-monitoring-tools #193
	} {
		c, m, s, ok := ParseName(tc.name)
		if c != tc.compute || m != tc.memory || s != tc.suffix || ok != tc.ok {
			t.Errorf("ParseName(%q) = %d, %d, %q, %v; want %d, %d, %q, %v", tc.name, c, m, s, ok, tc.compute, tc.memory, tc.suffix, tc.ok)
		}
	}
}

// TestResolve: the real misspellings name the profile the node offers; the
// rounding is only ever down and by at most a memory slice; compute slices
// and suffixes must agree; a known model's table rules out what it lacks.
func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, model, spelled string
		offered              []string
		want                 string
	}{
		{"gpu-operator #687", "NVIDIA A100 80GB PCIe", "7g.79gb", []string{"7g.80gb"}, "7g.80gb"},
		{"dcgm-exporter #544, no table for the H100 NVL", "NVIDIA H100 NVL", "1g.11gb", []string{"1g.12gb", "2g.24gb"}, "1g.12gb"},
		{"spelled as offered", "NVIDIA H100 80GB HBM3", "3g.40gb", []string{"3g.40gb", "3g.39gb"}, "3g.40gb"},
		{"the nearest of two", "NVIDIA H100 80GB HBM3", "1g.19gb", []string{"1g.10gb", "1g.20gb"}, "1g.20gb"},
		// 40 − 39 = 1 GB under; 40/8 = 5 GB is the most.
		{"the H100's 39.5 GiB rounded down", "NVIDIA H100 80GB HBM3", "3g.39gb", []string{"3g.40gb", "4g.40gb"}, "3g.40gb"},
		// 40 − 35 = 5 = 40/8: still within a memory slice; 34 is not.
		{"a memory slice's worth", "", "3g.35gb", []string{"3g.40gb"}, "3g.40gb"},
		{"more than a memory slice under", "", "3g.34gb", []string{"3g.40gb"}, ""},
		{"never rounded up", "NVIDIA A100 80GB PCIe", "7g.81gb", []string{"7g.80gb"}, ""},
		{"other compute slices", "NVIDIA A100 80GB PCIe", "4g.39gb", []string{"3g.40gb"}, ""},
		{"other suffix", "NVIDIA A100 80GB PCIe", "1g.9gb+me", []string{"1g.10gb"}, ""},
		{"the suffix kept", "NVIDIA A100 80GB PCIe", "1g.9gb+me", []string{"1g.10gb", "1g.10gb+me"}, "1g.10gb+me"},
		// 1g.12gb is no A100 80GB profile.
		{"not in the model's table", "NVIDIA A100 80GB PCIe", "1g.11gb", []string{"1g.12gb"}, ""},
		{"offered twice, and one further", "", "2g.19gb", []string{"2g.21gb", "2g.20gb", "2g.20gb"}, "2g.20gb"},
		{"not a profile name", "", "<<<NULL>>>", []string{"1g.10gb"}, ""},
	} {
		got, ok := Resolve(tc.model, tc.spelled, tc.offered)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s: Resolve(%q, %q, %q) = %q, %v; want %q", tc.name, tc.model, tc.spelled, tc.offered, got, ok, tc.want)
		}
	}
}
