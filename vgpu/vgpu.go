// Package vgpu reads what an NVIDIA vGPU guest's GPU name says of the
// physical GPU it is a part of. A guest sees its vGPU type as its GPU's
// name — modelName="GRID A100-10C" in a guest's dcgm-exporter output
// (testdata/real/vks-grid-a100-10c.prom, cncf/k8s-ai-conformance
// v1.36/vks) — not the board's, so a price book keyed by the board's name
// would charge a quarter of an A100 as a whole one.
//
// A vGPU type is named <board>-<framebuffer GB><series letter> (A100-10C:
// 10 GB of an A100 40GB, for compute), or <board>-<compute slices>-<GB>
// <letter> for one backed by a MIG instance (A100-3-20C), after a "GRID "
// or "NVIDIA " prefix. The package knows the boards in boards; everything
// in it is read-only and safe for concurrent use.
package vgpu

import (
	"fmt"
	"regexp"
	"strconv"
)

// Guest is what a vGPU type's name says.
type Guest struct {
	Name string // the modelName, "GRID A100-10C"
	// Physical is the board's name as NVML names the physical GPU, for
	// the price book: "NVIDIA A100 40GB".
	Physical string
	// Part and Whole are the fraction of the board the guest is: its
	// framebuffer of the board's (10 of 40 GB), or, MIG-backed, its
	// compute slices of the 7.
	Part, Whole int
	MIGBacked   bool
}

// Fraction is Part ÷ Whole, 0–1.
func (g Guest) Fraction() float64 { return float64(g.Part) / float64(g.Whole) }

// board is one physical GPU that vGPU types are cut from.
type board struct {
	physical      string
	framebufferGB int
}

// boards are the vGPU boards by the name their types carry: the A100 40GB
// ("A100-10C") and the A100 80GB ("A100D-20C").
var boards = map[string]board{
	"A100":  {"NVIDIA A100 40GB", 40},
	"A100D": {"NVIDIA A100 80GB", 80},
}

// typeName is a vGPU type's name: prefix, board, MIG compute slices
// (optional), framebuffer GB and series letter.
var typeName = regexp.MustCompile(`^(?:GRID|NVIDIA) ([A-Z][A-Z0-9]*)-(?:(\d)-)?(\d+)([ABCQ])$`)

// Parse reports whether modelName is a vGPU type's name and, when it is,
// what it says; the error names a type whose board this package does not
// know or whose size does not fit its board — a guest the caller must not
// price as a whole GPU, nor guess at.
func Parse(modelName string) (Guest, bool, error) {
	m := typeName.FindStringSubmatch(modelName)
	if m == nil {
		return Guest{}, false, nil
	}
	b, ok := boards[m[1]]
	if !ok {
		return Guest{}, true, fmt.Errorf("vGPU type %q: its board %s is none this report knows the size of (A100, A100D)", modelName, m[1])
	}
	gb, _ := strconv.Atoi(m[3])
	g := Guest{Name: modelName, Physical: b.physical, Part: gb, Whole: b.framebufferGB}
	if m[2] != "" {
		g.Part, g.Whole, g.MIGBacked = int(m[2][0]-'0'), 7, true
	}
	if g.Part <= 0 || g.Part > g.Whole {
		return Guest{}, true, fmt.Errorf("vGPU type %q: %d of %d is no part of a %s", modelName, g.Part, g.Whole, b.physical)
	}
	return g, true, nil
}
