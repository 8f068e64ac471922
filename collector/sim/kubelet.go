package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/attribution/kubeletsim"
)

// Kubelet is the simulated node's kubelet: a pod-resources v1 server on a unix
// socket serving the scenario's pods, and a procfs and pod log directory in
// which the scenario's processes run in those pods. The real attribution client
// and process resolver read them like a real node's.
//
// What it serves follows the scenario at the time last given to Sync: the pods
// and jobs running then, their processes, and, inside a `kubelet: down` window,
// no answer at all (every call fails with Unavailable, at once). A Kubelet from
// StartKubelet syncs itself to the wall clock at every change and writes its
// procfs and pod log directory to disk, for an exporter process; one from
// StartVirtualKubelet changes only when its owner calls Sync with virtual times
// and keeps them in memory (Files). Its methods are safe for concurrent use.
type Kubelet struct {
	Socket     string // pod-resources socket
	ProcRoot   string // fake procfs (--path.procfs)
	PodLogsDir string // fake pod log directory (--attribution.pod-logs-dir)

	backend *Backend
	server  *kubeletsim.Server
	tree    kubeletsim.Tree   // where ProcRoot and PodLogsDir are written
	mem     *kubeletsim.MemFS // the tree when in memory, else nil
	dir     string
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when the follower ends; nil without one

	stopOnce sync.Once
	mu       sync.Mutex
	written  map[string]podEntry // by podEntry.key: entries whose files are written
	pods     *attribution.MemoryPods
}

// errKubeletDown is the answer of a simulated kubelet that is down.
var errKubeletDown = status.Error(codes.Unavailable, "simulated kubelet is down (scenario event)")

// StartKubelet serves b's pods under a new temporary directory, following the
// wall clock: it fixes b's start at now unless Options.Start did, and updates
// what it serves at every change the scenario makes. Call it before the first
// Sample. Stop ends it and removes the directory.
func StartKubelet(b *Backend) (*Kubelet, error) {
	if !b.started {
		b.pin(time.Now().UnixNano())
	}
	k, err := startKubelet(b, time.Now(), kubeletsim.HostTree{})
	if err != nil {
		return nil, err
	}
	k.done = make(chan struct{})
	go k.follow()
	return k, nil
}

// StartVirtualKubelet serves b's pods as they are at b's start, on a socket
// in a new temporary directory, with its procfs and pod log directory in
// memory (Files), until the next Sync. b's start must be fixed
// (Options.Start). Stop ends it and removes the directory.
func StartVirtualKubelet(b *Backend) (*Kubelet, error) {
	if !b.started {
		return nil, fmt.Errorf("simulated kubelet in virtual time: the backend has no start time")
	}
	mem := kubeletsim.NewMemFS()
	k, err := startKubelet(b, time.Unix(0, b.start), mem)
	if err != nil {
		return nil, err
	}
	k.mem = mem
	return k, nil
}

// Files is what a process resolver reads ProcRoot and PodLogsDir from: nil
// (the host's files) for a Kubelet from StartKubelet, memory for one from
// StartVirtualKubelet.
func (k *Kubelet) Files() attribution.Files {
	if k.mem == nil {
		return nil
	}
	return k.mem
}

func startKubelet(b *Backend, at time.Time, tree kubeletsim.Tree) (*Kubelet, error) {
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "gl")
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	k := &Kubelet{
		backend: b, tree: tree, dir: dir, stop: make(chan struct{}), written: map[string]podEntry{},
		pods:     attribution.NewMemoryPods(&attribution.PodView{}),
		ProcRoot: filepath.Join(dir, "proc"), PodLogsDir: filepath.Join(dir, "pods"),
	}
	if k.server, err = kubeletsim.Start(filepath.Join(dir, "kubelet.sock")); err != nil {
		k.Stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	k.Socket = k.server.Path()
	// PID 1 is the host's init, in no pod: procfs shows the host PID namespace.
	if err := kubeletsim.WriteHostInit(tree, k.ProcRoot); err != nil {
		k.Stop()
		return nil, fmt.Errorf("simulated kubelet: %w", err)
	}
	if err := k.Sync(at); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// Sync makes the kubelet serve the scenario as it is at t: the pods running then
// (and their processes and log directories), or no answer while the kubelet is
// down.
func (k *Kubelet) Sync(t time.Time) error {
	since := t.UnixNano() - k.backend.start
	running := k.backend.running(since)
	down := k.backend.KubeletDown(t)

	now := make(map[string]bool, len(running))
	for i := range running {
		now[running[i].key()] = true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.written {
		if !now[key] {
			if err := removeEntry(k.tree, k.ProcRoot, k.PodLogsDir, &e); err != nil {
				return fmt.Errorf("simulated kubelet: %w", err)
			}
			delete(k.written, key)
		}
	}
	for i := range running {
		e := &running[i]
		if _, ok := k.written[e.key()]; !ok {
			if err := writeEntry(k.tree, k.ProcRoot, k.PodLogsDir, e); err != nil {
				return fmt.Errorf("simulated kubelet: %w", err)
			}
			k.written[e.key()] = *e
		}
	}
	k.server.SetPods(kubeletPods(k.backend.allocations(running)))
	k.pods.Set(k.backend.podView(running))
	// A MIG reconfiguration changes what the device plugin advertises.
	avail := k.backend.allocatable(since)
	devs := make([]kubeletsim.Devices, 0, len(avail))
	for _, a := range avail {
		devs = append(devs, kubeletsim.Devices{Resource: a.Resource, IDs: a.DeviceIDs})
	}
	k.server.SetAllocatable(devs)
	var err error
	if down {
		err = errKubeletDown
	}
	k.server.SetError(err)
	return nil
}

// follow syncs the kubelet at every change of the scenario, on the wall clock,
// until Stop.
func (k *Kubelet) follow() {
	defer close(k.done)
	for {
		next, ok := k.backend.NextKubeletChange(time.Now())
		if !ok {
			<-k.stop
			return
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-k.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		// A failed write leaves the files as they were; the next change retries.
		_ = k.Sync(time.Now())
	}
}

// Pods is what a watch of the node's pods sees: the running pods, with the
// labels and annotations HAMi and KAI-Scheduler put on theirs, as of the
// last Sync. The API server, unlike the kubelet, answers while the kubelet is
// down.
func (k *Kubelet) Pods() attribution.PodSource { return k.pods }

// Stop stops the server and the follower and removes the files.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		close(k.stop)
		if k.done != nil {
			<-k.done
		}
		if k.server != nil {
			k.server.Stop()
		}
		os.RemoveAll(k.dir)
	})
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
