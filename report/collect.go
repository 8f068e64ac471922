package report

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"
)

// The states of gputally_gpu_seconds_total and gputally_cost_eur_total.
const (
	stateBusy = iota
	stateIdle
	stateUnallocated
	stateLost    // the GPU fell off the bus: its capital, no holder
	stateUnknown // holder or activity not measured
	numStates
)

func stateIndex(s string) (int, bool) {
	switch s {
	case "busy":
		return stateBusy, true
	case "idle":
		return stateIdle, true
	case "unallocated":
		return stateUnallocated, true
	case "lost":
		return stateLost, true
	case "unknown":
		return stateUnknown, true
	}
	return 0, false
}

// deviceKey names a physical GPU (GI empty) or one of its MIG instances.
type deviceKey struct{ UUID, GI string }

// holderKey names a container; the zero value is no one (unallocated).
type holderKey struct{ Namespace, Pod, Container string }

// holdingKey is one container on one device.
type holdingKey struct {
	dev    deviceKey
	holder holderKey
}

// ledgerEntry is what the ledger recorded for one holding over the range.
type ledgerEntry struct {
	model, host, profile string
	gpu                  string // the GPU's `gpu` label: its index on the node
	seconds              [numStates]float64
	eur                  [numStates]float64
	busyPerBucket        []float32 // busy device-seconds per step bucket
	last                 int       // the last step bucket with seconds in any state; -1: none
}

type allocInfo struct{ resource, sharing string }

// dataset holds the query results the analysis needs.
type dataset struct {
	start, end time.Time
	step       time.Duration
	resolution time.Duration
	buckets    int

	ledger   map[holdingKey]*ledgerEntry
	present  []bool               // bucket has ledger data
	timeline [][numStates]float64 // fleet device-seconds per bucket and state
	alloc    map[holdingKey]allocInfo
	activity map[holdingKey][]float32 // activity ratio per resolution step
	fbMiB    map[holdingKey][]float32 // peak framebuffer per resolution step
	heat     [7][24]struct {
		sum float64
		n   int
	}
	podTeams map[holderKey]string        // from kube_pod_labels
	previous map[holdingKey]*ledgerEntry // nil when the previous period has no data
	gpus     map[string]*gpuSeen         // by UUID: what the range saw of each GPU
	migMode  map[string]string           // by UUID: gputally_gpu_info's mig_mode at the GPU's last sample; absent: not known
}

// gpuSeen is what the ledger recorded of one physical GPU over the range.
type gpuSeen struct {
	host, gpu string
	seen      []float64 // device-seconds over all states per step bucket
	unknown   []float64 // of them unknown, per step bucket
	firstLost int       // first bucket with lost seconds; -1: none
}

const byDevice = "UUID, GPU_I_ID, namespace, pod, container"

// hostOf returns a device series' node: its `hostname` label, or the
// `Hostname` that dcgm-exporter up to 4.8.2 and gputally's
// --collector.legacy-hostname-label write. A range that spans the change of
// spelling has two series per device; both name the same node.
func hostOf(m model.Metric) string {
	if h, ok := m["hostname"]; ok {
		return string(h)
	}
	return string(m["Hostname"])
}

func holdingOf(m model.Metric) holdingKey {
	return holdingKey{
		dev:    deviceKey{UUID: string(m["UUID"]), GI: string(m["GPU_I_ID"])},
		holder: holderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"]), Container: string(m["container"])},
	}
}

// collector runs the report's queries.
type collector struct {
	run       *rangeRunner
	teamLabel string
}

func (c *collector) plan(d *dataset) {
	first := d.start.Add(d.step)
	// Each ledger counter: two queries from the bucket ending at the start, for
	// this period and the previous one.
	n := c.run.requests(first, d.end, d.step) + 4*c.run.requests(d.start, d.end, d.step) + 4*c.run.requests(d.start.Add(-d.end.Sub(d.start)), d.start, d.step)
	n += c.run.requests(first, d.end, d.step) // migModes
	if c.teamLabel != "" {
		n += c.run.requests(first, d.end, d.step)
	}
	n += 5 * c.run.requests(d.start.Add(d.resolution), d.end, d.resolution)
	c.run.total = n
}

