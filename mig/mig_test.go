package mig

import (
	"errors"
	"strings"
	"testing"
)

func TestForModel(t *testing.T) {
	tests := []struct {
		product string
		want    string // "" for no table
	}{
		{"NVIDIA A100-SXM4-40GB", "A100-40GB"},
		{"NVIDIA A100-PCIE-40GB", "A100-40GB"},
		{"NVIDIA A100 80GB PCIe", "A100-80GB"},
		{"NVIDIA A100-SXM4-80GB", "A100-80GB"},
		{"NVIDIA H100 80GB HBM3", "H100-80GB"},
		{"NVIDIA H100 PCIe", "H100-80GB"},
		{"nvidia h100 80gb hbm3", "H100-80GB"},
		{"NVIDIA H200", "H200-141GB"},
		{"NVIDIA H200 NVL", "H200-141GB"},
		{"NVIDIA H100 NVL", ""},
		{"NVIDIA GH200 480GB", ""},
		{"NVIDIA L4", ""},
		{"Tesla T4", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.product, func(t *testing.T) {
			m, ok := ForModel(tt.product)
			if tt.want == "" {
				if ok {
					t.Fatalf("ForModel(%q) = %s, want no table", tt.product, m.Name)
				}
				return
			}
			if !ok || m.Name != tt.want {
				t.Fatalf("ForModel(%q) = %v, %v; want %s", tt.product, m, ok, tt.want)
			}
		})
	}
}

func TestTablesAreConsistent(t *testing.T) {
	for _, m := range Models() {
		t.Run(m.Name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, p := range m.Profiles {
				if seen[p.Name] {
					t.Errorf("%s listed twice", p.Name)
				}
				seen[p.Name] = true
				if !strings.HasPrefix(p.Name, string(rune('0'+p.ComputeSlices))+"g.") {
					t.Errorf("%s: %d compute slices do not match its name", p.Name, p.ComputeSlices)
				}
				if p.Media != strings.HasSuffix(p.Name, "+me") {
					t.Errorf("%s: Media=%v does not match its name", p.Name, p.Media)
				}
				if p.MemoryMiB == 0 || p.MemoryMiB > m.MemoryTotalMiB {
					t.Errorf("%s: %d MiB outside (0, %d]", p.Name, p.MemoryMiB, m.MemoryTotalMiB)
				}
				if p.MaxInstances*p.ComputeSlices > ComputeSlicesPerGPU || p.MaxInstances*p.MemorySlices > MemorySlicesPerGPU {
					t.Errorf("%s: %d instances cannot fit one GPU", p.Name, p.MaxInstances)
				}
				if p.SMs > m.SMs {
					t.Errorf("%s: %d SMs > the GPU's %d", p.Name, p.SMs, m.SMs)
				}
				// MaxInstances of one profile must themselves be a valid layout.
				layout := make([]string, p.MaxInstances)
				for i := range layout {
					layout[i] = p.Name
				}
				if err := m.CheckLayout(layout); err != nil {
					t.Errorf("%d× %s: %v", p.MaxInstances, p.Name, err)
				}
			}
		})
	}
}

func TestReferenceFigures(t *testing.T) {
	tests := []struct {
		product, profile string
		mib              uint64
		sms              int
	}{
		{"NVIDIA A100-SXM4-40GB", "1g.5gb", 4864, 14},
		{"NVIDIA A100-SXM4-40GB", "7g.40gb", 40960, 98},
		{"NVIDIA H100 80GB HBM3", "1g.10gb", 9984, 16},
		{"NVIDIA H100 80GB HBM3", "3g.40gb", 40448, 60},
		{"NVIDIA H100 80GB HBM3", "7g.80gb", 81152, 132},
		{"NVIDIA H200", "1g.18gb", 16384, 16},
		{"NVIDIA H200", "2g.35gb", 33280, 32},
		{"NVIDIA H200", "3g.71gb", 71424, 0},
	}
	for _, tt := range tests {
		m, _ := ForModel(tt.product)
		p, ok := m.Profile(tt.profile)
		if !ok || p.MemoryMiB != tt.mib || p.SMs != tt.sms {
			t.Errorf("%s %s = %+v, %v; want %d MiB, %d SMs", tt.product, tt.profile, p, ok, tt.mib, tt.sms)
		}
	}
}

func TestCheckLayout(t *testing.T) {
	tests := []struct {
		name    string
		product string
		layout  []string
		index   int    // -1: fits
		reason  string // substring of the reason
	}{
		{"empty", "NVIDIA H100 80GB HBM3", nil, -1, ""},
		{"balanced A100-40", "NVIDIA A100-SXM4-40GB", []string{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"}, -1, ""},
		{"all-balanced A100-80", "NVIDIA A100-SXM4-80GB", []string{"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}, -1, ""},
		// The reference notes call this "all-balanced", but two 3g.40gb use all 8 memory slices.
		{"2x3g+1g A100-80", "NVIDIA A100-SXM4-80GB", []string{"3g.40gb", "3g.40gb", "1g.10gb"}, 2, "memory slices"},
		{"all-inference A100-80", "NVIDIA A100-SXM4-80GB", []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, -1, ""},
		{"mixed H100", "NVIDIA H100 80GB HBM3", []string{"3g.40gb", "1g.10gb", "1g.10gb"}, -1, ""},
		{"4g+3g H100", "NVIDIA H100 80GB HBM3", []string{"4g.40gb", "3g.40gb"}, -1, ""},
		{"unknown profile", "NVIDIA H100 80GB HBM3", []string{"1g.10gb", "1g.5gb"}, 1, `no MIG profile "1g.5gb"`},
		{"too many of one", "NVIDIA H100 80GB HBM3", []string{"3g.40gb", "1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb"}, 3, "memory slices"},
		{"max instances", "NVIDIA H200", []string{"1g.18gb+me", "1g.18gb+me"}, 1, "more than 1 instances"},
		{"compute overflow", "NVIDIA H100 80GB HBM3", []string{"4g.40gb", "2g.20gb", "2g.20gb"}, 2, "compute slices"},
		{"memory overflow", "NVIDIA H100 80GB HBM3", []string{"3g.40gb", "3g.40gb", "1g.10gb"}, 2, "memory slices"},
		{"7g alone only", "NVIDIA A100-SXM4-40GB", []string{"7g.40gb", "1g.5gb"}, 1, "slices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := ForModel(tt.product)
			if !ok {
				t.Fatalf("no table for %s", tt.product)
			}
			err := m.CheckLayout(tt.layout)
			if tt.index < 0 {
				if err != nil {
					t.Fatalf("CheckLayout(%v) = %v, want fit", tt.layout, err)
				}
				return
			}
			var le *LayoutError
			if !errors.As(err, &le) {
				t.Fatalf("CheckLayout(%v) = %v, want *LayoutError", tt.layout, err)
			}
			if le.Index != tt.index || !strings.Contains(le.Reason, tt.reason) {
				t.Fatalf("CheckLayout(%v) = index %d %q; want index %d containing %q", tt.layout, le.Index, le.Reason, tt.index, tt.reason)
			}
		})
	}
}

func TestForModelReturnsCopies(t *testing.T) {
	a, _ := ForModel("NVIDIA H100 80GB HBM3")
	a.Profiles[0].MemoryMiB = 1
	b, _ := ForModel("NVIDIA H100 80GB HBM3")
	if b.Profiles[0].MemoryMiB == 1 {
		t.Fatal("a caller's change leaked into the table")
	}
}
