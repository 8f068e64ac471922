package nvml

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/gputally/gputally/collector"
)

// TestRealNVML reads the machine's GPUs through libnvidia-ml.so.1. It runs only
// with GPUTALLY_NVML_TEST=1 (on a GPU machine) and checks the formats of what
// the driver reports; it logs the inventory and two samples.
func TestRealNVML(t *testing.T) {
	if os.Getenv("GPUTALLY_NVML_TEST") != "1" {
		t.Skip("set GPUTALLY_NVML_TEST=1 on a machine with an NVIDIA GPU")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.GPUs) == 0 {
		t.Fatal("no GPUs")
	}
	pci := regexp.MustCompile(`^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$`)
	profile := regexp.MustCompile(`^[1-7]g\.[0-9]+gb([+-].+)?$`)
	t.Logf("driver %s", inv.DriverVersion)
	for _, g := range inv.GPUs {
		t.Logf("GPU %+v", g)
		if !pci.MatchString(g.PCIBusID) || len(g.UUID) < 8 || g.UUID[:4] != "GPU-" || g.Model == "" || g.MemoryTotalMiB == 0 {
			t.Errorf("GPU %d: %+v", g.Index, g)
		}
		for _, in := range g.Instances {
			if !profile.MatchString(in.Profile) || in.UUID[:4] != "MIG-" || in.ComputeSlices == 0 || in.MemorySlices == 0 {
				t.Errorf("MIG instance %+v", in)
			}
		}
	}
	errs := countErrs{}
	for i := range 2 {
		s := newSample(inv, time.Now())
		if err := b.Sample(context.Background(), s.Time, s, errs); err != nil {
			t.Fatal(err)
		}
		for j, r := range s.GPUs {
			var present []string
			for f := range collector.NumFields {
				if x, ok := r.Values.Get(f); ok {
					present = append(present, fmt.Sprintf("%d=%g", f, x))
				}
			}
			t.Logf("sample %d GPU %d: lost %v healthy %v %v processes %+v instances %+v", i, j, r.Lost, r.Healthy, present, r.Processes, r.Instances)
		}
		time.Sleep(time.Second) // real hardware: let the counters move
	}
	if len(errs) != 0 {
		t.Errorf("read errors: %v", errs)
	}
}
