package main

import (
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector"
	"github.com/gputally/gputally/collector/sim"
)

// draFlags configure the attribution of GPUs handed out by DRA drivers.
type draFlags struct {
	enabled    bool
	drivers    []string
	kubeconfig string
}

func (f *draFlags) register(cmd *kingpin.CmdClause) {
	cmd.Flag("attribution.dra.enabled", "Map GPUs of DRA claims to pods through the node's ResourceSlices (needs API access: a service-account token with get/list/watch on resourceslices, or --kubeconfig).").BoolVar(&f.enabled)
	cmd.Flag("attribution.dra.driver", "DRA driver whose devices are GPUs; repeatable.").Default(attribution.DefaultDRADriver).StringsVar(&f.drivers)
	cmd.Flag("kubeconfig", "Kubeconfig file (its current context) for the API server when running out of cluster; empty: the in-cluster service account.").StringVar(&f.kubeconfig)
}

// sliceSource returns where DRA devices are looked up: the node's ResourceSlices
// through the API server when enabled; the simulated node's own slices, in
// process, on the simulated backend; else nil (DRA claims stay unmapped).
func (f *draFlags) sliceSource(backend collector.Backend, node string, logger *slog.Logger) (attribution.SliceSource, error) {
	if f.enabled {
		w, err := attribution.NewSliceWatcher(attribution.SliceWatcherConfig{
			Kubeconfig: f.kubeconfig, NodeName: node, Drivers: f.drivers, Logger: logger,
		})
		if err != nil {
			return nil, badInput(fmt.Errorf("--attribution.dra.enabled: %w", err))
		}
		return w, nil
	}
	if simulated, ok := backend.(*sim.Backend); ok {
		return attribution.NewStaticSlices(f.drivers, simulated.ResourceSlices()), nil
	}
	return nil, nil
}
