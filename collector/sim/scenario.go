// Package sim is a simulated GPU node: a collector.Backend whose GPUs, MIG
// instances, workloads and pods come from a scenario file. It serves the exporter
// when no GPU is at hand (--backend=sim) and produces history in virtual time.
//
// Readings are a pure function of the seed, the scenario and the sample time, so a
// week sampled every 30 s in virtual time gives the same series as a week sampled in
// real time. Cumulative counters (energy, violations, PCIe replays, ECC, XIDs) count
// from the backend's start time (Options.Start).
//
// # Scenario file
//
// A scenario is one YAML document. Unknown keys, null values, values of the wrong
// type or out of range, MIG layouts that do not fit the GPU and pods pointing at
// devices that do not exist are errors of the form "<file>:<line>: <field>: <what>".
//
//	seed: 42                          # random streams; --sim.seed overrides it
//	node:
//	  hostname: sim-node-0            # default sim-node-0
//	  driver_version: "550.90.07"     # default 550.90.07
//	gpus:                             # groups of GPUs; indices count up from 0 in order
//	  - model: NVIDIA H100 80GB HBM3  # product name as NVML reports it
//	    count: 2                      # GPUs in this group, default 1
//	  - model: NVIDIA H100 80GB HBM3
//	    replicas: 3                   # time-slicing: advertised as nvidia.com/gpu.shared ×3
//	    resource: nvidia.com/gpu      # optional: the replicas' resource; nvidia.com/gpu.shared (default: the
//	                                  # device plugin's renameByDefault) or nvidia.com/gpu (not renamed)
//	  - model: NVIDIA H100 80GB HBM3
//	    mig: [3g.40gb, 1g.10gb]       # MIG mode with these instances (mig: [] = none)
//	  - model: NVIDIA H100 80GB HBM3
//	    hami: {split: 10, memory_scaling: 1, core_scaling: 1}  # HAMi's: shared by hami grants
//	  - model: Some Future GPU
//	    memory_mib: 65536             # required for models the simulator does not know,
//	    tdp_watts: 500                # optional overrides otherwise; idle_watts too
//	workloads:
//	  - name: llm-train
//	    pattern: training             # training | inference | bursty-dev | idle
//	    fb_mib: 70000                 # peak framebuffer per pod, MiB
//	    activity_scale: 1             # optional: multiplies the pattern's activity, (0, 1]
//	pods:
//	  - namespace: ml
//	    pod: trainer-0
//	    container: main
//	    uid: 6f1c…                    # optional; derived from the seed otherwise
//	    resource: nvidia.com/gpu      # nvidia.com/gpu | nvidia.com/gpu.shared | nvidia.com/mig-<profile> | gpu.nvidia.com (DRA)
//	    claim: train-gpu              # gpu.nvidia.com only: the ResourceClaim; claims may share a whole GPU
//	    device: {gpu: 0}              # {gpu: N} | {gpu: N, replica: R} | {gpu: N, instance: I}
//	    workload: llm-train
//	    pids: [4242]                  # optional; one PID derived from the seed otherwise
//	    start: 2h                     # optional: the pod runs from this long after the start …
//	    end: 30h                      # … until this long after it (default: the whole run)
//	    created: 1h                   # optional, ≤ start: created then, it waits for a node until start
//	  - namespace: ml                 # a container with a HAMi grant: resource nvidia.com/gpu
//	    pod: infer-a                  # on a GPU with hami; HAMi's virtual device in the
//	    container: server             # kubelet's answer, hami.io annotations on the pod
//	    resource: nvidia.com/gpu
//	    device: {gpu: 2}
//	    hami: {memory_mib: 20480, cores: 25}   # nvidia.com/gpumem (MiB), nvidia.com/gpucores (%)
//	    workload: llm-infer
//	  - namespace: team-a             # a KAI-Scheduler fraction: no resource; a
//	    pod: notebook                 # reservation pod holds the GPU in the kubelet's
//	    container: main               # answer, the pod carries KAI's label and annotations
//	    device: {gpu: 3}
//	    kai: {fraction: 0.5}          # or {memory_mib: 24467}: gpu-fraction or gpu-memory
//	    workload: dev
//	jobs:                             # a pod every `every`, running for `run` of it
//	  - namespace: ci
//	    name: build                   # pods build-0, build-1, … (UIDs and PIDs from the seed)
//	    container: main
//	    resource: nvidia.com/gpu      # and device: as for pods
//	    device: {gpu: 3}
//	    workload: ci-build
//	    every: 10m                    # pod n runs from n×every to n×every+run
//	    run: 2m                       # 0 < run ≤ every
//	pending:                          # pods no node takes (pending.go); scheduler: their schedulerName
//	  - {namespace: nb, pod: nb-1, resource: nvidia.com/gpu, count: 2, created: 1h, deleted: 5h}
//	events:                           # `at` is a duration after the start
//	  - {at: 2h, gpu: 3, xid: 13}     # an XID error
//	  - {at: 26h, gpu: 5, lost: true} # the GPU falls off the bus (XID 79)
//	  - {at: 1h, kubelet: down, for: 2h}       # the kubelet does not answer
//	  - {at: 5h, backend: failing, for: 30m}   # Sample returns ErrBackendFailing
//	  - {at: 10h, exporter: stopped, for: 6h}  # history only: no samples, no scrapes, then a restart
//	  - {at: 9h, exporter: restarted}          # history only: a new exporter process, no gap
//	  - {at: 14h, scrape: missing, for: 2h}    # history only: the exporter runs, no scrape is written
//	  - {at: 6h, mig: {gpu: 6, layout: [4g.40gb, 1g.10gb]}}  # a MIG GPU gets a new layout
//
// The patterns: training runs at 85–97 % activity with its framebuffer full;
// inference follows the time of day (low at 03:00 UTC, peak at 15:00 UTC) with noise;
// bursty-dev idles with short bursts of work a few times an hour; idle holds its
// framebuffer and does nothing. A GPU, replica or MIG instance no pod holds is
// unallocated and idles. Power moves between the model's idle and TDP watts with the
// GPU's activity; temperatures and clocks follow power.
//
// A container holding several devices is listed once per device. `instance` counts
// the GPU's MIG layout in force at the pod's start from 0 (gpus[].mig, or the
// layout of the last `mig` event at or before it) and the resource must name that
// instance's profile.
// A device is held by one pod entry or one job for the whole run, whatever their
// start and end — except that pod entries may hold a whole GPU one after another,
// in windows that do not overlap; a pod outside its window, and a job between two runs, leave their
// device unallocated and idle, and are absent from the kubelet's answer and from
// the process table.
//
// # Lifecycles and faults
//
// Pod windows and jobs change what the simulated kubelet answers (see Kubelet) and
// which processes run. A job's pods run one at a time, so a job holds one PID at a
// time, taken from a block of its own. Kubelet, backend and exporter events are
// windows [at, at+for); two windows of one kind must not overlap. Exporter stops
// and restarts and missing scrapes are played by the history (package history):
// an exporter serving in real time cannot stop or restart itself, nor miss its
// scrapes, so Backend.HistoryOnlyEvents describes them for a log line.
//
// A `mig` event gives a MIG GPU a new layout at `at`, validated and placed as
// gpus[].mig. An instance with the same profile, placement and GPU instance ID at
// the same index as before is kept (its UUID and holder stay); every other one is
// new, and a pod or job on an instance that goes ends at `at`. The first Sample
// after the change returns collector.ErrInventoryChanged, and Inventory then
// returns the new instances; the kubelet advertises them from `at`.
package sim

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/gputally/gputally/smallfile"
)

