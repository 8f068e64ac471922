package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/dcgmnames"
)

// migSaving estimates, per pod holding a whole GPU, the EUR per month a MIG
// instance just big enough for it would save: the GPU's cost times the part of
// the GPU that p95 activity and peak framebuffer leave unused, in sevenths
// (the compute slices of A100, H100 and H200).
func migSaving(names dcgmnames.Reads) string {
	whole := `pod!="", GPU_I_ID=""`
	return fmt.Sprintf(`sum by (namespace, pod) (
  sum by (UUID, namespace, pod) (rate(gputally_cost_eur_total{%[1]s, %[2]s}[$__range])) * 3600 * %[3]s
  * on (UUID, namespace, pod)
  (1 - ceil(7 * max by (UUID, namespace, pod) (
    quantile_over_time(0.95, (%[4]s)[$__range:])
    or
    label_replace(max_over_time((%[5]s)[$__range:]), "signal", "memory", "", "")
  )) / 7)
)`, whole, owned, hoursPerMonth,
		alerts.DeviceActivity(names, whole+", "+owned), alerts.FramebufferUsed(names, whole+", "+owned))
}

// faultCost is the EUR accrued over the range in the fault states, lost (GPUs
// that fell off the bus) and unknown (holder or activity not measured), by the
// labels in by and state; both states show 0, not no value, where none accrued.
func faultCost(by string) string {
	zero := fmt.Sprintf(`0 * sum by (%s) (increase(gputally_cost_eur_total{%s}[$__range]))`, by, fleet)
	return fmt.Sprintf(`sum by (%[1]s, state) (increase(gputally_cost_eur_total{state=~"lost|unknown", %[2]s}[$__range]))
or
label_replace(%[3]s, "state", "lost", "", "")
or
label_replace(%[3]s, "state", "unknown", "", "")`, by, fleet, zero)
}

// co2eOverRange is the kgCO2e of the facility energy over the range, by the
// labels in by: each exporter's energy times the carbon intensity it exports.
func co2eOverRange(by string) string {
	return fmt.Sprintf(`sum by (%s) (
  increase(gputally_energy_joules_total{%s}[$__range])
  * on (job, instance) group_left
  gputally_grid_carbon_intensity_grams_per_joule
) / 1000`, by, owned)
}

// budgetFigures is, per team or namespace, the EUR spent this month, the
// month's projection and the monthly budget, one row each (label figure).
func budgetFigures() string {
	return fmt.Sprintf(`label_replace(%s, "figure", "spent this month", "", "")
or
label_replace(%s, "figure", "projected for the month", "", "")
or
label_replace(%s, "figure", "monthly budget", "", "")`, alerts.RuleSpendMonthToDate, alerts.RuleSpendForecast, alerts.RuleBudgetMonthly)
}

