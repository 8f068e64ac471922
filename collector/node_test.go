package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/gputally/gputally/attribution"
)

// bigNode is the design's budget node: 8 H100s with 7 MIG instances (1g.10gb)
// each, and one container holding each of the 56 instances.
type bigNode struct{ inv Inventory }

func newBigNode() *bigNode {
	n := &bigNode{inv: Inventory{DriverVersion: "550.90.07"}}
	for i := range 8 {
		g := GPU{Index: i, Minor: i, UUID: fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i),
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i), Model: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: 81559, MIGEnabled: true}
		for j := range 7 {
			g.Instances = append(g.Instances, MIGInstance{UUID: fmt.Sprintf("MIG-00000000-0000-0000-%04d-%012d", i, j),
				GPUInstanceID: 7 + j, Profile: "1g.10gb", ComputeSlices: 1, MemorySlices: 1, MemoryTotalMiB: 9984})
		}
		n.inv.GPUs = append(n.inv.GPUs, g)
	}
	return n
}

func (n *bigNode) Name() string                                 { return "fake" }
func (n *bigNode) Inventory(context.Context) (Inventory, error) { return n.inv, nil }
func (n *bigNode) Close() error                                 { return nil }

func (n *bigNode) Sample(_ context.Context, now time.Time, s *Sample, _ ErrorCounter) error {
	x := float64(now.Unix() % 100)
	for i := range s.GPUs {
		v := &s.GPUs[i].Values
		v.Set(PowerUsage, 300+x)
		v.Set(GPUTemp, 60)
		v.Set(MemoryTemp, 70)
		v.Set(TotalEnergy, 1e9+x)
		v.Set(SMClock, 1980)
		v.Set(MemClock, 2619)
		v.Set(PCIeReplay, 0)
		v.Set(ECCSBEVolatile, 0)
		v.Set(ECCDBEVolatile, 0)
		v.Set(PowerViolation, 0)
		v.Set(ThermalViolation, 0)
		v.Set(XIDLast, 0)
		for j := range s.GPUs[i].Instances {
			in := &s.GPUs[i].Instances[j]
			in.Set(FBUsed, 4000+x)
			in.Set(FBFree, 5984-x)
			in.Set(FBReserved, 0)
			in.Set(GREngineActive, x/100)
			in.Set(SMActive, x/120)
			in.Set(TensorActive, x/200)
			in.Set(DRAMActive, x/150)
		}
	}
	return nil
}

// holders gives each MIG instance of the node to one container.
func (n *bigNode) holders() *attribution.Snapshot {
	snap := &attribution.Snapshot{Up: true, LastSuccess: t0, Holders: map[string][]attribution.Holder{}}
	for i, g := range n.inv.GPUs {
		for j, in := range g.Instances {
			snap.Holders[in.UUID] = []attribution.Holder{{
				Namespace: fmt.Sprintf("team-%d", j), Pod: fmt.Sprintf("infer-%d-%d", i, j), Container: "server",
				Resource: "nvidia.com/mig-1g.10gb", Sharing: attribution.MIG, Replicas: 1, Share: 1,
			}}
		}
	}
	return snap
}
