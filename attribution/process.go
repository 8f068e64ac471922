package attribution

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of ProcessConfig.
const (
	DefaultProcRoot   = "/proc"
	DefaultPodLogsDir = "/var/log/pods"
)

// ProcessConfig configures a ProcessResolver. Zero values take the defaults.
type ProcessConfig struct {
	ProcRoot   string // procfs of the host PID namespace (--path.procfs)
	PodLogsDir string // the kubelet's pod log directory (--attribution.pod-logs-dir)
	// RescanInterval is the least time between two scans of PodLogsDir and two
	// checks that procfs shows the host's processes; default DefaultInterval.
	RescanInterval time.Duration
	Logger         *slog.Logger
	Clock          Clock
	// Files is what ProcRoot and PodLogsDir are read from; nil: the host's.
	Files Files
}

// PodProcess is the pod and container a process runs in.
type PodProcess struct {
	Namespace   string
	Pod         string
	PodUID      string
	ContainerID string // "" when the cgroup path does not name it
	// Containers are the names of the pod's containers in the pod log directory, sorted.
	Containers []string
}

// ErrNotInPod is returned by ProcessResolver.Resolve for a process that runs in no
// pod of this node (a host process, or a pod the log directory does not list).
var ErrNotInPod = errors.New("process runs in no pod of this node")

// ProcessResolver maps the PIDs NVML reports to pods through <ProcRoot>/<pid>/cgroup
// and the kubelet's pod log directory layout <PodLogsDir>/<namespace>_<pod>_<uid>/<container>/.
// It is safe for concurrent use.
type ProcessResolver struct {
	cfg ProcessConfig
	log *slog.Logger

	mu        sync.Mutex
	pods      map[string]podDir // by pod UID
	scannedAt time.Time         // zero before the first scan
	probedAt  time.Time
	probeErr  error // why procfs cannot resolve PIDs; nil when it can
	// lastPresent and lastMissing are when a non-empty process list last had a
	// PID present in procfs, and last had none; zero before the first.
	lastPresent, lastMissing time.Time
	up                       bool
	logged                   bool // the current up/down state was logged
}

// podDir is one pod's entry in the pod log directory.
type podDir struct {
	namespace, pod string
	containers     []string
}

// NewProcessResolver returns a ProcessResolver for cfg. It reads nothing yet.
func NewProcessResolver(cfg ProcessConfig) *ProcessResolver {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = DefaultProcRoot
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = DefaultPodLogsDir
	}
	if cfg.RescanInterval <= 0 {
		cfg.RescanInterval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Files == nil {
		cfg.Files = hostFiles{}
	}
	return &ProcessResolver{
		cfg: cfg,
		log: cfg.Logger.With("component", "process-attribution", "procfs", cfg.ProcRoot),
		up:  true,
	}
}

