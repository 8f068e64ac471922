// Package mig holds the Multi-Instance GPU profile tables of the NVIDIA GPUs that
// support MIG (A100 40GB and 80GB, H100 80GB, H200 141GB): per profile its compute
// slices (of 7), memory slices (of 8), memory, SM count and how many instances of it
// fit, and a check that a layout of profiles fits one GPU.
//
// The numbers come from NVIDIA documentation and real `nvidia-smi mig -lgip` output
// (see the project's reference notes). The package is pure Go, has no dependencies and
// its tables are read-only: everything in it is safe for concurrent use.
package mig

import (
	"fmt"
	"strings"
)

// Slices of one GPU: compute comes in sevenths, memory in eighths.
const (
	ComputeSlicesPerGPU = 7
	MemorySlicesPerGPU  = 8
)

// Profile is one GPU instance profile, e.g. "3g.40gb".
type Profile struct {
	Name          string // as in `nvidia-smi mig -lgip` and `nvidia.com/mig-<name>`
	ComputeSlices int    // of ComputeSlicesPerGPU
	MemorySlices  int    // of MemorySlicesPerGPU
	MemoryMiB     uint64 // framebuffer of one instance, MiB
	MaxInstances  int    // how many instances of this profile one GPU holds at most
	SMs           int    // streaming multiprocessors of one instance; 0 when not known
	Media         bool   // a "+me" profile: it owns the GPU's media engines
}

// Model is the MIG table of one GPU model.
type Model struct {
	Name           string // short name, e.g. "H100-80GB"
	MemoryTotalMiB uint64 // framebuffer of the whole GPU, MiB
	SMs            int    // SMs of the whole GPU
	Profiles       []Profile
}

// Profile returns the profile called name and whether the model has it.
func (m *Model) Profile(name string) (Profile, bool) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// ProfileNames returns the model's profile names in table order.
func (m *Model) ProfileNames() []string {
	names := make([]string, len(m.Profiles))
	for i, p := range m.Profiles {
		names[i] = p.Name
	}
	return names
}

// LayoutError says why a layout does not fit a GPU. Index is the position in the
// layout of the first profile that does not fit.
type LayoutError struct {
	Index  int
	Reason string
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("profile %d: %s", e.Index, e.Reason)
}

// CheckLayout reports whether the MIG instances named by layout fit on one GPU of
// the model together: every profile exists, no profile exceeds its maximum number of
// instances, and the compute and memory slices they use add up to no more than
// ComputeSlicesPerGPU and MemorySlicesPerGPU. It returns a *LayoutError naming the
// first profile that does not fit, or nil.
//
// It does not model NVIDIA's placement rules beyond those sums and counts.
func (m *Model) CheckLayout(layout []string) error {
	count := make(map[string]int, len(layout))
	compute, memory := 0, 0
	for i, name := range layout {
		p, ok := m.Profile(name)
		if !ok {
			return &LayoutError{Index: i, Reason: fmt.Sprintf("%s has no MIG profile %q (known: %s)",
				m.Name, name, strings.Join(m.ProfileNames(), ", "))}
		}
		count[name]++
		if count[name] > p.MaxInstances {
			return &LayoutError{Index: i, Reason: fmt.Sprintf("more than %d instances of %s on one %s",
				p.MaxInstances, name, m.Name)}
		}
		compute += p.ComputeSlices
		memory += p.MemorySlices
		if compute > ComputeSlicesPerGPU {
			return &LayoutError{Index: i, Reason: fmt.Sprintf("%s needs %d compute slices in all, a GPU has %d",
				name, compute, ComputeSlicesPerGPU)}
		}
		if memory > MemorySlicesPerGPU {
			return &LayoutError{Index: i, Reason: fmt.Sprintf("%s needs %d memory slices in all, a GPU has %d",
				name, memory, MemorySlicesPerGPU)}
		}
	}
	return nil
}

// ForModel returns a fresh copy of the MIG table for a GPU product name as NVML reports it (the
// `modelName` label), e.g. "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
// "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe" or "NVIDIA H200". The match ignores
// case. It returns false for GPUs without MIG and for MIG GPUs whose table this
// package lacks (H100 NVL 94GB, GH200).
func ForModel(modelName string) (*Model, bool) {
	n := strings.ToUpper(modelName)
	switch {
	case strings.Contains(n, "GH200"):
		return nil, false
	case strings.Contains(n, "H200"):
		return h200(), true
	case strings.Contains(n, "H100") && !strings.Contains(n, "NVL") && !strings.Contains(n, "94GB") && !strings.Contains(n, "96GB"):
		return h100(), true
	case strings.Contains(n, "A100") && strings.Contains(n, "80GB"):
		return a100x80(), true
	case strings.Contains(n, "A100") && strings.Contains(n, "40GB"):
		return a100x40(), true
	}
	return nil, false
}

// Models returns the MIG tables of every model the package knows. Each call returns
// fresh values the caller may modify.
func Models() []*Model {
	return []*Model{a100x40(), a100x80(), h100(), h200()}
}
