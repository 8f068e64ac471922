package ledger

import (
	"context"
	"fmt"
	"math"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/dcgmnames"
	"github.com/gputally/gputally/report/model"
)

// usage fills d.Activity, d.Heat and d.FBMiB, a value per resolution step. Device
// activity is the GR engine where DCGM or GPM has it, else GPU utilization.
// The device families are read under both of dcgm-exporter's namings, which
// the exporter writes by --collector.dcgm-exporter-names (dcgmnames): per
// device, the new name's value, else the old one's, in the base unit; so a
// range across a change of the flag is one device.
func (c *collector) usage(ctx context.Context, d *model.Dataset) error {
	res := c.win.Of(d.Resolution)
	gr := map[model.DeviceKey]bool{} // devices with GR engine activity
	perDevice := func(agg, fn string, f dcgmnames.Family) string {
		return dcgmnames.ReadsBoth.Apply(f, "", func(series string) string {
			return fmt.Sprintf("%s by (%s) (%s(%s[%s]))", agg, c.id.ByDevice(), fn, series, res)
		})
	}
	queries := []struct {
		name, query string
		each        func(pmodel.Matrix)
	}{
		{bothNames(dcgmnames.GREngineActive), perDevice("avg", "avg_over_time", dcgmnames.GREngineActive), c.activity(bothNames(dcgmnames.GREngineActive), d, gr, grEngine, 1)},
		{bothNames(dcgmnames.GPUUtil), perDevice("avg", "avg_over_time", dcgmnames.GPUUtil), c.activity(bothNames(dcgmnames.GPUUtil), d, gr, gpuUtil, 1)},
		{"gputally_pod_gpu_utilization_ratio", fmt.Sprintf("avg by (%s) (avg_over_time(gputally_pod_gpu_utilization_ratio[%s]))", c.id.ByDevice(), res), c.activity("gputally_pod_gpu_utilization_ratio", d, gr, podUtil, 1)},
		{bothNames(dcgmnames.FBUsed), perDevice("max", "max_over_time", dcgmnames.FBUsed), c.framebuffer(bothNames(dcgmnames.FBUsed), d, 1.0/(1<<20))},
		{"gputally_pod_gpu_memory_used_bytes", fmt.Sprintf("max by (%s) (max_over_time(gputally_pod_gpu_memory_used_bytes[%s]))", c.id.ByDevice(), res), c.framebuffer("gputally_pod_gpu_memory_used_bytes", d, 1.0/(1<<20))},
	}
	for _, q := range queries {
		if err := c.run.Run(ctx, q.name, q.query, d.Start.Add(d.Resolution), d.End, d.Resolution, q.each); err != nil {
			return err
		}
	}
	return nil
}

// bothNames names family f as the notes do: its new name, and the old one.
func bothNames(f dcgmnames.Family) string { return f.New + " (" + f.Old + " up to 4.8)" }

// activityKind is what an activity query reads.
type activityKind int

const (
	grEngine activityKind = iota // a device's graphics-engine activity
	gpuUtil                      // a device's GPU utilization, where it has no GR engine activity
	podUtil                      // a container's share of a shared GPU
)

// activity returns the reader of an activity query whose values times scale
// are ratios (0–1). A device query (grEngine, gpuUtil) also fills d.Heat;
// the GR engine query marks the devices in gr, whose GPU utilization is then
// skipped. A value outside [0, 1] (checkGauge), like NaN, is no sample; it
// is counted under name for a note.
func (c *collector) activity(name string, d *model.Dataset, gr map[model.DeviceKey]bool, kind activityKind, scale float64) func(pmodel.Matrix) {
	device := kind != podUtil
	return func(m pmodel.Matrix) {
		for _, s := range m {
			k := c.id.HoldingOf(s.Metric)
			if kind == gpuUtil && gr[k.Dev] {
				continue
			}
			if kind == grEngine {
				gr[k.Dev] = true
			}
			for _, p := range s.Values {
				v := float64(p.Value) * scale
				if err := checkGauge(s.Metric, p, v, true); err != nil {
					c.leftOut.add(name, err)
					continue
				}
				if math.IsNaN(v) {
					continue
				}
				d.AddActivity(k, v)
				if device {
					d.AddHeat(p.Timestamp.Time().Add(-d.Resolution/2), v)
				}
			}
		}
	}
}

// framebuffer returns the reader of a framebuffer query whose values times
// scale are MiB. A value outside [0, maxFramebufferMiB] (checkGauge), like
// NaN, is no sample; it is counted under name for a note.
func (c *collector) framebuffer(name string, d *model.Dataset, scale float64) func(pmodel.Matrix) {
	return func(m pmodel.Matrix) {
		for _, s := range m {
			k := c.id.HoldingOf(s.Metric)
			for _, p := range s.Values {
				v := float64(p.Value) * scale
				if err := checkGauge(s.Metric, p, v, false); err != nil {
					c.leftOut.add(name, err)
					continue
				}
				if !math.IsNaN(v) {
					d.AddFramebuffer(k, v)
				}
			}
		}
	}
}
