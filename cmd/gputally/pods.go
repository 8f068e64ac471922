package main

import (
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector/sim"
)

// podFlags configure the watch of the node's pods that attributes HAMi's and
// KAI-Scheduler's fractional shares of GPUs.
type podFlags struct {
	enabled  bool
	readNode bool
	kai      attribution.KAIConfig
}

func (f *podFlags) register(cmd *kingpin.CmdClause) {
	cmd.Flag("attribution.pods.enabled", "Watch the pods bound to this node for HAMi's and KAI-Scheduler's GPU shares (needs API access: get, list and watch on pods, or --kubeconfig).").BoolVar(&f.enabled)
	cmd.Flag("attribution.pods.read-node", "With the pod watch, read this node's hami.io/node-nvidia-register annotation for the memory and cores HAMi offers (needs get on nodes); without it, NVML's memory and 100 cores.").Default("true").BoolVar(&f.readNode)
	cmd.Flag("attribution.kai.reservation-namespace", "Namespace of KAI-Scheduler's GPU reservation pods (its binder.resourceReservation.namespace).").Default(attribution.DefaultKAIReservationNamespace).StringVar(&f.kai.ReservationNamespace)
	cmd.Flag("attribution.kai.reservation-app", "app label of KAI-Scheduler's GPU reservation pods (its binder.resourceReservation.appLabel).").Default(attribution.DefaultKAIReservationApp).StringVar(&f.kai.ReservationApp)
}

// podSource returns where the node's pods are read: a watch of the API
// server when enabled; the simulated node's pods, in process, on the
// simulated backend (kubelet non-nil); else nil (HAMi's shares unresolved,
// KAI's reservation pods exclusive holders).
func (f *podFlags) podSource(kubelet *sim.Kubelet, kubeconfig, node string, logger *slog.Logger) (attribution.PodSource, error) {
	if f.enabled {
		w, err := attribution.NewPodWatcher(attribution.PodWatcherConfig{
			Kubeconfig: kubeconfig, NodeName: node, ReadNode: f.readNode, Logger: logger,
		})
		if err != nil {
			return nil, badInput(fmt.Errorf("--attribution.pods.enabled: %w", err))
		}
		return w, nil
	}
	if kubelet != nil {
		return kubelet.Pods(), nil
	}
	return nil, nil
}
