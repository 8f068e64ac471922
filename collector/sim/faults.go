package sim

import (
	"errors"
	"fmt"
	"math"
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
}

// field returns the value of the fault field named f.
func (e *Event) field(f string) string {
	switch f {
	case "kubelet":
		return e.Kubelet
	case "backend":
		return e.Backend
	default:
		return e.Exporter
	}
}

// kinds lists the fields that say what the event is about: "gpu", "kubelet",
// "backend", "exporter".
func (sc *Scenario) kinds(p string, e *Event) []string {
	var ks []string
	if e.GPU != nil {
		ks = append(ks, "gpu")
	}
	for _, f := range faultValues {
		if e.field(f.field) != "" || sc.has(p+"."+f.field) {
			ks = append(ks, f.field)
		}
	}
	return ks
}

func (sc *Scenario) validateEvents(numGPUs int) error {
	if len(sc.Events) > maxEvents {
		return sc.errAt("events", "more than %d events", maxEvents)
	}
	lost := map[int]int{}
	windows := map[string][]int{} // fault field → its events so far
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
			return sc.errAt(p, "give gpu (with xid or lost), kubelet: down, backend: failing or exporter: stopped")
		case len(ks) > 1:
			return sc.errAt(p+"."+ks[1], "an event is about one thing: give %s or %s, not both", ks[0], ks[1])
		case ks[0] == "gpu":
			if err := sc.checkGPUEvent(p, e, numGPUs, lost, i); err != nil {
				return err
			}
		default:
			if err := sc.checkFault(p, ks[0], e, windows); err != nil {
				return err
			}
			windows[ks[0]] = append(windows[ks[0]], i)
		}
	}
	return nil
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

// checkFault validates a kubelet, backend or exporter window against the earlier
// windows of its kind.
func (sc *Scenario) checkFault(p, kind string, e *Event, windows map[string][]int) error {
	for _, f := range faultValues {
		if f.field == kind && e.field(kind) != f.value {
			return sc.errAt(p+"."+kind, "must be %s, got %q", f.value, e.field(kind))
		}
	}
	if e.XID != 0 || sc.has(p+".xid") {
		return sc.errAt(p+".xid", "only GPU events have an XID")
	}
	if e.Lost || sc.has(p+".lost") {
		return sc.errAt(p+".lost", "only GPUs get lost")
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

// span is a fault window [from, to) in ns after the backend's start.
type span struct{ from, to int64 }

// spans are disjoint windows sorted by time.
type spans []span

// faultSpans returns the windows of the events with fault field kind.
func faultSpans(sc *Scenario, kind string) spans {
	var s spans
	for i := range sc.Events {
		e := &sc.Events[i]
		if e.GPU == nil && e.field(kind) != "" {
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

// HistoryOnlyEvents describes the scenario's events that only a history plays
// (exporter stops), or returns "" when there are none. Safe for concurrent use.
func (b *Backend) HistoryOnlyEvents() string {
	if len(b.exporterStopped) == 0 {
		return ""
	}
	parts := make([]string, len(b.exporterStopped))
	for i, s := range b.exporterStopped {
		parts[i] = fmt.Sprintf("at %v for %v", time.Duration(s.from), time.Duration(s.to-s.from))
	}
	return "exporter stopped " + strings.Join(parts, ", ")
}
