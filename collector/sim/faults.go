package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrBackendFailing is what Sample returns (wrapped) inside a `backend: failing`
// event's window.
var ErrBackendFailing = errors.New("simulated backend failure (scenario event)")

// The fault kinds of events that last a while, and the one value each takes.
var faultValues = []struct{ field, value string }{
	{"kubelet", "down"},
	{"backend", "failing"},
	{"exporter", "stopped"},
	{"scrape", "missing"},
}

// restarted is the value of an exporter event at one instant: a new exporter
// process without a gap.
const restarted = "restarted"

// field returns the value of the fault field named f.
func (e *Event) field(f string) string {
	switch f {
	case "kubelet":
		return e.Kubelet
	case "backend":
		return e.Backend
	case "scrape":
		return e.Scrape
	default:
		return e.Exporter
	}
}

// kinds lists the fields that say what the event is about: "gpu", "mig",
// "kubelet", "backend", "exporter", "scrape".
func (sc *Scenario) kinds(p string, e *Event) []string {
	var ks []string
	if e.GPU != nil {
		ks = append(ks, "gpu")
	}
	if e.MIG != nil || sc.has(p+".mig") {
		ks = append(ks, "mig")
	}
	for _, f := range faultValues {
		if e.field(f.field) != "" || sc.has(p+"."+f.field) {
			ks = append(ks, f.field)
		}
	}
	return ks
}

// validateEvents validates the events against the node's GPUs and sets the
// MIG GPUs' layouts over time (gpuFacts.epochs).
func (sc *Scenario) validateEvents(gpus []gpuFacts) error {
	if len(sc.Events) > maxEvents {
		return sc.errAt("events", "more than %d events", maxEvents)
	}
	dra := map[int]int{} // GPU → the first pod entry that claims it through DRA
	for i := len(sc.Pods) - 1; i >= 0; i-- {
		if sc.Pods[i].Resource == resourceDRA {
			dra[sc.Pods[i].Device.GPU] = i
		}
	}
	lost := map[int]int{}
	windows := map[string][]int{} // fault field → its events so far
	var restarts, changes []int
	for i := range sc.Events {
		e := &sc.Events[i]
		p := fmt.Sprintf("events[%d]", i)
		if sc.lines != nil && !sc.has(p+".at") {
			return sc.errAt(p+".at", "required")
		}
		if e.At < 0 || e.At > maxEventOffset {
			return sc.errAt(p+".at", "must be between 0s and %v, got %v", maxEventOffset, e.At)
		}
		ks := sc.kinds(p, e)
		switch {
		case len(ks) == 0:
			return sc.errAt(p, "give gpu (with xid or lost), kubelet: down, backend: failing, exporter: stopped or restarted, scrape: missing, or mig")
		case len(ks) > 1 && ks[0] == "gpu" && ks[1] == "mig":
			return sc.errAt(p+".gpu", "a MIG reconfiguration names its GPU inside mig: {gpu: N, layout: [...]}")
		case len(ks) > 1:
			return sc.errAt(p+"."+ks[1], "an event is about one thing: give %s or %s, not both", ks[0], ks[1])
		case ks[0] == "gpu":
			if err := sc.checkGPUEvent(p, e, len(gpus), lost, i); err != nil {
				return err
			}
		case ks[0] == "mig":
			if err := sc.checkMIGEvent(p, e, gpus, dra); err != nil {
				return err
			}
			changes = append(changes, i)
		case ks[0] == "exporter" && e.Exporter == restarted:
			if err := sc.checkRestart(p, e); err != nil {
				return err
			}
			restarts = append(restarts, i)
		default:
			if err := sc.checkFault(p, ks[0], e, windows); err != nil {
				return err
			}
			windows[ks[0]] = append(windows[ks[0]], i)
		}
	}
	if err := sc.checkRestarts(restarts, windows["exporter"]); err != nil {
		return err
	}
	return sc.planMIG(gpus, changes)
}

