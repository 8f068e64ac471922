package dcgmexporter

import (
	"context"
	"fmt"
	"time"

	pmodel "github.com/prometheus/common/model"

	"github.com/gputally/gputally/report/engine"
	"github.com/gputally/gputally/report/model"
)

// dcgm-exporter 1.x (docs/report.md, "dcgm-exporter 1.x"): a bash script
// over dcgmi that wrote dcgm_gpu_utilization, dcgm_fb_used … with only gpu
// and a lower-case uuid (NVIDIA/gpu-monitoring-tools@03f24221a51848a1c21bc760a062354c2b3940e3:
// exporters/prometheus-dcgm/dcgm-exporter/dcgm-exporter;
// testdata/real/gpu-monitoring-tools-1x.prom), and builds still run with
// those names (dcgm-exporter #188). None of them is a name this source
// reads: a range without DCGM_FI_* series but with dcgm_gpu_utilization is
// refused with an error that names the version, not read as no GPUs.

// name1x is the 1.x name the source looks for.
const name1x = "dcgm_gpu_utilization"

// refuseNoData returns the error of a range without dcgm-exporter samples:
// one naming dcgm-exporter 1.x when its names are there, else noData's.
func (s *Source) refuseNoData(ctx context.Context, run *engine.Runner, r model.Range) error {
	found := false
	run.Plan(1)
	err := run.Run(ctx, "1.x names", fmt.Sprintf(`count(last_over_time(%s[%s]))`, name1x, pmodel.Duration(r.End.Sub(r.Start))),
		r.End, r.End, r.Step, func(m pmodel.Matrix) {
			for _, st := range m {
				for _, p := range st.Values {
					found = found || p.Value > 0
				}
			}
		})
	switch {
	case err != nil:
		return err
	case found:
		return fmt.Errorf("no GPU data this report reads between %s and %s: the series are dcgm-exporter 1.x's (%s, dcgm_fb_used, … with gpu and uuid labels), whose names, units and labels the report does not read. Run dcgm-exporter 2.0 or later (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_GR_ENGINE_ACTIVE, …, or 4.9's DCGM_FI_DEV_GPU_UTIL_RATIO, …, with the node and the pods labelled): its default collectors file has what the report reads",
			r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), name1x)
	}
	return noData(r)
}
