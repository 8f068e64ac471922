package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Pods that wait for a node. A scenario pod entry may be created before it
// starts — `created: 2h` with `start: 8h` is a pod that waits, Pending and
// unschedulable, from 2 h until it is bound to this node at 8 h — and a
// scenario may list pods that never get a node:
//
//	scheduler: volcano               # the GPU pods' schedulerName; default default-scheduler
//	pending:                         # pods no node takes
//	  - namespace: research
//	    pod: train-big
//	    container: main              # optional; default main
//	    resource: nvidia.com/gpu     # nvidia.com/gpu | nvidia.com/gpu.shared | nvidia.com/mig-<profile>
//	    count: 4                     # devices requested
//	    created: 2h
//	    deleted: 30h                 # optional: deleted while pending; default: pending to the end
//
// kube-state-metrics is one per cluster: in a fleet, list a pending pod in one
// node's scenario only. What the API server knows of the pods (Pods) is what
// the history writes as kube-state-metrics' series (package history).

// DefaultScheduler is the schedulerName of a scenario's pods unless it says.
const DefaultScheduler = "default-scheduler"

// PendingPod is a pod that no node takes: it waits from Created until
// Deleted (0: the end of the run), requesting Count devices of Resource.
type PendingPod struct {
	Namespace string        `yaml:"namespace"`
	Pod       string        `yaml:"pod"`
	UID       string        `yaml:"uid"`       // empty: derived from the seed
	Container string        `yaml:"container"` // empty: main
	Resource  string        `yaml:"resource"`
	Count     int           `yaml:"count"`
	Created   time.Duration `yaml:"created"`
	Deleted   time.Duration `yaml:"deleted"`
}

// PodState is a GPU pod as the API server knows it at a time: bound to the
// node (Node and Scheduled set) or pending.
type PodState struct {
	Namespace, Pod, UID string
	Node                string    // empty while pending
	Created             time.Time // creationTimestamp
	Scheduled           time.Time // the PodScheduled condition's time; zero while pending
	Scheduler           string    // spec.schedulerName
	Requests            []ContainerRequest
}

// ContainerRequest is a container's request of one device plugin resource.
type ContainerRequest struct {
	Container, Resource string
	Count               int
}

// waiting is what a backend knows of the pods that wait: when each pod
// entry's pod was created, the pods no node takes, and the scheduler.
type waiting struct {
	created   map[string]int64 // namespace/pod → ns after the start, for pods created before they start
	pending   []PendingPod
	uids      []string // of pending
	scheduler string
}

// Waits reports whether the scenario has pods that wait for a node.
func (sc *Scenario) Waits() bool {
	return len(sc.Pending) > 0 || slices.ContainsFunc(sc.Pods, func(p Pod) bool { return p.Created != nil })
}

// validateWaiting checks the scheduler, the pods' creation times and the
// pending pods; held says which pods the scenario's entries name.
func (sc *Scenario) validateWaiting(held *heldDevices) error {
	if s := sc.Scheduler; s != "" && (!dnsSubdomain.MatchString(s) || len(s) > 253) {
		return sc.errAt("scheduler", "%q is not a valid scheduler name", s)
	}
	first := map[string]int{} // namespace/pod → its first entry that sets created
	for i := range sc.Pods {
		if p := &sc.Pods[i]; p.Created != nil {
			if _, ok := first[p.Namespace+"/"+p.Pod]; !ok {
				first[p.Namespace+"/"+p.Pod] = i
			}
		}
	}
	for i := range sc.Pods {
		p := &sc.Pods[i]
		full, path := p.Namespace+"/"+p.Pod, fmt.Sprintf("pods[%d].created", i)
		j, ok := first[full]
		switch {
		case !ok:
		case p.Created == nil:
			return sc.errAt(fmt.Sprintf("pods[%d]", i), "pod %s is created at %v in pods[%d]: the containers of a pod are created together, give each the same created", full, *sc.Pods[j].Created, j)
		case *p.Created != *sc.Pods[j].Created:
			return sc.errAt(path, "pod %s is created at %v in pods[%d]: the containers of a pod are created together", full, *sc.Pods[j].Created, j)
		case *p.Created < 0 || *p.Created > p.Start:
			return sc.errAt(path, "must be between 0 and the pod's start (%v), got %v", p.Start, *p.Created)
		}
	}
	seen := map[string]bool{}
	for i := range sc.Pending {
		if err := sc.checkPending(i, held, seen); err != nil {
			return err
		}
	}
	return nil
}

