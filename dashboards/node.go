package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func nodeGPU() *dashboard.DashboardBuilder {
	gpu := "{{hostname}} gpu {{gpu}}"
	return newDashboard("gputally-node", "GPU node / device",
		"Per GPU and MIG instance on the chosen nodes: activity, framebuffer, temperature, power, clocks, errors and throttling.",
		"now-6h", false).
		WithRow(row("Activity and memory")).
		WithPanel(timeSeries("Activity", "Graphics-engine activity per GPU and MIG instance; DCGM_FI_DEV_GPU_UTIL / 100 where GR_ENGINE_ACTIVE is missing.", unitRatio,
			rangeQuery(activity(fleet), deviceLegend)).Min(0).Max(1)).
		WithPanel(timeSeries("SM and tensor activity", "Profiling fields, where the backend has them.", unitRatio,
			rangeQuery(fmt.Sprintf("DCGM_FI_PROF_SM_ACTIVE{%s}", fleet), "SM "+deviceLegend),
			rangeQuery(fmt.Sprintf("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{%s}", fleet), "tensor "+deviceLegend)).Min(0).Max(1)).
		WithPanel(timeSeries("Framebuffer used", "Framebuffer in use per GPU and MIG instance.", unitBytes,
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_FB_USED{%s} * 1048576", fleet), deviceLegend))).
		WithPanel(timeSeries("Framebuffer used share", "FB_USED / (FB_USED + FB_FREE).", unitRatio,
			rangeQuery(framebufferUsed(fleet), deviceLegend)).Min(0).Max(1)).
		WithRow(row("Thermal, power, clocks")).
		WithPanel(timeSeries("Temperature", "GPU and memory temperature.", unitCelsius,
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_GPU_TEMP{%s}", fleet), "GPU "+gpu),
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_MEMORY_TEMP{%s}", fleet), "memory "+gpu))).
		WithPanel(timeSeries("Power", "Power draw per GPU.", unitWatt,
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_POWER_USAGE{%s}", fleet), gpu))).
		WithPanel(timeSeries("Clocks", "SM and memory clocks.", unitHertz,
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_SM_CLOCK{%s} * 1e6", fleet), "SM "+gpu),
			rangeQuery(fmt.Sprintf("DCGM_FI_DEV_MEM_CLOCK{%s} * 1e6", fleet), "memory "+gpu))).
		WithPanel(timeSeries("Throttling", "Share of time throttled by the power or the thermal limit: rate of the violation counters (µs) / 1e6.", unitRatio,
			rangeQuery(fmt.Sprintf("rate(DCGM_FI_DEV_POWER_VIOLATION{%s}[$__rate_interval]) / 1e6", fleet), "power "+gpu),
			rangeQuery(fmt.Sprintf("rate(DCGM_FI_DEV_THERMAL_VIOLATION{%s}[$__rate_interval]) / 1e6", fleet), "thermal "+gpu)).Min(0).Max(1)).
		WithRow(row("Errors")).
		WithPanel(timeSeries("XID errors", "XID events per code over the range window (0 where a GPU had none).", unitCount,
			rangeQuery(fmt.Sprintf(`sum by (hostname, gpu, xid) (increase(gputally_xid_errors_total{%[1]s}[$__rate_interval]))
or on (hostname, gpu)
0 * group by (hostname, gpu) (gputally_gpu_info{%[1]s})`, fleet), "{{hostname}} gpu {{gpu}} xid {{xid}}"))).
		WithPanel(timeSeries("ECC errors", "Single-bit (corrected) and double-bit (uncorrectable) ECC errors.", unitCount,
			rangeQuery(fmt.Sprintf("increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[$__rate_interval])", fleet), "SBE "+gpu),
			rangeQuery(fmt.Sprintf("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[$__rate_interval])", fleet), "DBE "+gpu))).
		WithPanel(timeSeries("PCIe replays", "PCIe retries.", unitCount,
			rangeQuery(fmt.Sprintf("increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[$__rate_interval])", fleet), gpu))).
		WithPanel(timeSeries("Health", "1 healthy, 0 lost (fallen off the bus).", unitNone,
			rangeQuery(fmt.Sprintf("gputally_gpu_healthy{%s}", fleet), deviceLegend)).Min(0).Max(1))
}
