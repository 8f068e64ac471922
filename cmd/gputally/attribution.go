package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gputally/gputally/attribution"
)

// attributionFlags configure the kubelet pod-resources client.
type attributionFlags struct {
	enabled           bool
	socket            string
	interval          time.Duration
	timeout           time.Duration
	staleAfter        time.Duration
	extraResources    []string
	mpsResources      []string
	processAccounting bool
	podLogsDir        string
	procfs            string
	dra               draFlags
	pods              podFlags
}

func (f *attributionFlags) register(cmd *kingpin.CmdClause) {
	cmd.Flag("attribution.enabled", "Map GPUs to pods through the kubelet pod-resources API.").Default("true").BoolVar(&f.enabled)
	cmd.Flag("attribution.kubelet-socket", "Kubelet pod-resources socket.").Default(attribution.DefaultSocket).StringVar(&f.socket)
	cmd.Flag("attribution.interval", "Time between two pod-resources refreshes.").Default(attribution.DefaultInterval.String()).DurationVar(&f.interval)
	cmd.Flag("attribution.timeout", "Limit of one pod-resources refresh.").Default(attribution.DefaultTimeout.String()).DurationVar(&f.timeout)
	cmd.Flag("attribution.stale-after", "Drop pod attribution when the kubelet has not answered for this long.").Default(attribution.DefaultStaleAfter.String()).DurationVar(&f.staleAfter)
	cmd.Flag("attribution.extra-resource", "Extended resource naming GPUs besides nvidia.com/gpu, nvidia.com/gpu.shared and nvidia.com/mig-*; repeatable.").StringsVar(&f.extraResources)
	cmd.Flag("attribution.mps-resource", "Extended resource whose replicas are MPS, not time-slicing; repeatable.").StringsVar(&f.mpsResources)
	cmd.Flag("attribution.process-accounting", "Map GPU processes to pods on shared GPUs (needs hostPID and --path.procfs).").BoolVar(&f.processAccounting)
	cmd.Flag("attribution.pod-logs-dir", "Kubelet pod log directory (<namespace>_<pod>_<uid>), to name the pod of a process.").Default("/var/log/pods").StringVar(&f.podLogsDir)
	cmd.Flag("path.procfs", "procfs mount point.").Default("/proc").StringVar(&f.procfs)
	f.dra.register(cmd)
	f.pods.register(cmd)
}

func (f *attributionFlags) validate() error {
	for name, d := range map[string]time.Duration{
		"--attribution.interval": f.interval, "--attribution.timeout": f.timeout, "--attribution.stale-after": f.staleAfter,
	} {
		if d <= 0 {
			return badInput(fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	return nil
}

// newClient returns the pod-resources client, or nil when attribution is off.
// slices, claims and pods are where DRA devices, the capacity DRA claims
// consumed and the node's pods are read (nil: not).
func (f *attributionFlags) newClient(logger *slog.Logger, slices attribution.SliceSource, claims attribution.ClaimSource, pods attribution.PodSource) (*attribution.Client, error) {
	if !f.enabled {
		return nil, nil
	}
	if _, err := os.Stat(f.socket); err != nil {
		logger.Warn("kubelet pod-resources socket not found; pod attribution waits for it (outside Kubernetes run with --attribution.enabled=false)",
			"socket", f.socket)
	}
	return attribution.New(attribution.Config{
		Socket: f.socket, Interval: f.interval, Timeout: f.timeout, StaleAfter: f.staleAfter,
		ExtraResources: f.extraResources, MPSResources: f.mpsResources, Logger: logger,
		DRADrivers: f.dra.drivers, Slices: slices, Claims: claims, Pods: pods, KAI: f.pods.kai,
	})
}
