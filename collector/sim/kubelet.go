package sim

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuledger/gpuledger/attribution/kubeletsim"
)

// Kubelet is the simulated node's kubelet: a pod-resources v1 server on a unix
// socket serving the scenario's pods, and a procfs and pod log directory in
// which the scenario's processes run in those pods. The real attribution client
// and process resolver read them like a real node's.
type Kubelet struct {
	Socket     string // pod-resources socket
	ProcRoot   string // fake procfs (--path.procfs)
	PodLogsDir string // fake pod log directory (--attribution.pod-logs-dir)

	server *kubeletsim.Server
	dir    string
}

// StartKubelet serves b's pods under a new temporary directory. Stop removes it.
func StartKubelet(b *Backend) (*Kubelet, error) {
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	k := &Kubelet{dir: dir, ProcRoot: filepath.Join(dir, "proc"), PodLogsDir: filepath.Join(dir, "pods")}
	if k.server, err = kubeletsim.Start(filepath.Join(dir, "kubelet.sock")); err != nil {
		k.Stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	k.Socket = k.server.Path()
	allocs, allocatable := b.Pods()
	k.server.SetPods(kubeletPods(allocs))
	devs := make([]kubeletsim.Devices, 0, len(allocatable))
	for _, a := range allocatable {
		devs = append(devs, kubeletsim.Devices{Resource: a.Resource, IDs: a.DeviceIDs})
	}
	k.server.SetAllocatable(devs)
	if err := b.WriteProcFS(k.ProcRoot, k.PodLogsDir); err != nil {
		k.Stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	return k, nil
}

// Stop stops the server and removes its files.
func (k *Kubelet) Stop() {
	if k.server != nil {
		k.server.Stop()
	}
	os.RemoveAll(k.dir)
}

// kubeletPods groups allocations by pod and container, as List reports them.
func kubeletPods(allocs []Allocation) []kubeletsim.Pod {
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
		if a.Claim != "" {
			p.Containers[c].Claims = append(p.Containers[c].Claims, kubeletClaim(a))
			continue
		}
		p.Containers[c].Devices = append(p.Containers[c].Devices, kubeletsim.Devices{Resource: a.Resource, IDs: a.DeviceIDs})
	}
	return pods
}
