package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dcgmnames"
)

func fleetOverview(names dcgmnames.Reads) *dashboard.DashboardBuilder {
	return newDashboard("gputally-fleet", "GPU fleet overview",
		"Every GPU and MIG instance gputally sees: how many, how busy, how full, how hot, and what idle time costs.",
		"now-6h", false).
		WithRow(row("Inventory and cost now")).
		WithPanel(singleStat("GPUs", "Physical GPUs reporting, by model.", unitCount,
			instantQuery(fmt.Sprintf("count by (modelName) (gputally_gpu_info{GPU_I_ID=\"\", %s})", fleet), "{{modelName}}"))).
		WithPanel(singleStat("Unallocated GPUs", "GPU-equivalents no pod holds (whole GPUs, and MIG slices in no instance or held by no pod), averaged over 5m.", unitCount,
			instantQuery(fmt.Sprintf(`sum(%s{state="unallocated", %s})`, alerts.RuleGPUsByState, fleet), "unallocated"))).
		WithPanel(singleStat("Idle cost now", "EUR per hour accrued by GPU time that is idle while allocated or not allocated at all, averaged over 5m.", euroPerHour,
			instantQuery(fmt.Sprintf(`sum by (state) (%s{state=~"idle|unallocated", %s})`, alerts.RuleCostEURPerHour, fleet), "{{state}} EUR/h"))).
		WithPanel(singleStat("Idle cost over the range", "EUR accrued by idle and unallocated GPU time over the dashboard's time range.", unitEUR,
			instantQuery(fmt.Sprintf(`sum by (state) (increase(gputally_cost_eur_total{state=~"idle|unallocated", %s}[$__range]))`, fleet), "{{state}}"))).
		WithPanel(singleStat("Cost rate in force", "EUR per hour the chosen GPUs cost right now (capital, energy and overhead), by model.", euroPerHour,
			instantQuery(fmt.Sprintf("sum by (modelName) (%s{%s})", alerts.RuleHourlyCostEUR, fleet), "{{modelName}}"))).
		WithRow(row("Activity")).
		WithPanel(heatmapOf("Activity per GPU and MIG instance", "Graphics-engine activity, falling back to GPU utilization where a device lacks it (MIG instances only have the former); from the recording rule "+alerts.RuleDeviceActivity+".", unitRatio,
			rangeQuery(fmt.Sprintf("%s{%s}", alerts.RuleDeviceActivity, fleet), deviceLegend))).
		WithPanel(stacked(timeSeries("Cost by state", "EUR per hour by ledger state: busy, idle (allocated but below the idle threshold) and unallocated.", euroPerHour,
			rangeQuery(fmt.Sprintf("sum by (state) (%s{%s})", alerts.RuleCostEURPerHour, fleet), "{{state}}")))).
		WithPanel(stacked(timeSeries("GPUs by state", "GPU-equivalents busy, idle and unallocated.", unitCount,
			rangeQuery(fmt.Sprintf("sum by (state) (%s{%s})", alerts.RuleGPUsByState, fleet), "{{state}}")))).
		WithRow(row("Health")).
		WithPanel(timeSeries("Framebuffer used", "Used part of each device's framebuffer, FB_USED / (FB_USED + FB_FREE).", unitRatio,
			rangeQuery(alerts.FramebufferUsed(names, fleet), deviceLegend)).Min(0).Max(1)).
		WithPanel(timeSeries("Temperature", "GPU temperature.", unitCelsius,
			rangeQuery(names.Value(dcgmnames.GPUTemp, fleet), "{{hostname}} gpu {{gpu}}"))).
		WithPanel(timeSeries("Power per node", "Power draw summed per node (a GPU's power is reported once, never per MIG instance).", unitWatt,
			rangeQuery(fmt.Sprintf("sum by (hostname) (%s)", names.Value(dcgmnames.Power, fleet)), "{{hostname}}"))).
		WithPanel(timeSeries("Unhealthy GPUs", "Devices gputally reports unhealthy (fallen off the bus, lost).", unitCount,
			rangeQuery(fmt.Sprintf("count by (hostname) (gputally_gpu_healthy{%s} == 0) or sum by (hostname) (0 * gputally_gpu_healthy{%s})", fleet, fleet), "{{hostname}}")))
}