// Pattern names how a workload uses its GPU over time.
type Pattern string

// The workload patterns.
const (
	Training  Pattern = "training"
	Inference Pattern = "inference"
	BurstyDev Pattern = "bursty-dev"
	Idle      Pattern = "idle"
)

// Scenario is a parsed and validated scenario file. See the package documentation
// for its YAML form. Build one with Load, Parse or Default; New validates a
// Scenario built in code again.
type Scenario struct {
	Seed      int64      `yaml:"seed"`
	Node      Node       `yaml:"node"`
	GPUs      []GPUGroup `yaml:"gpus"`
	Workloads []Workload `yaml:"workloads"`
	Pods      []Pod      `yaml:"pods"`
	Jobs      []Job      `yaml:"jobs"`
	Events    []Event    `yaml:"events"`
	// Pending are pods no node takes, and Scheduler the GPU pods'
	// schedulerName (pending.go).
	Pending   []PendingPod `yaml:"pending"`
	Scheduler string       `yaml:"scheduler"`

	name  string         // file name for error messages
	lines map[string]int // field path → line, for parsed scenarios
}

// Node describes the simulated host.
type Node struct {
	Hostname      string `yaml:"hostname"`       // default DefaultHostname
	DriverVersion string `yaml:"driver_version"` // default DefaultDriverVersion
}