// checkGPUEvent validates an XID or lost event of a GPU.
func (sc *Scenario) checkGPUEvent(p string, e *Event, numGPUs int, lost map[int]int, i int) error {
	if e.For != 0 || sc.has(p+".for") {
		return sc.errAt(p+".for", "a GPU event happens at one instant: remove for")
	}
	gpu := *e.GPU
	if gpu < 0 || gpu >= numGPUs {
		return sc.errAt(p+".gpu", "no GPU %d (the node has GPUs 0 to %d)", gpu, numGPUs-1)
	}
	switch {
	case e.Lost && e.XID != 0:
		return sc.errAt(p, "give xid or lost, not both")
	case e.Lost:
		if j, dup := lost[gpu]; dup {
			return sc.errAt(p+".lost", "GPU %d is already lost by events[%d]", gpu, j)
		}
		lost[gpu] = i
	case e.XID < 1 || e.XID > maxXID:
		if e.XID == 0 && !sc.has(p+".xid") {
			return sc.errAt(p, "give xid or lost")
		}
		return sc.errAt(p+".xid", "must be between 1 and %d, got %d", maxXID, e.XID)
	}
	return nil
}

// noGPUFields rejects the fields of GPU events on an event of another kind.
func (sc *Scenario) noGPUFields(p string, e *Event) error {
	if e.XID != 0 || sc.has(p+".xid") {
		return sc.errAt(p+".xid", "only GPU events have an XID")
	}
	if e.Lost || sc.has(p+".lost") {
		return sc.errAt(p+".lost", "only GPUs get lost")
	}
	return nil
}

// checkFault validates a kubelet, backend, exporter or scrape window against
// the earlier windows of its kind.
func (sc *Scenario) checkFault(p, kind string, e *Event, windows map[string][]int) error {
	for _, f := range faultValues {
		if f.field != kind || e.field(kind) == f.value {
			continue
		}
		if kind == "exporter" {
			return sc.errAt(p+"."+kind, "must be stopped (for a while) or %s (at one instant), got %q", restarted, e.field(kind))
		}
		return sc.errAt(p+"."+kind, "must be %s, got %q", f.value, e.field(kind))
	}
	if err := sc.noGPUFields(p, e); err != nil {
		return err
	}
	if sc.lines != nil && !sc.has(p+".for") {
		return sc.errAt(p+".for", "required: how long the %s is %s", kind, e.field(kind))
	}
	if e.For <= 0 || e.For > maxEventOffset {
		return sc.errAt(p+".for", "must be between 0s and %v, got %v", maxEventOffset, e.For)
	}
	for _, j := range windows[kind] {
		o := &sc.Events[j]
		if e.At < o.At+o.For && o.At < e.At+e.For {
			return sc.errAt(p+".at", "overlaps events[%d] (%s %s from %v for %v)", j, kind, o.field(kind), o.At, o.For)
		}
	}
	return nil
}

// checkRestart validates an exporter restart on its own.
func (sc *Scenario) checkRestart(p string, e *Event) error {
	if err := sc.noGPUFields(p, e); err != nil {
		return err
	}
	if e.For != 0 || sc.has(p+".for") {
		return sc.errAt(p+".for", "a restart happens at one instant: remove for (exporter: stopped is the one that lasts)")
	}
	if e.At == 0 {
		return sc.errAt(p+".at", "the exporter starts at 0s anyway: a restart must be later")
	}
	return nil
}

// checkRestarts rejects restarts at the time of another and restarts while
// the exporter is stopped or at the end of a stop (it starts again then
// anyway); stops are the indices of the `exporter: stopped` events.
func (sc *Scenario) checkRestarts(restarts, stops []int) error {
	at := map[time.Duration]int{}
	for _, i := range restarts {
		e := &sc.Events[i]
		p := fmt.Sprintf("events[%d]", i)
		if j, dup := at[e.At]; dup {
			return sc.errAt(p+".at", "events[%d] restarts the exporter at %v already", j, e.At)
		}
		at[e.At] = i
		for _, j := range stops {
			o := &sc.Events[j]
			if o.At <= e.At && e.At <= o.At+o.For {
				return sc.errAt(p+".at", "the exporter is stopped by events[%d] from %v for %v and starts again at its end anyway", j, o.At, o.For)
			}
		}
	}
	return nil
}

