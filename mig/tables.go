package mig

// The tables follow the reference notes (nvidia-smi mig -lgip). Where the notes give
// no memory size for a profile, it is derived as memory slices × (GPU memory / 8) MiB,
// rounded down to whole MiB; those entries say "derived". SMs are 0 where the notes
// give none.

// a100x40 is the A100 40GB (SXM4 and PCIe): 40960 MiB, 108 SMs.
func a100x40() *Model {
	return &Model{Name: "A100-40GB", MemoryTotalMiB: 40960, SMs: 108, Profiles: []Profile{
		{Name: "1g.5gb", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 4864, MaxInstances: 7, SMs: 14},   // 4.75 GiB
		{Name: "1g.10gb", ComputeSlices: 1, MemorySlices: 2, MemoryMiB: 10240, MaxInstances: 4, SMs: 14}, // derived
		{Name: "2g.10gb", ComputeSlices: 2, MemorySlices: 2, MemoryMiB: 10240, MaxInstances: 3, SMs: 28}, // derived
		{Name: "3g.20gb", ComputeSlices: 3, MemorySlices: 4, MemoryMiB: 20480, MaxInstances: 2, SMs: 42}, // derived
		{Name: "4g.20gb", ComputeSlices: 4, MemorySlices: 4, MemoryMiB: 20480, MaxInstances: 1, SMs: 56}, // derived
		{Name: "7g.40gb", ComputeSlices: 7, MemorySlices: 8, MemoryMiB: 40960, MaxInstances: 1, SMs: 98}, // derived
	}}
}

// a100x80 is the A100 80GB (SXM4 and PCIe): 81920 MiB, 108 SMs. The notes give no
// memory sizes for it: all are derived.
func a100x80() *Model {
	return &Model{Name: "A100-80GB", MemoryTotalMiB: 81920, SMs: 108, Profiles: []Profile{
		{Name: "1g.10gb", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 10240, MaxInstances: 7, SMs: 14},
		{Name: "1g.10gb+me", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 10240, MaxInstances: 1, SMs: 14, Media: true},
		{Name: "1g.20gb", ComputeSlices: 1, MemorySlices: 2, MemoryMiB: 20480, MaxInstances: 4, SMs: 14},
		{Name: "2g.20gb", ComputeSlices: 2, MemorySlices: 2, MemoryMiB: 20480, MaxInstances: 3, SMs: 28},
		{Name: "3g.40gb", ComputeSlices: 3, MemorySlices: 4, MemoryMiB: 40960, MaxInstances: 2, SMs: 42},
		{Name: "4g.40gb", ComputeSlices: 4, MemorySlices: 4, MemoryMiB: 40960, MaxInstances: 1, SMs: 56},
		{Name: "7g.80gb", ComputeSlices: 7, MemorySlices: 8, MemoryMiB: 81920, MaxInstances: 1, SMs: 98},
	}}
}

// h100 is the H100 80GB (SXM5 "HBM3" and PCIe): 81559 MiB, 132 SMs. Memory sizes
// are the notes' 9.75 / 19.625 / 39.5 / 79.25 GiB.
func h100() *Model {
	return &Model{Name: "H100-80GB", MemoryTotalMiB: 81559, SMs: 132, Profiles: []Profile{
		{Name: "1g.10gb", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 9984, MaxInstances: 7, SMs: 16},
		{Name: "1g.20gb", ComputeSlices: 1, MemorySlices: 2, MemoryMiB: 20096, MaxInstances: 4, SMs: 26},
		{Name: "2g.20gb", ComputeSlices: 2, MemorySlices: 2, MemoryMiB: 20096, MaxInstances: 3, SMs: 32},
		{Name: "3g.40gb", ComputeSlices: 3, MemorySlices: 4, MemoryMiB: 40448, MaxInstances: 2, SMs: 60},
		{Name: "4g.40gb", ComputeSlices: 4, MemorySlices: 4, MemoryMiB: 40448, MaxInstances: 1, SMs: 64},
		{Name: "7g.80gb", ComputeSlices: 7, MemorySlices: 8, MemoryMiB: 81152, MaxInstances: 1, SMs: 132},
	}}
}

// h200 is the H200 141GB: 143771 MiB, 132 SMs. The "+me" profile has the compute
// of 1g.18gb; 7g.141gb's memory is derived.
func h200() *Model {
	return &Model{Name: "H200-141GB", MemoryTotalMiB: 143771, SMs: 132, Profiles: []Profile{
		{Name: "1g.18gb", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 16384, MaxInstances: 7, SMs: 16},
		{Name: "1g.18gb+me", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 16384, MaxInstances: 1, SMs: 16, Media: true},
		{Name: "1g.35gb", ComputeSlices: 1, MemorySlices: 2, MemoryMiB: 33280, MaxInstances: 4},
		{Name: "2g.35gb", ComputeSlices: 2, MemorySlices: 2, MemoryMiB: 33280, MaxInstances: 3, SMs: 32},
		{Name: "3g.71gb", ComputeSlices: 3, MemorySlices: 4, MemoryMiB: 71424, MaxInstances: 2},
		{Name: "4g.71gb", ComputeSlices: 4, MemorySlices: 4, MemoryMiB: 71424, MaxInstances: 1},
		{Name: "7g.141gb", ComputeSlices: 7, MemorySlices: 8, MemoryMiB: 143768, MaxInstances: 1}, // derived
	}}
}
