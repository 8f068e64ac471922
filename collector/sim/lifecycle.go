package sim

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Limits of pod lifecycles and jobs.
const (
	maxJobs     = 256
	minJobEvery = time.Second
	// maxJobName leaves room in a pod name (253 bytes) for "-" and any pod number.
	maxJobName = 253 - 1 - 19
	// jobPIDBlock is how many PIDs each job cycles through, one per pod.
	jobPIDBlock = 1024
)

// numbered matches a pod name that a job named by its first group could create.
var numbered = regexp.MustCompile(`^(.*)-[0-9]+$`)

// checkWindow validates the start and end of entry p.
func (sc *Scenario) checkWindow(p string, start, end time.Duration) error {
	if start < 0 || start > maxEventOffset {
		return sc.errAt(p+".start", "must be between 0s and %v, got %v", maxEventOffset, start)
	}
	if end == 0 && !sc.has(p+".end") {
		return nil
	}
	if end <= start {
		return sc.errAt(p+".end", "must be after start (%v), got %v", start, end)
	}
	if end > maxEventOffset {
		return sc.errAt(p+".end", "must be at most %v, got %v", maxEventOffset, end)
	}
	return nil
}

// describeWindow says when a pod runs, for error messages.
func describeWindow(start, end time.Duration) string {
	if end == 0 {
		return fmt.Sprintf("from %v to the end", start)
	}
	return fmt.Sprintf("from %v to %v", start, end)
}

func (sc *Scenario) validateJobs(gpus []gpuFacts, workloads map[string]*Workload, held *heldDevices) error {
	if len(sc.Jobs) > maxJobs {
		return sc.errAt("jobs", "more than %d jobs", maxJobs)
	}
	// Pod entries whose names a job could create, by namespace/prefix.
	numberedPods := map[string]int{}
	for i, pod := range sc.Pods {
		if m := numbered.FindStringSubmatch(pod.Pod); m != nil {
			if _, ok := numberedPods[pod.Namespace+"/"+m[1]]; !ok {
				numberedPods[pod.Namespace+"/"+m[1]] = i
			}
		}
	}
	jobs := map[string]int{}
	for i := range sc.Jobs {
		j := &sc.Jobs[i]
		p := fmt.Sprintf("jobs[%d]", i)
		if !dnsLabel.MatchString(j.Namespace) || len(j.Namespace) > 63 {
			return sc.errAt(p+".namespace", "%q is not a valid namespace name", j.Namespace)
		}
		if !dnsSubdomain.MatchString(j.Name) || len(j.Name) > maxJobName {
			return sc.errAt(p+".name", "%q is not a valid job name (a pod name of at most %d bytes)", j.Name, maxJobName)
		}
		if !dnsLabel.MatchString(j.Container) || len(j.Container) > 63 {
			return sc.errAt(p+".container", "%q is not a valid container name", j.Container)
		}
		full := j.Namespace + "/" + j.Name
		if k, dup := jobs[full]; dup {
			return sc.errAt(p+".name", "job %s is already defined by jobs[%d]", full, k)
		}
		jobs[full] = i
		if k, clash := numberedPods[full]; clash {
			return sc.errAt(p+".name", "the job's pods %s-<n> would clash with pods[%d] (%s/%s)", full, k, sc.Pods[k].Namespace, sc.Pods[k].Pod)
		}
		if j.Resource == resourceDRA {
			return sc.errAt(p+".resource", "jobs hold devices through the device plugin; %s jobs are not simulated", resourceDRA)
		}
		key, err := sc.checkDevice(p, j.Resource, j.Device, gpus, 0)
		if err != nil {
			return err
		}
		w, err := sc.workloadOf(p, j.Workload, workloads)
		if err != nil {
			return err
		}
		if sc.GPUs[gpus[key.gpu].group].HAMi != nil {
			return sc.errAt(p+".device.gpu", "GPU %d is HAMi's: jobs hold whole devices", key.gpu)
		}
		if err := sc.take(held, p, key, plainHold, w, gpus, full, jobWindow(j)); err != nil {
			return err
		}
		if j.Every < minJobEvery || j.Every > maxEventOffset {
			return sc.errAt(p+".every", "must be between %v and %v, got %v", minJobEvery, maxEventOffset, j.Every)
		}
		if j.Run <= 0 || j.Run > j.Every {
			return sc.errAt(p+".run", "must be more than 0s and at most every (%v), got %v", j.Every, j.Run)
		}
	}
	return nil
}

