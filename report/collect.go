package report

import (
	"context"
	"fmt"
	"math"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

const byDevice = "UUID, GPU_I_ID, namespace, pod, container"

// hostOf returns a device series' node: its `hostname` label, or the
// `Hostname` that dcgm-exporter up to 4.8.2 and gputally's
// --collector.legacy-hostname-label write. A range that spans the change of
// spelling has two series per device; both name the same node.
func hostOf(m pmodel.Metric) string {
	if h, ok := m["hostname"]; ok {
		return string(h)
	}
	return string(m["Hostname"])
}

func holdingOf(m pmodel.Metric) model.HoldingKey {
	return model.HoldingKey{
		Dev:    model.DeviceKey{UUID: string(m["UUID"]), GI: string(m["GPU_I_ID"])},
		Holder: model.HolderKey{Namespace: string(m["namespace"]), Pod: string(m["pod"]), Container: string(m["container"])},
	}
}

// collector runs the report's queries.
type collector struct {
	run       *rangeRunner
	teamLabel string
}

func (c *collector) plan(d *model.Dataset) {
	first := d.Start.Add(d.Step)
	// Each ledger counter: two queries from the bucket ending at the start, for
	// this period and the previous one.
	n := c.run.requests(first, d.End, d.Step) + 4*c.run.requests(d.Start, d.End, d.Step) + 4*c.run.requests(d.Start.Add(-d.End.Sub(d.Start)), d.Start, d.Step)
	n += c.run.requests(first, d.End, d.Step) // migModes
	if c.teamLabel != "" {
		n += c.run.requests(first, d.End, d.Step)
	}
	n += 5 * c.run.requests(d.Start.Add(d.Resolution), d.End, d.Resolution)
	c.run.total = n
}

// collect runs every query over (start, end].
func (c *collector) collect(ctx context.Context, start, end time.Time, step, resolution time.Duration) (*model.Dataset, error) {
	d := model.NewDataset(model.Range{Start: start, End: end, Step: step, Resolution: resolution})
	c.plan(d)
	defer c.run.finish()
	ledger, err := c.ledger(ctx, d, start, end, true)
	if err != nil {
		return nil, err
	}
	d.Ledger = ledger
	if err := c.previous(ctx, d); err != nil {
		return nil, err
	}
	first := start.Add(step)
	if err := c.run.run(ctx, "allocation", fmt.Sprintf(
		"max by (%s, resource, sharing) (max_over_time(gputally_gpu_allocation[%s]))", byDevice, pmodel.Duration(step)),
		first, end, step, func(m pmodel.Matrix) {
			for _, s := range m {
				d.Alloc[holdingOf(s.Metric)] = model.Alloc{Resource: string(s.Metric["resource"]), Sharing: string(s.Metric["sharing"])}
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
			"max by (namespace, pod, %s) (max_over_time(kube_pod_labels{%s!=\"\"}[%s]))", label, label, pmodel.Duration(step)),
			first, end, step, func(m pmodel.Matrix) {
				for _, s := range m {
					d.PodTeams[model.HolderKey{Namespace: string(s.Metric["namespace"]), Pod: string(s.Metric["pod"])}] = string(s.Metric[pmodel.LabelName(label)])
				}
			}); err != nil {
			return nil, err
		}
	}
	res := pmodel.Duration(resolution)
	firstRes := start.Add(resolution)
	// Device activity: the GR engine where DCGM or GPM has it, else GPU utilization.
	gr := map[model.DeviceKey]bool{}
	activity := func(device bool, scale float64) func(pmodel.Matrix) {
		return func(m pmodel.Matrix) {
			for _, s := range m {
				k := holdingOf(s.Metric)
				if device && scale != 1 && gr[k.Dev] {
					continue
				}
				if device && scale == 1 {
					gr[k.Dev] = true
				}
				for _, p := range s.Values {
					v := float64(p.Value) * scale
					if math.IsNaN(v) {
						continue
					}
					d.Activity[k] = append(d.Activity[k], float32(v))
					if device {
						t := p.Timestamp.Time().Add(-resolution / 2).UTC()
						h := &d.Heat[t.Weekday()][t.Hour()]
						h.Sum += v
						h.N++
					}
				}
			}
		}
	}
	queries := []struct {
		name, query string
		each        func(pmodel.Matrix)
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

func (c *collector) framebuffer(d *model.Dataset, scale float64) func(pmodel.Matrix) {
	return func(m pmodel.Matrix) {
		for _, s := range m {
			k := holdingOf(s.Metric)
			for _, p := range s.Values {
				if v := float64(p.Value) * scale; !math.IsNaN(v) {
					d.FBMiB[k] = append(d.FBMiB[k], float32(v))
				}
			}
		}
	}
}

// ledger reads seconds and EUR per holding and state over (start, end]; with
// fill it also fills d's per-bucket timeline and presence.
func (c *collector) ledger(ctx context.Context, d *model.Dataset, start, end time.Time, fill bool) (map[model.HoldingKey]*model.LedgerEntry, error) {
	out := map[model.HoldingKey]*model.LedgerEntry{}
	entry := func(m pmodel.Metric) (*model.LedgerEntry, int, bool) {
		st, ok := model.StateIndex(string(m["state"]))
		if !ok {
			return nil, 0, false
		}
		k := holdingOf(m)
		e := out[k]
		if e == nil {
			e = &model.LedgerEntry{Model: string(m["modelName"]), Host: hostOf(m), Profile: string(m["GPU_I_PROFILE"]), GPU: string(m["gpu"]), Last: -1}
			if fill {
				e.BusyPerBucket = make([]float32, d.Buckets)
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
	secs, err := c.counters(ctx, "gputally_gpu_seconds_total"+suffix, "gputally_gpu_seconds_total", start, end, d.Step)
	if err != nil {
		return nil, err
	}
	eurs, err := c.counters(ctx, "gputally_cost_eur_total"+suffix, "gputally_cost_eur_total", start, end, d.Step)
	if err != nil {
		return nil, err
	}
	for _, s := range secs.sorted() {
		e, st, ok := entry(s.metric)
		if !ok {
			continue
		}
		var g *model.GPUSeen
		if fill {
			g = gpuOf(d, string(s.metric["UUID"]), e)
		}
		for b, v := range s.increases(s.last, d.Step) {
			if math.IsNaN(v) {
				continue
			}
			e.Seconds[st] += v
			if !fill || b >= d.Buckets {
				continue
			}
			d.Present[b] = true
			if v > 0 {
				e.Last = max(e.Last, b)
			}
			d.Timeline[b][st] += v
			g.Seen[b] += v
			switch {
			case st == model.StateUnknown:
				g.Unknown[b] += v
			case st == model.StateLost && v > 0 && (g.FirstLost < 0 || b < g.FirstLost):
				g.FirstLost = b
			}
			if st == model.StateBusy {
				e.BusyPerBucket[b] += float32(v)
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
		for _, v := range s.increases(seconds, d.Step) {
			if !math.IsNaN(v) {
				e.EUR[st] += v
			}
		}
	}
	return out, nil
}

// gpuOf returns what the range saw of the GPU uuid, which e is on.
func gpuOf(d *model.Dataset, uuid string, e *model.LedgerEntry) *model.GPUSeen {
	g := d.GPUs[uuid]
	if g == nil {
		g = &model.GPUSeen{Host: e.Host, GPU: e.GPU, Seen: make([]float64, d.Buckets), Unknown: make([]float64, d.Buckets), FirstLost: -1}
		d.GPUs[uuid] = g
	}
	return g
}

func (c *collector) previous(ctx context.Context, d *model.Dataset) error {
	span := d.End.Sub(d.Start)
	prev, err := c.ledger(ctx, d, d.Start.Add(-span), d.Start, false)
	if err != nil {
		return err
	}
	// A history that begins at the range's start leaves the previous period
	// the seconds up to its first sample: that is no period to compare with.
	if secondsOf(prev) >= previousAtLeast*secondsOf(d.Ledger) && len(prev) > 0 {
		d.Previous = prev
	}
	return nil
}

// previousAtLeast is the share of this period's device-seconds the previous
// period must hold to be compared with.
const previousAtLeast = 0.01

func secondsOf(l map[model.HoldingKey]*model.LedgerEntry) float64 {
	var sum float64
	for _, e := range l {
		for _, v := range e.Seconds {
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

// migModes fills d.MIGMode from the physical GPUs' gputally_gpu_info series:
// per UUID, the mig_mode of the series with the latest sample in the range.
func (c *collector) migModes(ctx context.Context, d *model.Dataset, first, end time.Time, step time.Duration) error {
	latest := map[string]pmodel.Time{}
	return c.run.run(ctx, "gputally_gpu_info", fmt.Sprintf(
		`max by (UUID, GPU_I_ID, mig_mode) (max_over_time(gputally_gpu_info{GPU_I_ID=""}[%s]))`, pmodel.Duration(step)),
		first, end, step, func(m pmodel.Matrix) {
			for _, s := range m {
				uuid := string(s.Metric["UUID"])
				if s.Metric["GPU_I_ID"] != "" || len(s.Values) == 0 {
					continue
				}
				if t := s.Values[len(s.Values)-1].Timestamp; t >= latest[uuid] {
					latest[uuid] = t
					d.MIGMode[uuid] = string(s.Metric["mig_mode"])
				}
			}
		})
}
