package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dcgmnames"
)

func nodeGPU(names dcgmnames.Reads) *dashboard.DashboardBuilder {
	gpu := "{{hostname}} gpu {{gpu}}"
	return newDashboard("gputally-node", "GPU node / device",
		"Per GPU and MIG instance on the chosen nodes: activity, framebuffer, temperature, power, clocks, errors and throttling.",
		"now-6h", false).
		WithRow(row("Activity and memory")).
		WithPanel(timeSeries("Activity", "Graphics-engine activity per GPU and MIG instance; GPU utilization where the graphics engine's is missing.", unitRatio,
			rangeQuery(alerts.DeviceActivity(names, fleet), deviceLegend)).Min(0).Max(1)).
		WithPanel(timeSeries("SM and tensor activity", "Profiling fields, where the backend has them.", unitRatio,
			rangeQuery(names.Value(dcgmnames.SMActive, fleet), "SM "+deviceLegend),
			rangeQuery(names.Value(dcgmnames.TensorActive, fleet), "tensor "+deviceLegend)).Min(0).Max(1)).
		WithPanel(timeSeries("Framebuffer used", "Framebuffer in use per GPU and MIG instance.", unitBytes,
			rangeQuery(names.Value(dcgmnames.FBUsed, fleet), deviceLegend))).
		WithPanel(timeSeries("Framebuffer used share", "Used / (used + free).", unitRatio,
			rangeQuery(alerts.FramebufferUsed(names, fleet), deviceLegend)).Min(0).Max(1)).
		WithRow(row("Thermal, power, clocks")).
		WithPanel(timeSeries("Temperature", "GPU and memory temperature.", unitCelsius,
			rangeQuery(names.Value(dcgmnames.GPUTemp, fleet), "GPU "+gpu),
			rangeQuery(names.Value(dcgmnames.MemoryTemp, fleet), "memory "+gpu))).
		WithPanel(timeSeries("Power", "Power draw per GPU.", unitWatt,
			rangeQuery(names.Value(dcgmnames.Power, fleet), gpu))).
		WithPanel(timeSeries("Clocks", "SM and memory clocks.", unitHertz,
			rangeQuery(names.Value(dcgmnames.SMClock, fleet), "SM "+gpu),
			rangeQuery(names.Value(dcgmnames.MemClock, fleet), "memory "+gpu))).
		WithPanel(timeSeries("Throttling", "Share of time throttled by the power or the thermal limit: rate of the throttle-time counters, in seconds per second.", unitRatio,
			rangeQuery(names.Over("rate", dcgmnames.PowerViolation, fleet, "$__rate_interval"), "power "+gpu),
			rangeQuery(names.Over("rate", dcgmnames.ThermalViolation, fleet, "$__rate_interval"), "thermal "+gpu)).Min(0).Max(1)).
		WithRow(row("Errors")).
		WithPanel(timeSeries("XID errors", "XID events per code over the range window (0 where a GPU had none).", unitCount,
			rangeQuery(fmt.Sprintf(`sum by (hostname, gpu, xid) (increase(gputally_xid_errors_total{%[1]s}[$__rate_interval]))
or on (hostname, gpu)
0 * group by (hostname, gpu) (gputally_gpu_info{%[1]s})`, fleet), "{{hostname}} gpu {{gpu}} xid {{xid}}"))).
		WithPanel(timeSeries("ECC errors", "Single-bit (corrected) and double-bit (uncorrectable) ECC errors.", unitCount,
			rangeQuery(names.Over("increase", dcgmnames.ECCSBEVolatile, fleet, "$__rate_interval"), "SBE "+gpu),
			rangeQuery(names.Over("increase", dcgmnames.ECCDBEVolatile, fleet, "$__rate_interval"), "DBE "+gpu))).
		WithPanel(timeSeries("PCIe replays", "PCIe retries.", unitCount,
			rangeQuery(names.Over("increase", dcgmnames.PCIeReplay, fleet, "$__rate_interval"), gpu))).
		WithPanel(timeSeries("Health", "1 healthy, 0 lost (fallen off the bus).", unitNone,
			rangeQuery(fmt.Sprintf("gputally_gpu_healthy{%s}", fleet), deviceLegend)).Min(0).Max(1))
}
