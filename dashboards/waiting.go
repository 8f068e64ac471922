package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/gputally/gputally/alerts"
)

// waitingRow adds the row on GPU demand that waits for a node, from
// kube-state-metrics through the waiting rules of package alerts: the
// devices waited for per namespace, beside those held and busy and the
// fragmented part, the pods waiting longest, and the free devices per node.
func waitingRow(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	ns := `namespace=~"$namespace"`
	return b.WithRow(row("Demand that waits")).
		WithPanel(stacked(timeSeries("GPUs waited for by namespace", "Devices requested by pods that are Pending and bound to no node (kube-state-metrics), per namespace: demand the cluster is not serving.", unitCount,
			rangeQuery(fmt.Sprintf("sum by (namespace) (%s{%s})", alerts.RulePodWaitingGPUs, ns), "{{namespace}}")))).
		WithPanel(timeSeries("GPUs waiting beside held and busy", "Devices waited for, and of them fragmented (the free devices of all nodes together would hold the pod, no one node's would: a packing scheduler would have placed it), beside the devices held and those busy.", unitCount,
			rangeQuery(fmt.Sprintf("sum(%s{%s})", alerts.RulePodWaitingGPUs, ns), "waiting"),
			rangeQuery(fmt.Sprintf("sum(%s{%s})", alerts.RuleFragmentedGPUs, ns), "of it fragmented"),
			rangeQuery(fmt.Sprintf("sum(%s{%s})", alerts.RuleAllocatedGPUs, owned), "held"),
			rangeQuery(fmt.Sprintf(`sum(%s{state="busy", %s})`, alerts.RuleGPUsByState, owned), "busy"))).
		WithPanel(tableOf("Pods waiting for a GPU", "Each pod waiting for a node with GPUs: how long since it was created, and the devices it requests.", units.Seconds,
			instantQuery(fmt.Sprintf("max by (namespace, pod) (time() - kube_pod_created{%[1]s})\nand on (namespace, pod)\n%[2]s{%[1]s}", ns, alerts.RulePodWaitingGPUs), ""))).
		WithPanel(tableOf("Free GPUs per node", "Devices each node offers less those its bound pods request, per resource: where a waiting pod could go, and whether the free devices are spread too thin for it.", unitCount,
			instantQuery(alerts.RuleFreeGPUs, "")))
}
