package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gputally/gputally/collector"
)

// gpmMetrics are the GPU Performance Monitoring metrics read on Hopper and
// later GPUs, and the DCGM profiling fields they stand for. NVML reports them in
// percent.
var gpmMetrics = [...]struct {
	id    gonvml.GpmMetricId
	field collector.Field
}{
	{gonvml.GPM_METRIC_GRAPHICS_UTIL, collector.GREngineActive},
	{gonvml.GPM_METRIC_SM_UTIL, collector.SMActive},
	{gonvml.GPM_METRIC_ANY_TENSOR_UTIL, collector.TensorActive},
	{gonvml.GPM_METRIC_DRAM_BW_UTIL, collector.DRAMActive},
}

// gpmSampler holds the two GPM sample buffers of a GPU or a GPU instance:
// metrics are computed between the previous sample and the current one.
type gpmSampler struct {
	buf  [2]gonvml.GpmSample
	cur  int  // the buffer the next sample goes into
	have bool // buf[1-cur] holds the previous sample
}

// setupGPM allocates GPM sample buffers for d (or, in MIG mode, for each of its
// MIG devices) when the GPU supports GPM. Failures leave the fields absent.
func (b *Backend) setupGPM(d *device) {
	if d.lost {
		return
	}
	sup, ret := d.h.GpmQueryDeviceSupport()
	if ret != gonvml.SUCCESS || sup.IsSupportedDevice == 0 {
		return
	}
	if !d.mig {
		d.gpm = b.allocGPM(d.uuid)
		return
	}
	for i := range d.migs {
		d.migs[i].gpm = b.allocGPM(d.uuid)
	}
}

func (b *Backend) allocGPM(uuid string) *gpmSampler {
	var g gpmSampler
	for i := range g.buf {
		s, ret := b.lib.GpmSampleAlloc()
		if ret != gonvml.SUCCESS {
			b.log.Warn("GPM metrics unavailable: allocate sample", "uuid", uuid, "err", ret)
			freeGPM(&g)
			return nil
		}
		g.buf[i] = s
	}
	return &g
}

// freeGPM frees g's sample buffers; g may be nil.
func freeGPM(g *gpmSampler) {
	if g == nil {
		return
	}
	for i, s := range g.buf {
		if s != nil {
			s.Free()
			g.buf[i] = nil
		}
	}
}

// freeGPMs frees the GPM buffers of every GPU and MIG device of devs.
func freeGPMs(devs []*device) {
	for _, d := range devs {
		freeGPM(d.gpm)
		d.gpm = nil
		for i := range d.migs {
			freeGPM(d.migs[i].gpm)
			d.migs[i].gpm = nil
		}
	}
}

// gpm takes a GPM sample of the GPU (giID < 0) or of its GPU instance giID and,
// from the second sample on, sets the activity ratios in v.
func (rd *reading) gpm(g *gpmSampler, giID int, notSupp *uint32, v *collector.Values) {
	if g == nil || rd.d.lost || *notSupp&(1<<probeGPM) != 0 {
		return
	}
	s := g.buf[g.cur]
	var ret gonvml.Return
	if giID < 0 {
		ret = rd.d.h.GpmSampleGet(s)
	} else {
		ret = rd.d.h.GpmMigSampleGet(giID, s)
	}
	if !rd.classify(probeGPM, ret, notSupp) {
		g.have = false
		return
	}
	if g.have {
		req := &rd.b.gpmReq
		req.NumMetrics = uint32(len(gpmMetrics))
		req.Sample1, req.Sample2 = g.buf[1-g.cur], s
		for i, m := range gpmMetrics {
			req.Metrics[i] = gonvml.GpmMetric{MetricId: uint32(m.id)}
		}
		if rd.classify(probeGPM, rd.b.lib.GpmMetricsGet(req), notSupp) {
			for i, m := range gpmMetrics {
				if r := req.Metrics[i]; gonvml.Return(r.NvmlReturn) == gonvml.SUCCESS {
					v.Set(m.field, min(1, max(0, r.Value/100)))
				}
			}
		}
		req.Sample1, req.Sample2 = nil, nil
	}
	g.have = true
	g.cur = 1 - g.cur
}