func costAndIdle(names dcgmnames.Reads) *dashboard.DashboardBuilder {
	return newDashboard("gputally-cost", "GPU cost & idle",
		"Where GPU money burns idle, who holds it, and what MIG or time-slicing would save.",
		"now-7d", true).
		WithRow(row("Cost")).
		WithPanel(stacked(timeSeries("Cost by state", "EUR per hour: busy, idle-but-allocated and unallocated GPU time; lost (GPUs that fell off the bus: their capital) and unknown (holder or activity not measured).", euroPerHour,
			rangeQuery(fmt.Sprintf("sum by (state) (%s{%s})", alerts.RuleCostEURPerHour, owned), "{{state}}")))).
		WithPanel(stacked(timeSeries("Cost by namespace", "EUR per hour by namespace (unallocated time has an empty namespace).", euroPerHour,
			rangeQuery(fmt.Sprintf("sum by (namespace) (%s{%s})", alerts.RuleCostEURPerHour, owned), "{{namespace}}")))).
		WithPanel(tableOf("Cost by namespace and state over the range", "EUR accrued over the dashboard's time range.", unitEUR,
			instantQuery(fmt.Sprintf("sum by (namespace, state) (increase(gputally_cost_eur_total{%s}[$__range]))", owned), ""))).
		WithPanel(tableOf("EUR per idle GPU-hour by model", "What an hour of idle or unallocated GPU time costs, by GPU model, over the range.", unitEUR,
			instantQuery(fmt.Sprintf(`sum by (modelName) (rate(gputally_cost_eur_total{state=~"idle|unallocated", %[1]s}[$__range]))
/
sum by (modelName) (rate(gputally_gpu_seconds_total{state=~"idle|unallocated", %[1]s}[$__range]))
* 3600`, fleet), ""))).
		WithPanel(singleStat("Lost and unknown cost over the range", "EUR accrued over the range by GPUs that fell off the bus (lost: repair or replace them) and by time whose holder or activity was not measured (unknown: kubelet or backend failing). Neither is idle capacity.", unitEUR,
			instantQuery(fmt.Sprintf("sum by (state) (%s)", faultCost("hostname")), "{{state}}"))).
		WithPanel(tableOf("Lost and unknown cost by node over the range", "EUR accrued over the range in the lost and unknown states, per node. A node with unknown time gets no drain advice in the weekly report.", unitEUR,
			instantQuery(faultCost("hostname"), ""))).
		WithRow(row("Who holds idle GPUs")).
		WithPanel(tableOf("Top idle holders over the range", "Containers whose allocated GPUs accrued the most idle EUR over the range.", unitEUR,
			instantQuery(fmt.Sprintf(`topk(20, sum by (namespace, pod, container, modelName, hostname) (increase(gputally_cost_eur_total{state="idle", %s}[$__range])))`, owned), ""))).
		WithPanel(timeSeries("Busy share by namespace", "Busy part of the GPU time each namespace held, over the last hour.", unitRatio,
			rangeQuery(fmt.Sprintf(`%s{namespace=~"$namespace", modelName=~"$modelName"}`, alerts.RuleBusyRatio), "{{namespace}} {{modelName}}")).Min(0).Max(1)).
		WithRow(row("What would save")).
		WithPanel(tableOf("Time-slicing or release: EUR per month", "Idle-but-allocated cost over the range, as EUR per month: what sharing these GPUs by time-slicing, or releasing them, would save at most.", unitEUR,
			instantQuery(fmt.Sprintf(`sum by (namespace) (rate(gputally_cost_eur_total{state="idle", %s}[$__range])) * 3600 * %s`, owned, hoursPerMonth), ""))).
		WithPanel(tableOf("MIG right-sizing: EUR per month", "Per pod on a whole GPU: the cost of the GPU share its p95 activity and peak framebuffer leave unused, in sevenths of a GPU (MIG compute slices). An estimate; the weekly report names the profile.", unitEUR,
			instantQuery(migSaving(names), ""))).
		WithRow(row("Carbon")).
		WithPanel(stacked(timeSeries("CO2e by namespace", "kgCO2e per hour: the facility energy of the GPU time each namespace held (measured power × PUE) times the grid carbon intensity each exporter's price book gives its cluster. Unallocated time has an empty namespace; GPUs priced by a flat rate or without power readings have no energy and are not in it.", unitKgCO2ePerHour,
			rangeQuery(fmt.Sprintf("sum by (namespace) (%s{%s})", alerts.RuleCO2eKilogramsPerHour, owned), "{{namespace}}")))).
		WithPanel(tableOf("kgCO2e by namespace and state over the range", "Emissions of GPU time over the dashboard's time range, at the carbon intensity in force now; idle is the part emitted while the GPUs were held idle.", unitKg,
			instantQuery(co2eOverRange("namespace, state"), ""))).
		WithRow(row("Budgets")).
		WithPanel(tableOf("Spend and budget this month by team or namespace", "EUR of the current UTC month per team (team label or team map) and per namespace: spent so far (up to the last step of the budget rules), projected for the month at the spend rate of the last 7 days, and the monthly budget of `gputally generate rules --budgets.file` or the chart's prometheusRule.budgets. The alerts GPUBudgetSpent and GPUBudgetForecastExceeded compare the same figures.", unitEUR,
			instantQuery(budgetFigures(), "")))
}
