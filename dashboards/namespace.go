package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dcgmnames"
)

func namespacePod(names dcgmnames.Reads) *dashboard.DashboardBuilder {
	onePod := `pod!="", ` + owned
	return waitingRow(newDashboard("gputally-namespace", "GPU namespace / pod",
		"What each namespace and pod holds, how much of it it uses (also on shared GPUs), what it costs, and the GPU demand that waits.",
		"now-24h", true).
		WithRow(row("Allocation")).
		WithPanel(stacked(timeSeries("GPUs allocated by namespace", "Devices held: a whole GPU or a MIG instance counts 1, a time-sliced or MPS replica its share of the GPU, a HAMi, KAI-Scheduler or DRA share what the price book's policy charges it.", unitCount,
			rangeQuery(fmt.Sprintf("sum by (namespace) (%s{%s})", alerts.RuleAllocatedGPUs, owned), "{{namespace}}")))).
		WithPanel(tableOf("Allocations", "Which container holds which device, how, and its share.", unitRatio,
			instantQuery(fmt.Sprintf("gputally_gpu_allocation{%s}", owned), ""))).
		WithPanel(stacked(timeSeries("GPU shares held (HAMi, KAI-Scheduler, DRA)", "The share of a GPU each container pays for: its dominant share of the memory and cores it reserved (or the price book's fractional policy), whatever it uses. A KAI reservation pod holding a GPU for no sharer shows 1.", unitRatio,
			rangeQuery(fmt.Sprintf(`sum by (namespace, pod, container, sharing) (gputally_gpu_allocation{sharing=~"hami|kai|dra", %s})`, owned), "{{namespace}}/{{pod}}/{{container}} ({{sharing}})")))).
		WithPanel(tableOf("Busy and idle estimated from the GPU's activity", "Device-hours over the range of each pod's busy and idle time judged by its GPU's activity, its own not measured (a share of a shared GPU without process accounting): that split is an estimate.", unitHours,
			instantQuery(fmt.Sprintf(`sum by (namespace, pod) (increase(gputally_gpu_estimated_seconds_total{%s}[$__range])) / 3600`, owned), ""))).
		WithRow(row("Usage per pod")).
		WithPanel(timeSeries("Activity per pod", "On shared GPUs: the pod's own activity from process accounting. On a whole GPU or MIG instance: the device's activity.", unitRatio,
			rangeQuery(fmt.Sprintf("gputally_pod_gpu_utilization_ratio{%[1]s}\nor\n(%[2]s)", owned, alerts.DeviceActivity(names, onePod)), podLegend)).Min(0)).
		WithPanel(timeSeries("Framebuffer per pod", "On shared GPUs: the pod's own framebuffer from process accounting. On a whole GPU or MIG instance: the device's.", unitBytes,
			rangeQuery(fmt.Sprintf("gputally_pod_gpu_memory_used_bytes{%s}\nor\n%s", owned, names.Value(dcgmnames.FBUsed, onePod)), podLegend))).
		WithRow(row("Cost")).
		WithPanel(stacked(timeSeries("Cost by namespace and state", "EUR per hour.", euroPerHour,
			rangeQuery(fmt.Sprintf(`sum by (namespace, state) (%s{%s})`, alerts.RuleCostEURPerHour, owned), "{{namespace}} {{state}}")))).
		WithPanel(timeSeries("Busy share", "Busy part of the GPU time each namespace held over the last hour.", unitRatio,
			rangeQuery(fmt.Sprintf(`%s{namespace=~"$namespace", modelName=~"$modelName"}`, alerts.RuleBusyRatio), "{{namespace}} {{modelName}}")).Min(0).Max(1)).
		WithPanel(tableOf("Cost per pod over the range", "EUR accrued by each pod over the range, busy and idle.", unitEUR,
			instantQuery(fmt.Sprintf(`topk(50, sum by (namespace, pod, state) (increase(gputally_cost_eur_total{%s}[$__range])))`, onePod), ""))))
}
