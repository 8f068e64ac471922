package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/dcgm"
	"github.com/gputally/gputally/collector/sim"
)

// backendFlags choose and configure the Backend.
type backendFlags struct {
	kind       string
	scenario   string
	seed       int64
	hostengine string
}

func (f *backendFlags) register(cmd *kingpin.CmdClause) {
	cmd.Flag("backend", "Where GPU readings come from: auto (DCGM, then NVML), nvml, dcgm or sim (a simulated node).").
		Default("auto").EnumVar(&f.kind, "auto", "nvml", "dcgm", "sim")
	cmd.Flag("sim.scenario", "Scenario YAML of the simulated node (--backend=sim); empty: the built-in scenario.").StringVar(&f.scenario)
	cmd.Flag("sim.seed", "Seed of the simulated workloads; 0: the scenario's.").Int64Var(&f.seed)
	cmd.Flag("dcgm.hostengine", "HOST:PORT of a running nv-hostengine; empty: DCGM embedded in this process.").StringVar(&f.hostengine)
}

// open returns the chosen backend. A missing GPU library is a usageError.
func (f *backendFlags) open(_ context.Context, interval time.Duration, logger *slog.Logger) (collector.Backend, error) {
	switch f.kind {
	case "sim":
		sc, err := loadScenario(f.scenario)
		if err != nil {
			return nil, err
		}
		b, err := sim.New(sc, sim.Options{Seed: f.seed})
		if err != nil {
			return nil, badInput(err)
		}
		return b, nil
	case "nvml":
		return openNVML(logger)
	case "dcgm":
		b, err := f.openDCGM(interval, logger)
		if errors.Is(err, dcgm.ErrLibraryNotFound) {
			return nil, badInput(fmt.Errorf("--backend=dcgm: %w", err))
		}
		return b, err
	default:
		return openAuto(func() (collector.Backend, error) { return f.openDCGM(interval, logger) },
			func() (collector.Backend, error) { return nvmlBackend(logger) }, logger)
	}
}

func (f *backendFlags) openDCGM(interval time.Duration, logger *slog.Logger) (collector.Backend, error) {
	return dcgm.New(dcgm.Options{Hostengine: f.hostengine, Interval: interval, Logger: logger})
}

// openAuto prefers DCGM (profiling fields, per-MIG activity), then NVML, and
// says which it chose and why. It never opens NVML once DCGM opened.
func openAuto(openDCGM, openNVML func() (collector.Backend, error), logger *slog.Logger) (collector.Backend, error) {
	b, dcgmErr := openDCGM()
	if dcgmErr == nil {
		logger.Info("backend auto: using DCGM", "reason", "libdcgm.so.4 loaded")
		return b, nil
	}
	n, nvmlErr := openNVML()
	if nvmlErr == nil {
		logger.Info("backend auto: using NVML", "reason", "DCGM unavailable", "dcgm_err", dcgmErr)
		return n, nil
	}
	err := fmt.Errorf("--backend=auto found no GPU library: DCGM: %v; NVML: %w; run with --backend=sim for a simulated node", dcgmErr, nvmlErr)
	return nil, badInput(err)
}

func openNVML(logger *slog.Logger) (collector.Backend, error) {
	b, err := nvmlBackend(logger)
	if err != nil {
		// Any NVML start failure (no library, no driver, no device access) is a
		// setup problem of the node, not a fault while running.
		return nil, badInput(fmt.Errorf("--backend=nvml: %w", err))
	}
	return b, nil
}
