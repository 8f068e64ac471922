package sim

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/gputally/gputally/mig"
)

// Limits that keep a scenario, and the work and memory it costs, bounded.
const (
	maxGPUs        = 64
	maxReplicas    = 64
	maxWorkloads   = 1024
	maxPods        = 4096
	maxPIDsPerPod  = 64
	maxEvents      = 10000
	maxPID         = 4194304 // Linux pid_max
	maxMemoryMiB   = 1 << 22 // 4 TiB
	maxTDPWatts    = 2000
	maxXID         = 1023
	maxEventOffset = 10 * 365 * 24 * time.Hour
)

// Kubernetes resource names the simulated device plugin advertises.
const (
	resourceGPU       = "nvidia.com/gpu"
	resourceShared    = "nvidia.com/gpu.shared"
	resourceMIGPrefix = "nvidia.com/mig-"
)

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	uidPattern   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// errAt returns an error for the field at path, located at its line or, when the
// field is absent, at the line of the nearest enclosing field.
func (sc *Scenario) errAt(path, format string, a ...any) error {
	name := sc.name
	if name == "" {
		name = "scenario"
	}
	line := 0
	for p := path; ; {
		if l, ok := sc.lines[p]; ok {
			line = l
			break
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return &scenarioError{file: name, line: line, path: path, msg: fmt.Sprintf(format, a...)}
}

// has reports whether a parsed scenario gave the field at path.
func (sc *Scenario) has(path string) bool {
	_, ok := sc.lines[path]
	return ok
}

// gpuFacts is what validation learns about one GPU index.
type gpuFacts struct {
	group  int
	spec   modelSpec
	mig    *mig.Model // nil unless in MIG mode
	layout []string   // the scenario's MIG layout (gpus[].mig)
	// epochs are the MIG layouts over time, the scenario's first, then those
	// of the GPU's `mig` events; slots the MIG instances over their lives.
	// Nil unless in MIG mode.
	epochs []migEpoch
	slots  []migSlot
}

// devKey names a holdable device: a whole GPU (replica and instance -1), a
// time-slicing replica or a MIG instance (instance is its slot, migSlot).
type devKey struct{ gpu, replica, instance int }

func (sc *Scenario) validate() error {
	_, err := sc.check()
	return err
}

// check validates the scenario and returns what it learnt of its GPUs.
func (sc *Scenario) check() ([]gpuFacts, error) {
	gpus, err := sc.validateGPUs()
	if err != nil {
		return nil, err
	}
	// Events before pods: a pod's MIG instance counts the layout in force at
	// its start.
	if err := sc.validateEvents(gpus); err != nil {
		return nil, err
	}
	workloads, err := sc.validateWorkloads()
	if err != nil {
		return nil, err
	}
	held, err := sc.validatePods(gpus, workloads)
	if err != nil {
		return nil, err
	}
	if err := sc.validateJobs(gpus, workloads, held); err != nil {
		return nil, err
	}
	if err := sc.validateWaiting(held); err != nil {
		return nil, err
	}
	return gpus, nil
}

func (sc *Scenario) validateGPUs() ([]gpuFacts, error) {
	if h := sc.Node.Hostname; h != "" && (len(h) > 253 || !dnsSubdomain.MatchString(h)) {
		return nil, sc.errAt("node.hostname", "%q is not a valid node name (lower-case DNS subdomain)", h)
	}
	if len(sc.GPUs) == 0 {
		return nil, sc.errAt("gpus", "at least one GPU is required")
	}
	var gpus []gpuFacts
	for i := range sc.GPUs {
		g := &sc.GPUs[i]
		p := fmt.Sprintf("gpus[%d]", i)
		if g.Model == "" {
			return nil, sc.errAt(p+".model", "required")
		}
		count := g.Count
		switch {
		case count < 0 || (count == 0 && sc.has(p+".count")):
			return nil, sc.errAt(p+".count", "must be at least 1, got %d", count)
		case count == 0:
			count = 1
		}
		if count > maxGPUs-len(gpus) {
			return nil, sc.errAt(p+".count", "more than %d GPUs on one node", maxGPUs)
		}
		if g.MemoryMiB < 0 || g.MemoryMiB > maxMemoryMiB {
			return nil, sc.errAt(p+".memory_mib", "must be between 1 and %d MiB, got %d", maxMemoryMiB, g.MemoryMiB)
		}
		if g.TDPWatts < 0 || g.TDPWatts > maxTDPWatts {
			return nil, sc.errAt(p+".tdp_watts", "must be between 1 and %d W, got %g", maxTDPWatts, g.TDPWatts)
		}
		if g.IdleWatts < 0 {
			return nil, sc.errAt(p+".idle_watts", "must not be negative, got %g", g.IdleWatts)
		}
		spec, ok := specOf(g)
		if !ok {
			return nil, sc.errAt(p+".model", "unknown model %q: give memory_mib and tdp_watts", g.Model)
		}
		if spec.idleW >= spec.tdpW {
			return nil, sc.errAt(p+".idle_watts", "idle power %g W must be below the TDP of %g W", spec.idleW, spec.tdpW)
		}
		if g.Replicas < 0 || g.Replicas > maxReplicas {
			return nil, sc.errAt(p+".replicas", "must be between 1 and %d, got %d", maxReplicas, g.Replicas)
		}
		switch {
		case g.Resource != "" && g.Replicas == 0:
			return nil, sc.errAt(p+".resource", "names the resource of time-sliced replicas: set replicas")
		case g.Resource != "" && g.Resource != resourceShared && g.Resource != resourceGPU:
			return nil, sc.errAt(p+".resource", "want %s or %s, got %q", resourceShared, resourceGPU, g.Resource)
		}
		if err := sc.checkHAMiGPU(p, g); err != nil {
			return nil, err
		}
		var model *mig.Model
		if g.MIG != nil {
			if g.Replicas > 0 {
				return nil, sc.errAt(p+".replicas", "time-slicing MIG instances is not simulated")
			}
			if g.MemoryMiB > 0 {
				return nil, sc.errAt(p+".memory_mib", "cannot be set on a MIG GPU: sizes come from the MIG profile table")
			}
			if model, ok = mig.ForModel(g.Model); !ok {
				return nil, sc.errAt(p+".mig", "model %q has no MIG profiles", g.Model)
			}
			if err := model.CheckLayout(g.MIG); err != nil {
				var le *mig.LayoutError
				if errors.As(err, &le) {
					return nil, sc.errAt(fmt.Sprintf("%s.mig[%d]", p, le.Index), "%s", le.Reason)
				}
				return nil, sc.errAt(p+".mig", "%v", err)
			}
		}
		for range count {
			gpus = append(gpus, gpuFacts{group: i, spec: spec, mig: model, layout: g.MIG})
		}
	}
	return gpus, nil
}

func (sc *Scenario) validateWorkloads() (map[string]*Workload, error) {
	if len(sc.Workloads) > maxWorkloads {
		return nil, sc.errAt("workloads", "more than %d workloads", maxWorkloads)
	}
	byName := make(map[string]*Workload, len(sc.Workloads))
	first := make(map[string]int, len(sc.Workloads))
	for i := range sc.Workloads {
		w := &sc.Workloads[i]
		p := fmt.Sprintf("workloads[%d]", i)
		if w.Name == "" {
			return nil, sc.errAt(p+".name", "required")
		}
		if j, dup := first[w.Name]; dup {
			return nil, sc.errAt(p+".name", "workload %q is already defined by workloads[%d]", w.Name, j)
		}
		first[w.Name] = i
		switch w.Pattern {
		case Training, Inference, BurstyDev, Idle:
		case "":
			return nil, sc.errAt(p+".pattern", "required (training, inference, bursty-dev or idle)")
		default:
			return nil, sc.errAt(p+".pattern", "unknown pattern %q (want training, inference, bursty-dev or idle)", w.Pattern)
		}
		if w.FBMiB < 0 || w.FBMiB > maxMemoryMiB {
			return nil, sc.errAt(p+".fb_mib", "must be between 0 and %d MiB, got %d", maxMemoryMiB, w.FBMiB)
		}
		if w.ActivityScale < 0 || w.ActivityScale > 1 || math.IsNaN(w.ActivityScale) {
			return nil, sc.errAt(p+".activity_scale", "must be in (0, 1], got %g", w.ActivityScale)
		}
		byName[w.Name] = w
	}
	return byName, nil
}

// usableMiB is the framebuffer pods can fill on a device; instance is a MIG
// instance's slot, or -1.
func usableMiB(g gpuFacts, instance int) int {
	if instance >= 0 {
		p, _ := g.mig.Profile(g.slots[instance].profile)
		return int(p.MemoryMiB) - instanceReservedMiB(p.MemoryMiB)
	}
	return g.spec.memoryMiB - g.spec.reservedMiB
}

// instanceReservedMiB is the framebuffer the driver keeps in a MIG instance.
func instanceReservedMiB(memMiB uint64) int { return int(memMiB / 200) }

// heldDevices is what pods and jobs take of the node during validation.
type heldDevices struct {
	holder map[devKey]string    // device → the entry holding it, e.g. "pods[2] (ml/train-0)"
	kind   map[devKey]shareKind // how the device's holders share it
	fbMiB  map[devKey]int       // device (replicas collapsed) → framebuffer its holders need
	pods   map[string]int       // namespace/pod → the first pod entry naming it
	// turns are, per whole GPU held by pod entries one after another, the
	// windows of its holders (pending.go).
	turns map[devKey][]window
}

// take records that entry p holds key with workload w, sharing it as kind,
// in the window win, or says why it cannot.
func (sc *Scenario) take(h *heldDevices, p string, key devKey, kind shareKind, w *Workload, gpus []gpuFacts, name string, win window) error {
	if h.inTurn(key, kind != plainHold, win) {
		if usable := usableMiB(gpus[key.gpu], key.instance); w.FBMiB > usable {
			return sc.errAt(p+".workload", "workload %q needs %d MiB, but %s has %d MiB", w.Name, w.FBMiB, describeDevice(key, gpus), usable)
		}
		return nil
	}
	if other, held := h.holder[key]; held && !shareable(key, kind, h.kind[key]) {
		return sc.errAt(p+".device", "%s is already held by %s", describeDevice(key, gpus), other)
	} else if !held {
		h.holder[key] = p + " (" + name + ")"
		h.kind[key] = kind
	}
	memKey := key
	memKey.replica = -1 // replicas share the GPU's framebuffer
	h.fbMiB[memKey] += w.FBMiB
	if usable := usableMiB(gpus[key.gpu], key.instance); h.fbMiB[memKey] > usable {
		return sc.errAt(p+".workload", "workload %q needs %d MiB, but %s has %d MiB left for it",
			w.Name, w.FBMiB, describeDevice(memKey, gpus), usable-(h.fbMiB[memKey]-w.FBMiB))
	}
	return nil
}

func (sc *Scenario) validatePods(gpus []gpuFacts, workloads map[string]*Workload) (*heldDevices, error) {
	if len(sc.Pods) > maxPods {
		return nil, sc.errAt("pods", "more than %d pods", maxPods)
	}
	held := &heldDevices{holder: map[devKey]string{}, kind: map[devKey]shareKind{}, fbMiB: map[devKey]int{}, pods: map[string]int{}, turns: map[devKey][]window{}}
	use := &fractionalUse{hamiMiB: map[int]int{}, hamiCores: map[int]int{}, hamiPods: map[int]int{}, kaiMiB: map[int]float64{}}
	uidOf := map[string]string{}    // namespace/pod → UID
	podOfUID := map[string]string{} // UID → namespace/pod
	pids := map[int]int{}           // PID → pod entry
	for i := range sc.Pods {
		pod := &sc.Pods[i]
		p := fmt.Sprintf("pods[%d]", i)
		if !dnsLabel.MatchString(pod.Namespace) || len(pod.Namespace) > 63 {
			return nil, sc.errAt(p+".namespace", "%q is not a valid namespace name", pod.Namespace)
		}
		if !dnsSubdomain.MatchString(pod.Pod) || len(pod.Pod) > 253 {
			return nil, sc.errAt(p+".pod", "%q is not a valid pod name", pod.Pod)
		}
		if !dnsLabel.MatchString(pod.Container) || len(pod.Container) > 63 {
			return nil, sc.errAt(p+".container", "%q is not a valid container name", pod.Container)
		}
		full := pod.Namespace + "/" + pod.Pod
		if pod.UID != "" {
			if !uidPattern.MatchString(pod.UID) {
				return nil, sc.errAt(p+".uid", "%q is not a lower-case UUID", pod.UID)
			}
			if other, ok := podOfUID[pod.UID]; ok && other != full {
				return nil, sc.errAt(p+".uid", "UID %s already belongs to pod %s", pod.UID, other)
			}
			if uid, ok := uidOf[full]; ok && uid != pod.UID {
				return nil, sc.errAt(p+".uid", "pod %s already has UID %s", full, uid)
			}
			uidOf[full] = pod.UID
			podOfUID[pod.UID] = full
		}
		var key devKey
		var err error
		if pod.KAI != nil && pod.Resource == "" {
			key, err = sc.checkKAIDevice(p, pod.Device, gpus, devKey{gpu: pod.Device.GPU, replica: -1, instance: -1})
		} else {
			key, err = sc.checkDevice(p, pod.Resource, pod.Device, gpus, pod.Start)
		}
		if err != nil {
			return nil, err
		}
		if err := sc.checkFractional(p, pod, gpus[key.gpu], use); err != nil {
			return nil, err
		}
		if err := sc.checkClaim(p, pod); err != nil {
			return nil, err
		}
		w, err := sc.workloadOf(p, pod.Workload, workloads)
		if err != nil {
			return nil, err
		}
		if err := sc.take(held, p, key, kindOf(pod), w, gpus, full, podWindow(pod)); err != nil {
			return nil, err
		}
		if err := sc.checkWindow(p, pod.Start, pod.End); err != nil {
			return nil, err
		}
		if j, ok := held.pods[full]; !ok {
			held.pods[full] = i
		} else if other := &sc.Pods[j]; other.Start != pod.Start || other.End != pod.End {
			return nil, sc.errAt(p+".start", "pod %s runs %s in pods[%d]: the containers of a pod run together", full, describeWindow(other.Start, other.End), j)
		}
		if len(pod.PIDs) > maxPIDsPerPod {
			return nil, sc.errAt(p+".pids", "more than %d PIDs", maxPIDsPerPod)
		}
		for k, pid := range pod.PIDs {
			pp := fmt.Sprintf("%s.pids[%d]", p, k)
			if pid < 1 || pid > maxPID {
				return nil, sc.errAt(pp, "PID must be between 1 and %d, got %d", maxPID, pid)
			}
			if j, dup := pids[pid]; dup {
				return nil, sc.errAt(pp, "PID %d is already used by pods[%d]", pid, j)
			}
			pids[pid] = i
		}
	}
	return held, nil
}

// workloadOf returns the workload entry p names.
func (sc *Scenario) workloadOf(p, name string, workloads map[string]*Workload) (*Workload, error) {
	if name == "" {
		return nil, sc.errAt(p+".workload", "required")
	}
	w, ok := workloads[name]
	if !ok {
		return nil, sc.errAt(p+".workload", "no workload named %q", name)
	}
	return w, nil
}

// checkDevice validates the resource entry p requests against the device it
// points at. A MIG instance counts the GPU's layout in force at start.
func (sc *Scenario) checkDevice(p, resource string, d Device, gpus []gpuFacts, start time.Duration) (devKey, error) {
	if sc.lines != nil && !sc.has(p+".device.gpu") {
		return devKey{}, sc.errAt(p+".device.gpu", "required")
	}
	if d.GPU < 0 || d.GPU >= len(gpus) {
		return devKey{}, sc.errAt(p+".device.gpu", "no GPU %d (the node has GPUs 0 to %d)", d.GPU, len(gpus)-1)
	}
	g := gpus[d.GPU]
	group := sc.GPUs[g.group]
	key := devKey{gpu: d.GPU, replica: -1, instance: -1}
	switch {
	case group.Replicas > 0 && (resource == resourceGPU || resource == resourceShared):
		if want := group.replicaResource(); resource != want {
			return key, sc.errAt(p+".resource", "GPU %d is time-sliced (replicas: %d): request %s", d.GPU, group.Replicas, want)
		}
		if d.Instance != nil {
			return key, sc.errAt(p+".device.instance", "%s takes a replica, not a MIG instance", resource)
		}
		if d.Replica == nil {
			return key, sc.errAt(p+".device.replica", "required for %s on a time-sliced GPU", resource)
		}
		if *d.Replica < 0 || *d.Replica >= group.Replicas {
			return key, sc.errAt(p+".device.replica", "GPU %d has replicas 0 to %d, got %d", d.GPU, group.Replicas-1, *d.Replica)
		}
		key.replica = *d.Replica
	case resource == resourceGPU:
		if d.Replica != nil || d.Instance != nil {
			return key, sc.errAt(p+".device", "%s takes a whole GPU: give only gpu", resourceGPU)
		}
		if g.mig != nil {
			return key, sc.errAt(p+".resource", "GPU %d is in MIG mode: request %s<profile>", d.GPU, resourceMIGPrefix)
		}
	case resource == resourceShared:
		return key, sc.errAt(p+".resource", "GPU %d is not time-sliced: set replicas on gpus[%d] or request %s", d.GPU, g.group, resourceGPU)
	case strings.HasPrefix(resource, resourceMIGPrefix):
		if g.mig == nil {
			return key, sc.errAt(p+".resource", "GPU %d is not in MIG mode", d.GPU)
		}
		if d.Replica != nil {
			return key, sc.errAt(p+".device.replica", "time-slicing MIG instances is not simulated")
		}
		if d.Instance == nil {
			return key, sc.errAt(p+".device.instance", "required for %s", resource)
		}
		e := epochAt(g.epochs, int64(start))
		ep := &g.epochs[e]
		when := ""
		if e > 0 {
			when = fmt.Sprintf(" from %v (events[%d])", time.Duration(ep.from), ep.event)
		}
		if *d.Instance < 0 || *d.Instance >= len(ep.layout) {
			return key, sc.errAt(p+".device.instance", "GPU %d has %d MIG instances%s, got instance %d", d.GPU, len(ep.layout), when, *d.Instance)
		}
		if want := resourceMIGPrefix + ep.layout[*d.Instance]; resource != want {
			return key, sc.errAt(p+".resource", "instance %d of GPU %d is a %s%s: request %s", *d.Instance, d.GPU, ep.layout[*d.Instance], when, want)
		}
		key.instance = ep.slots[*d.Instance]
	case resource == resourceDRA:
		return sc.checkDRADevice(p, d, g, key)
	case resource == "":
		return key, sc.errAt(p+".resource", "required")
	default:
		return key, sc.errAt(p+".resource", "unknown resource %q (want %s, %s, %s<profile> or %s)", resource, resourceGPU, resourceShared, resourceMIGPrefix, resourceDRA)
	}
	return key, nil
}

func describeDevice(k devKey, gpus []gpuFacts) string {
	switch {
	case k.replica >= 0:
		return fmt.Sprintf("replica %d of GPU %d", k.replica, k.gpu)
	case k.instance >= 0:
		return describeSlot(k.gpu, gpus[k.gpu].slots[k.instance], gpus[k.gpu].epochs)
	}
	return fmt.Sprintf("GPU %d", k.gpu)
}