// collect runs every query over (start, end].
func (c *collector) collect(ctx context.Context, start, end time.Time, step, resolution time.Duration) (*dataset, error) {
	d := &dataset{
		start: start, end: end, step: step, resolution: resolution,
		buckets:  int(end.Sub(start) / step),
		alloc:    map[holdingKey]allocInfo{},
		migMode:  map[string]string{},
		activity: map[holdingKey][]float32{},
		fbMiB:    map[holdingKey][]float32{},
		podTeams: map[holderKey]string{},
		gpus:     map[string]*gpuSeen{},
	}
	c.plan(d)
	defer c.run.finish()
	d.present = make([]bool, d.buckets)
	d.timeline = make([][numStates]float64, d.buckets)
	ledger, err := c.ledger(ctx, d, start, end, true)
	if err != nil {
		return nil, err
	}
	d.ledger = ledger
	if err := c.previous(ctx, d); err != nil {
		return nil, err
	}
	first := start.Add(step)
	if err := c.run.run(ctx, "allocation", fmt.Sprintf(
		"max by (%s, resource, sharing) (max_over_time(gputally_gpu_allocation[%s]))", byDevice, model.Duration(step)),
		first, end, step, func(m model.Matrix) {
			for _, s := range m {
				d.alloc[holdingOf(s.Metric)] = allocInfo{resource: string(s.Metric["resource"]), sharing: string(s.Metric["sharing"])}
			}
		}); err != nil {
		return nil, err
	}
	if err := c.migModes(ctx, d, first, end, step); err != nil {
		return nil, err
	}
	if c.teamLabel != "" {
		label := "label_" + sanitizeLabel(c.teamLabel)
		if err := c.run.run(ctx, "kube_pod_labels", fmt.Sprintf(
			"max by (namespace, pod, %s) (max_over_time(kube_pod_labels{%s!=\"\"}[%s]))", label, label, model.Duration(step)),
			first, end, step, func(m model.Matrix) {
				for _, s := range m {
					d.podTeams[holderKey{Namespace: string(s.Metric["namespace"]), Pod: string(s.Metric["pod"])}] = string(s.Metric[model.LabelName(label)])
				}
			}); err != nil {
			return nil, err
		}
	}
	res := model.Duration(resolution)
	firstRes := start.Add(resolution)
	// Device activity: the GR engine where DCGM or GPM has it, else GPU utilization.
	gr := map[deviceKey]bool{}
	activity := func(device bool, scale float64) func(model.Matrix) {
		return func(m model.Matrix) {
			for _, s := range m {
				k := holdingOf(s.Metric)
				if device && scale != 1 && gr[k.dev] {
					continue
				}
				if device && scale == 1 {
					gr[k.dev] = true
				}
				for _, p := range s.Values {
					v := float64(p.Value) * scale
					if math.IsNaN(v) {
						continue
					}
					d.activity[k] = append(d.activity[k], float32(v))
					if device {
						t := p.Timestamp.Time().Add(-resolution / 2).UTC()
						h := &d.heat[t.Weekday()][t.Hour()]
						h.sum += v
						h.n++
					}
				}
			}
		}
	}
	queries := []struct {
		name, query string
		each        func(model.Matrix)
	}{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", fmt.Sprintf("avg by (%s) (avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[%s]))", byDevice, res), activity(true, 1)},
		{"DCGM_FI_DEV_GPU_UTIL", fmt.Sprintf("avg by (%s) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[%s]))", byDevice, res), activity(true, 0.01)},
		{"gputally_pod_gpu_utilization_ratio", fmt.Sprintf("avg by (%s) (avg_over_time(gputally_pod_gpu_utilization_ratio[%s]))", byDevice, res), activity(false, 1)},
		{"DCGM_FI_DEV_FB_USED", fmt.Sprintf("max by (%s) (max_over_time(DCGM_FI_DEV_FB_USED[%s]))", byDevice, res), c.framebuffer(d, 1)},
		{"gputally_pod_gpu_memory_used_bytes", fmt.Sprintf("max by (%s) (max_over_time(gputally_pod_gpu_memory_used_bytes[%s]))", byDevice, res), c.framebuffer(d, 1.0/(1<<20))},
	}
	for _, q := range queries {
		if err := c.run.run(ctx, q.name, q.query, firstRes, end, resolution, q.each); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (c *collector) framebuffer(d *dataset, scale float64) func(model.Matrix) {
	return func(m model.Matrix) {
		for _, s := range m {
			k := holdingOf(s.Metric)
			for _, p := range s.Values {
				if v := float64(p.Value) * scale; !math.IsNaN(v) {
					d.fbMiB[k] = append(d.fbMiB[k], float32(v))
				}
			}
		}
	}
}

// ledger reads seconds and EUR per holding and state over (start, end]; with
// fill it also fills d's per-bucket timeline and presence.
func (c *collector) ledger(ctx context.Context, d *dataset, start, end time.Time, fill bool) (map[holdingKey]*ledgerEntry, error) {
	out := map[holdingKey]*ledgerEntry{}
	entry := func(m model.Metric) (*ledgerEntry, int, bool) {
		st, ok := stateIndex(string(m["state"]))
		if !ok {
			return nil, 0, false
		}
		k := holdingOf(m)
		e := out[k]
		if e == nil {
			e = &ledgerEntry{model: string(m["modelName"]), host: hostOf(m), profile: string(m["GPU_I_PROFILE"]), gpu: string(m["gpu"]), last: -1}
			if fill {
				e.busyPerBucket = make([]float32, d.buckets)
			}
			out[k] = e
		}
		return e, st, true
	}
	suffix := ""
	if !fill {
		suffix = " (previous period)"
	}
	// Buckets from the one ending at start: its values are the base of the first.
	secs, err := c.counters(ctx, "gputally_gpu_seconds_total"+suffix, "gputally_gpu_seconds_total", start, end, d.step)
	if err != nil {
		return nil, err
	}
	eurs, err := c.counters(ctx, "gputally_cost_eur_total"+suffix, "gputally_cost_eur_total", start, end, d.step)
	if err != nil {
		return nil, err
	}
	for _, s := range secs.sorted() {
		e, st, ok := entry(s.metric)
		if !ok {
			continue
		}
		var g *gpuSeen
		if fill {
			g = d.gpu(string(s.metric["UUID"]), e)
		}
		for b, v := range s.increases(s.last, d.step) {
			if math.IsNaN(v) {
				continue
			}
			e.seconds[st] += v
			if !fill || b >= d.buckets {
				continue
			}
			d.present[b] = true
			if v > 0 {
				e.last = max(e.last, b)
			}
			d.timeline[b][st] += v
			g.seen[b] += v
			switch {
			case st == stateUnknown:
				g.unknown[b] += v
			case st == stateLost && v > 0 && (g.firstLost < 0 || b < g.firstLost):
				g.firstLost = b
			}
			if st == stateBusy {
				e.busyPerBucket[b] += float32(v)
			}
		}
	}
	for _, s := range eurs.sorted() {
		e, st, ok := entry(s.metric)
		if !ok {
			continue
		}
		var seconds []float64
		if sec := secs[s.metric.Fingerprint()]; sec != nil {
			seconds = sec.last
		}
		for _, v := range s.increases(seconds, d.step) {
			if !math.IsNaN(v) {
				e.eur[st] += v
			}
		}
	}
	return out, nil
}

// gpu returns what the range saw of the GPU uuid, which e is on.
func (d *dataset) gpu(uuid string, e *ledgerEntry) *gpuSeen {
	g := d.gpus[uuid]
	if g == nil {
		g = &gpuSeen{host: e.host, gpu: e.gpu, seen: make([]float64, d.buckets), unknown: make([]float64, d.buckets), firstLost: -1}
		d.gpus[uuid] = g
	}
	return g
}

func (c *collector) previous(ctx context.Context, d *dataset) error {
	span := d.end.Sub(d.start)
	prev, err := c.ledger(ctx, d, d.start.Add(-span), d.start, false)
	if err != nil {
		return err
	}
	// A history that begins at the range's start leaves the previous period
	// the seconds up to its first sample: that is no period to compare with.
	if secondsOf(prev) >= previousAtLeast*secondsOf(d.ledger) && len(prev) > 0 {
		d.previous = prev
	}
	return nil
}

// previousAtLeast is the share of this period's device-seconds the previous
// period must hold to be compared with.
const previousAtLeast = 0.01

func secondsOf(l map[holdingKey]*ledgerEntry) float64 {
	var sum float64
	for _, e := range l {
		for _, v := range e.seconds {
			sum += v
		}
	}
	return sum
}

// sanitizeLabel turns a Kubernetes label key into the label name
// kube-state-metrics gives it (`app.kubernetes.io/team` → `app_kubernetes_io_team`).
func sanitizeLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// migModes fills d.migMode from the physical GPUs' gputally_gpu_info series:
// per UUID, the mig_mode of the series with the latest sample in the range.
func (c *collector) migModes(ctx context.Context, d *dataset, first, end time.Time, step time.Duration) error {
	latest := map[string]model.Time{}
	return c.run.run(ctx, "gputally_gpu_info", fmt.Sprintf(
		`max by (UUID, GPU_I_ID, mig_mode) (max_over_time(gputally_gpu_info{GPU_I_ID=""}[%s]))`, model.Duration(step)),
		first, end, step, func(m model.Matrix) {
			for _, s := range m {
				uuid := string(s.Metric["UUID"])
				if s.Metric["GPU_I_ID"] != "" || len(s.Values) == 0 {
					continue
				}
				if t := s.Values[len(s.Values)-1].Timestamp; t >= latest[uuid] {
					latest[uuid] = t
					d.migMode[uuid] = string(s.Metric["mig_mode"])
				}
			}
		})
}