// Defaults of a scenario.
const (
	DefaultHostname      = "sim-node-0"
	DefaultDriverVersion = "550.90.07"
)

// GPUGroup is Count GPUs of one model and configuration.
type GPUGroup struct {
	Model    string   `yaml:"model"`    // product name, e.g. "NVIDIA H100 80GB HBM3"
	Count    int      `yaml:"count"`    // 0 means 1
	MIG      []string `yaml:"mig"`      // MIG layout as profile names; non-nil enables MIG mode
	Replicas int      `yaml:"replicas"` // time-slicing replicas; 0: not shared
	// Resource is the device plugin resource the replicas are advertised
	// as: nvidia.com/gpu.shared (also ""; the device plugin's
	// renameByDefault) or nvidia.com/gpu (time-slicing without rename).
	Resource  string  `yaml:"resource"`
	MemoryMiB int     `yaml:"memory_mib"` // framebuffer, MiB; 0: the model's
	TDPWatts  float64 `yaml:"tdp_watts"`  // power limit, W; 0: the model's
	IdleWatts float64 `yaml:"idle_watts"` // power at rest, W; 0: the model's
	// HAMi makes the group's GPUs HAMi's (fractional.go); nil: not.
	HAMi *HAMiGPU `yaml:"hami"`
}

// replicaResource is the resource the group's time-sliced replicas are
// advertised as.
func (g *GPUGroup) replicaResource() string {
	if g.Resource == "" {
		return resourceShared
	}
	return g.Resource
}

// Workload is a named usage pattern that pods run.
type Workload struct {
	Name    string  `yaml:"name"`
	Pattern Pattern `yaml:"pattern"`
	FBMiB   int     `yaml:"fb_mib"` // peak framebuffer of one pod, MiB
	// ActivityScale multiplies the pattern's activity (0–1]; 0 means 1. A light
	// inference service is `pattern: inference` with a small scale.
	ActivityScale float64 `yaml:"activity_scale"`
}

// scale returns the activity scale in force.
func (w *Workload) scale() float64 {
	if w.ActivityScale == 0 {
		return 1
	}
	return w.ActivityScale
}

// Pod is one container holding one device.
type Pod struct {
	Namespace string `yaml:"namespace"`
	Pod       string `yaml:"pod"`
	UID       string `yaml:"uid"` // empty: derived from the seed
	Container string `yaml:"container"`
	Resource  string `yaml:"resource"`
	Device    Device `yaml:"device"`
	Workload  string `yaml:"workload"`
	PIDs      []int  `yaml:"pids"`  // empty: one PID derived from the seed
	Claim     string `yaml:"claim"` // DRA claim name, for resource gpu.nvidia.com
	// Start and End bound when the pod runs, as durations after the backend's
	// start: from Start (0: the start) until End (0: the end of the run).
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
	// HAMi is the container's grant on a HAMi GPU; KAI its KAI-Scheduler
	// fraction of a whole GPU (fractional.go). Nil: neither.
	HAMi *HAMiGrant `yaml:"hami"`
	KAI  *KAIShare  `yaml:"kai"`
	// Created (optional, at most Start) is when the pod was created: it
	// waits for a node, pending, from then until Start (pending.go).
	Created *time.Duration `yaml:"created"`
}