// window is when a load runs, in ns after the backend's start: from `from` to
// `to`, and, for a job, only the first run ns of every `every`.
type window struct {
	from, to   int64
	every, run int64 // 0 unless a job
}

// always is the window of a pod without start and end.
var always = window{from: math.MinInt64, to: math.MaxInt64}

// podWindow is the window of a scenario pod entry.
func podWindow(p *Pod) window {
	w := always
	if p.Start > 0 {
		w.from = int64(p.Start)
	}
	if p.End > 0 {
		w.to = int64(p.End)
	}
	return w
}

// jobWindow is the window of a job's pods.
func jobWindow(j *Job) window {
	return window{from: 0, to: math.MaxInt64, every: int64(j.Every), run: int64(j.Run)}
}

// active reports whether a pod runs at since ns after the start.
func (w *window) active(since int64) bool {
	if since < w.from || since >= w.to {
		return false
	}
	return w.every == 0 || (since-w.from)%w.every < w.run
}

// pod returns the number of the job's pod running at since, or -1.
func (w *window) pod(since int64) int64 {
	if w.every == 0 || !w.active(since) {
		return -1
	}
	return (since - w.from) / w.every
}

// next returns the first instant after since at which active changes, or
// math.MaxInt64.
func (w *window) next(since int64) int64 {
	switch {
	case since < w.from:
		return w.from
	case since >= w.to:
		return math.MaxInt64
	case w.every == 0:
		return w.to
	}
	n := (since - w.from) / w.every
	end := w.from + n*w.every + w.run
	if since >= end {
		end = w.from + (n+1)*w.every
	}
	return min(end, w.to)
}

// jobSpec is a job of the simulated node.
type jobSpec struct {
	namespace, name, container, resource string
	deviceID                             string
	window                               window
	pidBase                              uint32 // the job's pods take PIDs pidBase … pidBase+jobPIDBlock-1 in turn
}

// podName is the name of the job's pod number n.
func (j *jobSpec) podName(n int64) string { return j.name + "-" + strconv.FormatInt(n, 10) }

// pid is the PID of the job's pod number n.
func (j *jobSpec) pid(n int64) uint32 { return j.pidBase + uint32(n%jobPIDBlock) }

// NextKubeletChange returns the first time after t at which what the simulated
// kubelet answers changes: a pod starts or ends, a job's pod starts or ends, the
// kubelet goes down or comes back, a MIG reconfiguration changes the devices it
// advertises. ok is false when nothing changes after t. The
// backend's start must be fixed (Options.Start, or a first Sample). Safe for
// concurrent use.
func (b *Backend) NextKubeletChange(t time.Time) (next time.Time, ok bool) {
	since := t.UnixNano() - b.start
	n := b.kubeletDown.next(since)
	for i := range b.entries {
		n = min(n, b.entries[i].window.next(since))
	}
	for i := range b.jobs {
		n = min(n, b.jobs[i].window.next(since))
	}
	if e := b.inventoryAt(since) + 1; e < len(b.invs) {
		n = min(n, b.invs[e].from)
	}
	if n == math.MaxInt64 {
		return time.Time{}, false
	}
	return time.Unix(0, b.start+n), true
}

// running returns the pod entries running at since ns after the start: the
// scenario's pods within their windows and the current pod of every job.
func (b *Backend) running(since int64) []podEntry {
	var out []podEntry
	for _, e := range b.entries {
		if e.window.active(since) {
			out = append(out, e)
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		n := j.window.pod(since)
		if n < 0 {
			continue
		}
		pod := j.podName(n)
		full := j.namespace + "/" + pod
		c := keyOf(b.seed, "container", full, j.container)
		out = append(out, podEntry{
			namespace:   j.namespace,
			pod:         pod,
			uid:         uuidOf(b.seed, "pod", full),
			container:   j.container,
			resource:    j.resource,
			deviceID:    j.deviceID,
			containerID: fmt.Sprintf("%016x%016x%016x%016x", mix(c), mix(c+1), mix(c+2), mix(c+3)),
			pids:        []uint32{j.pid(n)},
			window:      j.window,
		})
	}
	return out
}
