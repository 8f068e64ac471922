package ledger

import (
	"context"
	"fmt"
	"math"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/model"
)

// usage fills d.Activity, d.Heat and d.FBMiB, a value per resolution step. Device
// activity is the GR engine where DCGM or GPM has it, else GPU utilization.
func (c *collector) usage(ctx context.Context, d *model.Dataset) error {
	res := c.win.Of(d.Resolution)
	gr := map[model.DeviceKey]bool{} // devices with GR engine activity
	queries := []struct {
		name, query string
		each        func(pmodel.Matrix)
	}{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", fmt.Sprintf("avg by (%s) (avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[%s]))", c.id.ByDevice(), res), c.activity("DCGM_FI_PROF_GR_ENGINE_ACTIVE", d, gr, true, 1)},
		{"DCGM_FI_DEV_GPU_UTIL", fmt.Sprintf("avg by (%s) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[%s]))", c.id.ByDevice(), res), c.activity("DCGM_FI_DEV_GPU_UTIL", d, gr, true, 0.01)},
		{"gputally_pod_gpu_utilization_ratio", fmt.Sprintf("avg by (%s) (avg_over_time(gputally_pod_gpu_utilization_ratio[%s]))", c.id.ByDevice(), res), c.activity("gputally_pod_gpu_utilization_ratio", d, gr, false, 1)},
		{"DCGM_FI_DEV_FB_USED", fmt.Sprintf("max by (%s) (max_over_time(DCGM_FI_DEV_FB_USED[%s]))", c.id.ByDevice(), res), c.framebuffer("DCGM_FI_DEV_FB_USED", d, 1)},
		{"gputally_pod_gpu_memory_used_bytes", fmt.Sprintf("max by (%s) (max_over_time(gputally_pod_gpu_memory_used_bytes[%s]))", c.id.ByDevice(), res), c.framebuffer("gputally_pod_gpu_memory_used_bytes", d, 1.0/(1<<20))},
	}
	for _, q := range queries {
		if err := c.run.Run(ctx, q.name, q.query, d.Start.Add(d.Resolution), d.End, d.Resolution, q.each); err != nil {
			return err
		}
	}
	return nil
}

// activity returns the reader of an activity query whose values times scale
// are ratios (0–1). A device query (device) also fills d.Heat; its GR engine
// query (scale 1) marks the devices in gr, whose GPU utilization (scale ≠ 1)
// is then skipped. A value outside [0, 1] (checkGauge), like NaN, is no
// sample; it is counted under name for a note.
func (c *collector) activity(name string, d *model.Dataset, gr map[model.DeviceKey]bool, device bool, scale float64) func(pmodel.Matrix) {
	return func(m pmodel.Matrix) {
		for _, s := range m {
			k := c.id.HoldingOf(s.Metric)
			if device && scale != 1 && gr[k.Dev] {
				continue
			}
			if device && scale == 1 {
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