// checkPending checks pending pod i.
func (sc *Scenario) checkPending(i int, held *heldDevices, seen map[string]bool) error {
	p := &sc.Pending[i]
	path := fmt.Sprintf("pending[%d]", i)
	full := p.Namespace + "/" + p.Pod
	switch {
	case !dnsLabel.MatchString(p.Namespace) || len(p.Namespace) > 63:
		return sc.errAt(path+".namespace", "%q is not a valid namespace name", p.Namespace)
	case !dnsSubdomain.MatchString(p.Pod) || len(p.Pod) > 253:
		return sc.errAt(path+".pod", "%q is not a valid pod name", p.Pod)
	case p.Container != "" && (!dnsLabel.MatchString(p.Container) || len(p.Container) > 63):
		return sc.errAt(path+".container", "%q is not a valid container name", p.Container)
	case p.UID != "" && !uidPattern.MatchString(p.UID):
		return sc.errAt(path+".uid", "%q is not a lower-case UUID", p.UID)
	case p.Resource != resourceGPU && p.Resource != resourceShared && !strings.HasPrefix(p.Resource, resourceMIGPrefix):
		return sc.errAt(path+".resource", "%q is not a GPU resource (nvidia.com/gpu, nvidia.com/gpu.shared or nvidia.com/mig-<profile>)", p.Resource)
	case p.Count < 1 || p.Count > maxGPUs:
		return sc.errAt(path+".count", "must be between 1 and %d, got %d", maxGPUs, p.Count)
	case p.Created < 0 || p.Created > maxEventOffset:
		return sc.errAt(path+".created", "must be between 0 and %v, got %v", maxEventOffset, p.Created)
	case sc.has(path+".deleted") && p.Deleted <= p.Created:
		return sc.errAt(path+".deleted", "must be after created (%v), got %v", p.Created, p.Deleted)
	case p.Deleted > maxEventOffset:
		return sc.errAt(path+".deleted", "must be at most %v, got %v", maxEventOffset, p.Deleted)
	case seen[full]:
		return sc.errAt(path+".pod", "pod %s is pending twice", full)
	}
	if j, ok := held.pods[full]; ok {
		return sc.errAt(path+".pod", "pod %s runs on the node in pods[%d]: a pending pod is one no node takes", full, j)
	}
	seen[full] = true
	return nil
}

// addWaiting records what the backend must know of the pods that wait.
func (b *Backend) addWaiting(sc *Scenario) {
	b.waiting = waiting{created: map[string]int64{}, pending: sc.Pending, scheduler: cmp.Or(sc.Scheduler, DefaultScheduler)}
	for _, p := range sc.Pods {
		if p.Created != nil {
			b.waiting.created[p.Namespace+"/"+p.Pod] = int64(*p.Created)
		}
	}
	for _, p := range sc.Pending {
		b.waiting.uids = append(b.waiting.uids, cmp.Or(p.UID, uuidOf(b.seed, "pod", p.Namespace+"/"+p.Pod)))
	}
}

// Pods returns the GPU pods the API server knows at t, sorted by namespace
// and name: those bound to the node (its running pod entries and jobs, as
// KubeState lists their requests) and those waiting — pod entries created
// and not yet started, and pending pods created and not deleted. DRA claims
// are not requests. The backend's start must be fixed. Safe for concurrent
// use.
func (b *Backend) Pods(t time.Time) []PodState {
	since := t.UnixNano() - b.start
	at := func(off int64) time.Time { return time.Unix(0, b.start+max(off, 0)).UTC() }
	byPod := map[string]*PodState{}
	add := func(ns, pod, uid, node string, created, scheduled time.Time, r ContainerRequest) {
		full := ns + "/" + pod
		s := byPod[full]
		if s == nil {
			s = &PodState{Namespace: ns, Pod: pod, UID: uid, Node: node, Created: created, Scheduled: scheduled, Scheduler: b.waiting.scheduler}
			byPod[full] = s
		}
		for i := range s.Requests {
			if s.Requests[i].Container == r.Container && s.Requests[i].Resource == r.Resource {
				s.Requests[i].Count += r.Count
				return
			}
		}
		s.Requests = append(s.Requests, r)
	}
	for _, e := range b.running(since) {
		if e.draDevice != "" || !strings.HasPrefix(e.resource, "nvidia.com/") {
			continue
		}
		bound := e.window.from // a pod entry's start; a job's pod starts at n × every
		if e.window.every > 0 {
			bound = e.window.from + (since-e.window.from)/e.window.every*e.window.every
		}
		created, ok := b.waiting.created[e.namespace+"/"+e.pod]
		if !ok {
			created = bound
		}
		add(e.namespace, e.pod, e.uid, b.hostname, at(created), at(bound), ContainerRequest{e.container, e.resource, 1})
	}
	for _, e := range b.entries {
		created, ok := b.waiting.created[e.namespace+"/"+e.pod]
		if ok && created <= since && since < e.window.from && e.draDevice == "" {
			add(e.namespace, e.pod, e.uid, "", at(created), time.Time{}, ContainerRequest{e.container, e.resource, 1})
		}
	}
	for i, p := range b.waiting.pending {
		if int64(p.Created) <= since && (p.Deleted == 0 || since < int64(p.Deleted)) {
			add(p.Namespace, p.Pod, b.waiting.uids[i], "", at(int64(p.Created)), time.Time{}, ContainerRequest{cmp.Or(p.Container, "main"), p.Resource, p.Count})
		}
	}
	out := make([]PodState, 0, len(byPod))
	for _, s := range byPod {
		slices.SortFunc(s.Requests, func(x, y ContainerRequest) int {
			return cmp.Or(cmp.Compare(x.Container, y.Container), cmp.Compare(x.Resource, y.Resource))
		})
		out = append(out, *s)
	}
	slices.SortFunc(out, func(x, y PodState) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Pod, y.Pod))
	})
	return out
}

// inTurn reports whether a pod entry holding whole GPU key (no replica or
// MIG instance, not shared: a DRA claim, a HAMi grant, a KAI fraction) in
// win takes its turn on it after others: every
// holder so far is a pod entry whose window win does not overlap — a pod
// that waited is bound to a GPU another pod freed. It records the windows
// of a whole GPU's pod entries; the first holder is take's as any other.
func (h *heldDevices) inTurn(key devKey, shared bool, win window) bool {
	if key.replica >= 0 || key.instance >= 0 || shared || win.every > 0 {
		return false
	}
	turns, inTurns := h.turns[key] // jobs come after pods and never take turns
	for _, t := range turns {
		if win.from < t.to && t.from < win.to {
			return false
		}
	}
	h.turns[key] = append(turns, win)
	return inTurns
}