// span is a fault window [from, to) in ns after the backend's start.
type span struct{ from, to int64 }

// spans are disjoint windows sorted by time.
type spans []span

// faultSpans returns the windows of the events whose fault field kind is value.
func faultSpans(sc *Scenario, kind, value string) spans {
	var s spans
	for i := range sc.Events {
		e := &sc.Events[i]
		if e.GPU == nil && e.MIG == nil && e.field(kind) == value {
			s = append(s, span{int64(e.At), int64(e.At + e.For)})
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i].from < s[j].from })
	return s
}

// contains reports whether since lies in a window.
func (s spans) contains(since int64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].to > since })
	return i < len(s) && s[i].from <= since
}

// next returns the first window edge after since, or math.MaxInt64.
func (s spans) next(since int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].to > since })
	switch {
	case i == len(s):
		return math.MaxInt64
	case s[i].from > since:
		return s[i].from
	}
	return s[i].to
}

// KubeletDown reports whether the scenario has the kubelet down at t. The
// backend's start must be fixed. Safe for concurrent use.
func (b *Backend) KubeletDown(t time.Time) bool {
	return b.kubeletDown.contains(t.UnixNano() - b.start)
}

// ExporterStopped reports whether the scenario has the exporter stopped at t.
// The backend's start must be fixed. Safe for concurrent use.
func (b *Backend) ExporterStopped(t time.Time) bool {
	return b.exporterStopped.contains(t.UnixNano() - b.start)
}

// ExporterRestarted reports whether the scenario restarts the exporter after
// after and at or before upTo: a new process from the first sample at or
// after the restart's time. The backend's start must be fixed. Safe for
// concurrent use.
func (b *Backend) ExporterRestarted(after, upTo time.Time) bool {
	from, to := after.UnixNano()-b.start, upTo.UnixNano()-b.start
	i := sort.Search(len(b.restarts), func(i int) bool { return b.restarts[i] > from })
	return i < len(b.restarts) && b.restarts[i] <= to
}

// ScrapeMissing reports whether the scenario has no scrape of the exporter
// written at t. The backend's start must be fixed. Safe for concurrent use.
func (b *Backend) ScrapeMissing(t time.Time) bool {
	return b.scrapeMissing.contains(t.UnixNano() - b.start)
}

// HistoryOnlyEvents describes the scenario's events that only a history plays
// (exporter stops and restarts, missing scrapes), or returns "" when there are
// none. Safe for concurrent use.
func (b *Backend) HistoryOnlyEvents() string {
	var groups []string
	windows := func(what string, ss spans) {
		if len(ss) == 0 {
			return
		}
		parts := make([]string, len(ss))
		for i, s := range ss {
			parts[i] = fmt.Sprintf("at %v for %v", time.Duration(s.from), time.Duration(s.to-s.from))
		}
		groups = append(groups, what+" "+strings.Join(parts, ", "))
	}
	windows("exporter stopped", b.exporterStopped)
	if len(b.restarts) > 0 {
		parts := make([]string, len(b.restarts))
		for i, r := range b.restarts {
			parts[i] = fmt.Sprintf("at %v", time.Duration(r))
		}
		groups = append(groups, "exporter restarted "+strings.Join(parts, ", "))
	}
	windows("scrape missing", b.scrapeMissing)
	return strings.Join(groups, "; ")
}

// restartTimes returns the times of the scenario's exporter restarts, in ns
// after the start, sorted.
func restartTimes(sc *Scenario) []int64 {
	var out []int64
	for i := range sc.Events {
		if e := &sc.Events[i]; e.GPU == nil && e.MIG == nil && e.Exporter == restarted {
			out = append(out, int64(e.At))
		}
	}
	slices.Sort(out)
	return out
}
