package alerts

import "strings"

// RuleCO2eKilogramsPerHour is the emission rate of GPU time, kgCO2e per hour
// over 5m, by hostname, modelName, namespace and state (busy, idle,
// unallocated, lost, unknown):
// the facility energy of gputally_energy_joules_total times the grid carbon
// intensity each exporter exports for its cluster
// (gputally_grid_carbon_intensity_grams_per_joule), so the rule holds no
// constant and a fleet of clusters in different grids sums right. GPUs
// priced by a flat rate or without power readings have no energy, and
// exporters whose price book gives no intensity no emissions: neither is in
// it, rather than 0.
const RuleCO2eKilogramsPerHour = "node_model_namespace_state:gputally_co2e_kilograms_per_hour:rate5m"

// carbonRules are the recording rules of emissions.
func carbonRules() []Rule {
	return []Rule{{Record: RuleCO2eKilogramsPerHour, Expr: strings.Join([]string{
		`sum by (hostname, modelName, namespace, state) (`,
		`  rate(gputally_energy_joules_total[5m])`,
		`  * on (job, instance) group_left`,
		`  gputally_grid_carbon_intensity_grams_per_joule`,
		`)`,
		`* 3600 / 1000`,
	}, "\n")}}
}
