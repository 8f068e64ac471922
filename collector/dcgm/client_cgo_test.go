//go:build cgo

package dcgm

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gputally/gputally/collector"
)

// TestFieldIDsMatchGoDCGM keeps the package's DCGM ids and blanks equal to go-dcgm's.
func TestFieldIDsMatchGoDCGM(t *testing.T) {
	ids := map[uint16]godcgm.Short{
		fiDevName: godcgm.DCGM_FI_DEV_NAME, fiDevNVMLIndex: godcgm.DCGM_FI_DEV_NVML_INDEX,
		fiDevUUID: godcgm.DCGM_FI_DEV_UUID, fiDevMinorNumber: godcgm.DCGM_FI_DEV_MINOR_NUMBER,
		fiDevMIGMode: godcgm.DCGM_FI_DEV_MIG_MODE, fiDevSMClock: godcgm.DCGM_FI_DEV_SM_CLOCK,
		fiDevMemClock: godcgm.DCGM_FI_DEV_MEM_CLOCK, fiDevMemoryTemp: godcgm.DCGM_FI_DEV_MEMORY_TEMP,
		fiDevGPUTemp: godcgm.DCGM_FI_DEV_GPU_TEMP, fiDevPowerUsage: godcgm.DCGM_FI_DEV_POWER_USAGE,
		fiDevTotalEnergy: godcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, fiDevPCIeReplay: godcgm.DCGM_FI_DEV_PCIE_REPLAY_COUNTER,
		fiDevGPUUtil: godcgm.DCGM_FI_DEV_GPU_UTIL, fiDevMemCopyUtil: godcgm.DCGM_FI_DEV_MEM_COPY_UTIL,
		fiDevXIDErrors: godcgm.DCGM_FI_DEV_XID_ERRORS, fiDevPowerViolation: godcgm.DCGM_FI_DEV_POWER_VIOLATION,
		fiDevThermalViolation: godcgm.DCGM_FI_DEV_THERMAL_VIOLATION, fiDevFBTotal: godcgm.DCGM_FI_DEV_FB_TOTAL,
		fiDevFBFree: godcgm.DCGM_FI_DEV_FB_FREE, fiDevFBUsed: godcgm.DCGM_FI_DEV_FB_USED,
		fiDevFBReserved: godcgm.DCGM_FI_DEV_FB_RESERVED, fiDevECCSBEVolTotal: godcgm.DCGM_FI_DEV_ECC_SBE_VOL_TOTAL,
		fiDevECCDBEVolTotal: godcgm.DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, fiProfGREngineActive: godcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE,
		fiProfSMActive: godcgm.DCGM_FI_PROF_SM_ACTIVE, fiProfTensorActive: godcgm.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,
		fiProfDRAMActive: godcgm.DCGM_FI_PROF_DRAM_ACTIVE,
	}
	for ours, theirs := range ids {
		if ours != uint16(theirs) {
			t.Errorf("field id %d; go-dcgm has %d", ours, theirs)
		}
	}
	for _, s := range specs {
		if id, ok := godcgm.GetFieldID(s.dcgm); !ok || uint16(id) != s.id {
			t.Errorf("%s: id %d; go-dcgm has %d (%v)", s.dcgm, s.id, id, ok)
		}
	}
	if int64(int32Blank) != godcgm.DCGM_FT_INT32_BLANK || int64(int64Blank) != godcgm.DCGM_FT_INT64_BLANK || fp64Blank != godcgm.DCGM_FT_FP64_BLANK {
		t.Error("blank values differ from go-dcgm's")
	}
	groups := map[entityGroup]godcgm.Field_Entity_Group{groupGPU: godcgm.FE_GPU, groupGPUInstance: godcgm.FE_GPU_I, groupComputeInstance: godcgm.FE_GPU_CI}
	for ours, theirs := range groups {
		if uint(ours) != uint(theirs) {
			t.Errorf("entity group %d; go-dcgm has %d", ours, theirs)
		}
	}
}

// TestNewWithoutLibrary runs the real constructor where libdcgm is absent
// (this is safe in-process: the library fails to load before any DCGM call).
func TestNewWithoutLibrary(t *testing.T) {
	if probeLibrary() == nil {
		t.Skip("libdcgm.so.4 is installed here")
	}
	for _, hostengine := range []string{"", "localhost:5555"} {
		b, err := New(Options{Hostengine: hostengine})
		if err == nil {
			b.Close()
			t.Fatalf("New(%q) succeeded without libdcgm", hostengine)
		}
		if !errors.Is(err, ErrLibraryNotFound) {
			t.Errorf("New(%q): %v; want ErrLibraryNotFound", hostengine, err)
		}
		for _, want := range []string{"libdcgm.so.4", "--backend=nvml", "--backend=sim"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("New(%q): %q does not name %q", hostengine, err, want)
			}
		}
	}
	// go-dcgm's own Init fails cleanly too, so a probe race cannot crash.
	if _, err := godcgm.Init(godcgm.Embedded); err == nil {
		t.Error("go-dcgm Init succeeded without libdcgm")
	}
}

func TestBadHostengineAddress(t *testing.T) {
	if _, err := New(Options{Hostengine: "no-port"}); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("New: %v; want an error asking for HOST:PORT", err)
	}
}

// TestRealDCGM runs the backend against a real DCGM when asked to:
// GPUTALLY_TEST_DCGM=embedded, or GPUTALLY_TEST_DCGM=HOST:PORT of an nv-hostengine.
func TestRealDCGM(t *testing.T) {
	target := os.Getenv("GPUTALLY_TEST_DCGM")
	if target == "" {
		t.Skip("set GPUTALLY_TEST_DCGM=embedded or HOST:PORT to test against a real DCGM")
	}
	opts := Options{Hostengine: target}
	if target == "embedded" {
		opts.Hostengine = ""
	}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	inv, err := b.Inventory(context.Background())
	if err != nil || len(inv.GPUs) == 0 {
		t.Fatalf("Inventory: %d GPUs, %v", len(inv.GPUs), err)
	}
	for _, g := range inv.GPUs {
		t.Logf("GPU %d %s %s %s %d MiB MIG=%v", g.Index, g.UUID, g.PCIBusID, g.Model, g.MemoryTotalMiB, g.MIGEnabled)
		if !strings.HasPrefix(g.UUID, "GPU-") || g.Model == "" {
			t.Errorf("GPU %d: UUID %q, model %q", g.Index, g.UUID, g.Model)
		}
		for _, m := range g.Instances {
			t.Logf("  GI %d %s %s", m.GPUInstanceID, m.Profile, m.UUID)
		}
	}
	s := collector.Sample{GPUs: make([]collector.GPUReading, len(inv.GPUs))}
	for i, g := range inv.GPUs {
		s.GPUs[i].Instances = make([]collector.Values, len(g.Instances))
	}
	errs := errCounts{}
	if err := b.Sample(context.Background(), time.Now(), &s, errs); err != nil {
		t.Fatal(err)
	}
	for i, r := range s.GPUs {
		temp, ok := r.Values.Get(collector.GPUTemp)
		power, _ := r.Values.Get(collector.PowerUsage)
		t.Logf("GPU %d: temp %v (%v) power %v W healthy %v lost %v", i, temp, ok, power, r.Healthy, r.Lost)
		if !ok && !r.Lost {
			t.Errorf("GPU %d: no temperature", i)
		}
	}
	t.Logf("errors: %v", errs)
}