// Job is a pod created every Every that runs for Run (0 < Run ≤ Every): pod n
// (named "<Name>-<n>") runs from n×Every to n×Every+Run after the backend's start.
type Job struct {
	Namespace string        `yaml:"namespace"`
	Name      string        `yaml:"name"`
	Container string        `yaml:"container"`
	Resource  string        `yaml:"resource"`
	Device    Device        `yaml:"device"`
	Workload  string        `yaml:"workload"`
	Every     time.Duration `yaml:"every"`
	Run       time.Duration `yaml:"run"`
}

// Device points at a whole GPU, a time-slicing replica of one, or a MIG instance.
type Device struct {
	GPU      int  `yaml:"gpu"`
	Replica  *int `yaml:"replica"`  // for a time-sliced GPU's resource
	Instance *int `yaml:"instance"` // for nvidia.com/mig-<profile>: index in the GPU's layout
}

// Event is something that happens At a duration after the backend's start: to a
// GPU (GPU with XID or Lost, or MIG, a new MIG layout), for For to the kubelet
// (Kubelet "down"), the backend (Backend "failing"), the exporter (Exporter
// "stopped") or the scrapes (Scrape "missing"), or at one instant to the
// exporter (Exporter "restarted"). An event has exactly one of GPU, MIG,
// Kubelet, Backend, Exporter and Scrape.
type Event struct {
	At   time.Duration `yaml:"at"`
	GPU  *int          `yaml:"gpu"`
	XID  int           `yaml:"xid"`  // an XID error of this code
	Lost bool          `yaml:"lost"` // the GPU falls off the bus (counts as XID 79)
	MIG  *MIGChange    `yaml:"mig"`  // the GPU is reconfigured

	Kubelet string `yaml:"kubelet"` // "down": the kubelet does not answer
	Backend string `yaml:"backend"` // "failing": Sample returns ErrBackendFailing
	// Exporter is "stopped": no samples nor scrapes for For, then a new
	// process (history only); or "restarted": a new process at At, without a
	// gap (history only).
	Exporter string `yaml:"exporter"`
	// Scrape is "missing": the exporter runs, but for For no scrape of it is
	// written (history only).
	Scrape string        `yaml:"scrape"`
	For    time.Duration `yaml:"for"` // length of a kubelet, backend, exporter or scrape window
}

// MIGChange gives GPU, a GPU in MIG mode, the MIG layout Layout (profile
// names, as gpus[].mig) from its event's At. An instance at the same index
// with the same profile, placement and GPU instance ID as before is the same
// instance (it keeps its UUID and its holder); every other instance is new,
// and the pods on the instances that go end at At.
type MIGChange struct {
	GPU    int      `yaml:"gpu"`
	Layout []string `yaml:"layout"`
}

//go:embed default.yaml
var defaultScenario []byte

// Load reads and validates the scenario file at path: a regular file of at most
// 1 MiB (10,000 events take about 340 KB), so that a runaway file is refused
// before the YAML decoder spends about 80 MiB per MiB on it.
func Load(path string) (*Scenario, error) {
	data, err := smallfile.Read(path, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a scenario; name is the file name errors carry.
func Parse(data []byte, name string) (*Scenario, error) {
	sc := &Scenario{name: name, lines: map[string]int{}}
	if err := decodeStrict(data, name, sc, sc.lines); err != nil {
		return nil, err
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// Default returns the built-in scenario: eight H100 80GB GPUs on "sim-node-0", two
// of them in MIG mode, with training, inference, time-sliced development and idle
// pods, an unallocated GPU and an unassigned MIG instance.
func Default() *Scenario {
	sc, err := Parse(defaultScenario, "default.yaml")
	if err != nil {
		// The embedded scenario is covered by tests; failing here is a build defect.
		panic("sim: built-in scenario: " + err.Error())
	}
	return sc
}