// Resolve returns the pod and container of pid. It returns ErrNotInPod (wrapped)
// for a process outside any pod, and an error wrapping fs.ErrNotExist when procfs
// has no such PID (gone, or hostPID is off).
func (r *ProcessResolver) Resolve(pid uint32) (PodProcess, error) {
	path := filepath.Join(r.cfg.ProcRoot, strconv.FormatUint(uint64(pid), 10), "cgroup")
	b, err := r.cfg.Files.ReadFile(path)
	if err != nil {
		return PodProcess{}, fmt.Errorf("resolve PID %d: %w", pid, err)
	}
	ref, ok := ParseCgroupFile(string(b))
	if !ok {
		return PodProcess{}, fmt.Errorf("resolve PID %d: %w", pid, ErrNotInPod)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.pods[ref.PodUID]
	if !ok && r.rescanDue() {
		r.scan()
		d, ok = r.pods[ref.PodUID]
	}
	if !ok {
		return PodProcess{}, fmt.Errorf("resolve PID %d (pod UID %s): %w", pid, ref.PodUID, ErrNotInPod)
	}
	return PodProcess{
		Namespace:   d.namespace,
		Pod:         d.pod,
		PodUID:      ref.PodUID,
		ContainerID: ref.ContainerID,
		Containers:  d.containers,
	}, nil
}

// rescanDue reports whether the log directory may be scanned again. r.mu is held.
func (r *ProcessResolver) rescanDue() bool {
	return r.scannedAt.IsZero() || r.cfg.Clock.Now().Sub(r.scannedAt) >= r.cfg.RescanInterval
}

// scan reads the pod log directory into r.pods. r.mu is held.
func (r *ProcessResolver) scan() {
	r.scannedAt = r.cfg.Clock.Now()
	entries, err := r.cfg.Files.ReadDir(r.cfg.PodLogsDir)
	if err != nil {
		r.log.Debug("cannot read the pod log directory", "dir", r.cfg.PodLogsDir, "err", err)
		r.pods = nil
		return
	}
	pods := make(map[string]podDir, len(entries))
	for _, e := range entries {
		// Namespaces and pod names cannot contain "_", UIDs neither.
		parts := strings.Split(e.Name(), "_")
		if !e.IsDir() || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			continue
		}
		d := podDir{namespace: parts[0], pod: parts[1]}
		if ctrs, err := r.cfg.Files.ReadDir(filepath.Join(r.cfg.PodLogsDir, e.Name())); err == nil {
			for _, c := range ctrs {
				if c.IsDir() {
					d.containers = append(d.containers, c.Name())
				}
			}
		}
		slices.Sort(d.containers)
		pods[parts[2]] = d
	}
	r.pods = pods
}

// probe checks, at most every RescanInterval, that procfs shows the host's PID
// namespace: its PID 1 must be readable and run in no pod. r.mu is held.
func (r *ProcessResolver) probe() {
	now := r.cfg.Clock.Now()
	if !r.probedAt.IsZero() && now.Sub(r.probedAt) < r.cfg.RescanInterval {
		return
	}
	r.probedAt = now
	b, err := r.cfg.Files.ReadFile(filepath.Join(r.cfg.ProcRoot, "1", "cgroup"))
	switch {
	case err != nil:
		r.probeErr = fmt.Errorf("read PID 1 of %s: %w", r.cfg.ProcRoot, err)
	default:
		if _, inPod := ParseCgroupFile(string(b)); inPod {
			r.probeErr = fmt.Errorf("PID 1 of %s runs in a pod: the exporter does not share the host PID namespace (hostPID)", r.cfg.ProcRoot)
		} else {
			r.probeErr = nil
		}
	}
}

// Up reports whether PIDs can be resolved: procfs shows the host's processes and
// the last non-empty process list given to Split had a PID present in it. When it
// is false, gputally_process_attribution_up is 0 and per-pod usage is unknown.
func (r *ProcessResolver) Up() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probe()
	r.setUp(r.probeErr == nil && r.pidsResolve(), r.probeErr)
	return r.up
}

// pidsResolve reports whether the PIDs NVML reports can be found in procfs: no
// process list lacked them, or one had them more recently, or within the last
// RescanInterval — so a process that exits between NVML's read and ours, on one
// device of many, does not take attribution down. r.mu is held.
func (r *ProcessResolver) pidsResolve() bool {
	switch {
	case r.lastMissing.IsZero() || !r.lastMissing.After(r.lastPresent):
		return true
	case r.lastPresent.IsZero():
		return false
	}
	return r.cfg.Clock.Now().Sub(r.lastPresent) < r.cfg.RescanInterval
}

// setUp records the state and logs a change once. r.mu is held.
func (r *ProcessResolver) setUp(up bool, why error) {
	if up == r.up && r.logged {
		return
	}
	r.up, r.logged = up, true
	switch {
	case !up && why != nil:
		r.log.Warn("process attribution down: cannot map GPU processes to pods", "err", why)
	case !up:
		r.log.Warn("process attribution down: no PID NVML reports exists in procfs; run with hostPID")
	default:
		r.log.Info("process attribution up")
	}
}

