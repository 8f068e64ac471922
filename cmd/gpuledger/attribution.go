package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/attribution/kubeletsim"
	"github.com/gpuledger/gpuledger/collector/sim"
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
func (f *attributionFlags) newClient(logger *slog.Logger) (*attribution.Client, error) {
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
	})
}

// simulatedKubelet serves the pods of a simulated node on a pod-resources socket,
// with a fake procfs and pod log directory for process accounting, and points f
// at them, so the simulated node runs through the real client path.
type simulatedKubelet struct {
	server *kubeletsim.Server
	dir    string
}

func startSimulatedKubelet(b *sim.Backend, f *attributionFlags) (*simulatedKubelet, error) {
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	k := &simulatedKubelet{dir: dir}
	k.server, err = kubeletsim.Start(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		k.stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	allocs, allocatable := b.Pods()
	k.server.SetPods(kubeletPods(allocs))
	var devs []kubeletsim.Devices
	for _, a := range allocatable {
		devs = append(devs, kubeletsim.Devices{Resource: a.Resource, IDs: a.DeviceIDs})
	}
	k.server.SetAllocatable(devs)
	procfs, logs := filepath.Join(dir, "proc"), filepath.Join(dir, "pods")
	if err := b.WriteProcFS(procfs, logs); err != nil {
		k.stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	f.enabled, f.processAccounting = true, true
	f.socket, f.procfs, f.podLogsDir = k.server.Path(), procfs, logs
	return k, nil
}

func (k *simulatedKubelet) stop() {
	if k.server != nil {
		k.server.Stop()
	}
	os.RemoveAll(k.dir)
}

// kubeletPods groups the simulated allocations by pod and container.
func kubeletPods(allocs []sim.Allocation) []kubeletsim.Pod {
	var pods []kubeletsim.Pod
	podIndex := map[[2]string]int{}
	for _, a := range allocs {
		pk := [2]string{a.Namespace, a.Pod}
		i, ok := podIndex[pk]
		if !ok {
			i = len(pods)
			podIndex[pk] = i
			pods = append(pods, kubeletsim.Pod{Namespace: a.Namespace, Name: a.Pod})
		}
		p := &pods[i]
		c := -1
		for j := range p.Containers {
			if p.Containers[j].Name == a.Container {
				c = j
			}
		}
		if c < 0 {
			c = len(p.Containers)
			p.Containers = append(p.Containers, kubeletsim.Container{Name: a.Container})
		}
		p.Containers[c].Devices = append(p.Containers[c].Devices, kubeletsim.Devices{Resource: a.Resource, IDs: a.DeviceIDs})
	}
	return pods
}