// ProcessSample is one process on a GPU or MIG instance, as the backend reads it.
type ProcessSample struct {
	PID             uint32
	Utilization     float64 // share of the device's time the process ran, 0–1; NaN when unknown
	UsedMemoryBytes uint64  // framebuffer the process uses, bytes
}

// HolderUsage is what the processes of one holder use of a device.
type HolderUsage struct {
	// Utilization is the sum of its processes' utilization, 0–1; NaN when one of
	// them is unknown.
	Utilization     float64
	MemoryUsedBytes uint64
	Processes       int
}

// Usage splits a device's processes among its holders.
type Usage struct {
	// Up is false when PIDs cannot be resolved; Holders are then unknown and must
	// not be exported as zeros.
	Up bool
	// Holders is parallel to the holders passed to Split.
	Holders []HolderUsage
	// Unattributed sums the processes that belong to no holder: host processes,
	// pods that do not hold the device, PIDs that vanished, ambiguous containers.
	Unattributed HolderUsage
}

// Split assigns the processes of one device (a physical GPU, or one MIG instance:
// the caller passes only the processes of that GPU instance) to its holders and
// sums their utilization and memory per holder. A process goes to the holder of
// its pod when the pod holds the device through one container, else to the
// container the log directory names when the pod has only one. A process of a
// pod whose several containers hold the device, which the log directory cannot
// tell apart, makes those holders' utilization unknown (NaN), not 0.
func (r *ProcessResolver) Split(procs []ProcessSample, holders []Holder) Usage {
	u := Usage{Holders: make([]HolderUsage, len(holders))}
	present := false
	for _, p := range procs {
		i, err := r.holderOf(p.PID, holders)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			present = true
		}
		if i == ambiguousHolder {
			pp, _ := r.Resolve(p.PID)
			for j, h := range holders {
				if h.Namespace == pp.Namespace && h.Pod == pp.Pod {
					u.Holders[j].Utilization = math.NaN()
				}
			}
		}
		if i < 0 {
			add(&u.Unattributed, p)
			continue
		}
		add(&u.Holders[i], p)
	}
	r.mu.Lock()
	switch {
	case len(procs) == 0:
	case present:
		r.lastPresent = r.cfg.Clock.Now()
	default:
		r.lastMissing = r.cfg.Clock.Now()
	}
	r.mu.Unlock()
	u.Up = r.Up()
	return u
}

// ambiguousHolder is holderOf's answer for a process of a pod that holds the
// device through several containers, when it cannot tell which.
const ambiguousHolder = -2

// holderOf returns the index in holders of the holder pid belongs to; -1 when
// none, ambiguousHolder when one of several containers of its pod.
func (r *ProcessResolver) holderOf(pid uint32, holders []Holder) (int, error) {
	pp, err := r.Resolve(pid)
	if err != nil {
		return -1, err
	}
	match, container := -1, ""
	for i, h := range holders {
		if h.Namespace != pp.Namespace || h.Pod != pp.Pod {
			continue
		}
		switch {
		case match < 0:
			match, container = i, h.Container
		case h.Container != container:
			container = "" // several containers of the pod hold the device
		}
	}
	if match < 0 || container != "" {
		return match, nil
	}
	if len(pp.Containers) == 1 {
		for i, h := range holders {
			if h.Namespace == pp.Namespace && h.Pod == pp.Pod && h.Container == pp.Containers[0] {
				return i, nil
			}
		}
	}
	return ambiguousHolder, nil
}

func add(h *HolderUsage, p ProcessSample) {
	h.Processes++
	h.Utilization += p.Utilization // one NaN makes the sum NaN
	h.MemoryUsedBytes += p.UsedMemoryBytes
}
