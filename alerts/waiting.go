package alerts

import (
	"fmt"
	"strings"
)

// Names of the rules on GPU demand that waits for a node, from
// kube-state-metrics' pod and node series (label sets of
// kubernetes/kube-state-metrics internal/store/pod.go and node.go); resource
// values in kube-state-metrics' spelling (nvidia_com_gpu,
// nvidia_com_gpu_shared, nvidia_com_mig_1g_10gb).
const (
	// RulePodWaitingGPUs is, per pod that is Pending and not bound to a
	// node, and GPU resource, the devices its containers request. Labels
	// namespace, pod, resource.
	RulePodWaitingGPUs = "namespace_pod_resource:gputally_waiting_gpus:sum"
	// RuleFreeGPUs is, per node and GPU resource, what the node offers the
	// scheduler (kube_node_status_allocatable) less what the pods bound to it
	// and Pending or Running request, at least 0. Labels node, resource.
	RuleFreeGPUs = "node_resource:gputally_free_gpus:sum"
	// RuleFragmentedGPUs is, per waiting pod and GPU resource, its request
	// when the free devices of all nodes together would hold it and no one
	// node's would (docs/report.md, "Demand that waits"). Labels namespace,
	// pod, resource.
	RuleFragmentedGPUs = "namespace_pod_resource:gputally_fragmented_gpus:sum"
	// RuleIdleEURByResource is the idle-allocated EUR per hour over 5m of
	// the devices held through each GPU resource (gputally's ledger and
	// gputally_gpu_allocation). Labels resource, in kube-state-metrics'
	// spelling.
	RuleIdleEURByResource = "resource:gputally_idle_cost_eur_per_hour:rate5m"
)

// gpuResources selects the GPU resources in kube-state-metrics' resource
// label: whole GPUs, time-sliced replicas, MIG instances.
const gpuResources = `resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"`

// ksmResource rewrites expr's resource label from the device plugin's
// spelling (nvidia.com/mig-1g.10gb+me) to kube-state-metrics'
// (nvidia_com_mig_1g_10gb_me): the prefix, then each ".", "-", "+" or "/"
// after it, the last first (three at most in a MIG profile's name).
func ksmResource(expr string) string {
	out := fmt.Sprintf(`label_replace(%s, "resource", "nvidia_com_$1", "resource", "nvidia\\.com/(.+)")`, expr)
	for range 3 {
		out = fmt.Sprintf(`label_replace(%s, "resource", "${1}_${2}", "resource", "(.+)[-./+](.+)")`, out)
	}
	return out
}

// podsIn is 1 for each pod whose phase matches phases (a regular
// expression), one series per pod: kube-state-metrics run twice counts once.
func podsIn(phases string) string {
	return fmt.Sprintf(`max by (namespace, pod, uid) (kube_pod_status_phase{phase=~"%s"} == 1)`, phases)
}

// waitingRules are the waiting group: the pods that wait, the free devices
// per node, the fragmented requests, and the idle EUR per resource.
func waitingRules() []Rule {
	return []Rule{
		{Record: RulePodWaitingGPUs, Expr: strings.Join([]string{
			`sum by (namespace, pod, resource) (`,
			fmt.Sprintf(`  max by (namespace, pod, uid, container, resource) (kube_pod_container_resource_requests{node="", %s})`, gpuResources),
			`  * on (namespace, pod, uid) group_left ()`,
			`  ` + podsIn("Pending"),
			`)`,
		}, "\n")},
		{Record: RuleFreeGPUs, Expr: strings.Join([]string{
			`clamp_min(`,
			fmt.Sprintf(`  max by (node, resource) (kube_node_status_allocatable{%s})`, gpuResources),
			`  - (`,
			`    sum by (node, resource) (`,
			fmt.Sprintf(`      max by (namespace, pod, uid, container, node, resource) (kube_pod_container_resource_requests{node!="", %s})`, gpuResources),
			`      * on (namespace, pod, uid) group_left ()`,
			`      ` + podsIn("Pending|Running"),
			`    )`,
			`    or`,
			fmt.Sprintf(`    0 * max by (node, resource) (kube_node_status_allocatable{%s})`, gpuResources),
			`  ),`,
			`  0`,
			`)`,
		}, "\n")},
		{Record: RuleFragmentedGPUs, Expr: strings.Join([]string{
			`(`,
			`  ` + RulePodWaitingGPUs,
			`  > on (resource) group_left ()`,
			`  max by (resource) (` + RuleFreeGPUs + `)`,
			`)`,
			`<= on (resource) group_left ()`,
			`sum by (resource) (` + RuleFreeGPUs + `)`,
		}, "\n")},
		{Record: RuleIdleEURByResource, Expr: "sum by (resource) (\n" + ksmResource(strings.Join([]string{
			`sum by (UUID, GPU_I_ID, namespace, pod, container) (rate(gputally_cost_eur_total{state="idle"}[5m])) * 3600`,
			`* on (UUID, GPU_I_ID, namespace, pod, container) group_left (resource)`,
			`group by (UUID, GPU_I_ID, namespace, pod, container, resource) (gputally_gpu_allocation)`,
		}, "\n")) + "\n)"},
	}
}

// waitingAlert fires for a GPU pod that has waited for a node longer than
// WaitLongerThan while devices of the resource it requests sat allocated
// and idle at more than WaitIdleMinEURPerHour; its value is that idle EUR
// per hour, and it carries the pod's team.
func waitingAlert(o Options) Rule {
	return Rule{
		Alert: "GPUPodsWaitingWhileIdle",
		Expr: strings.Join([]string{
			`(`,
			fmt.Sprintf(`  (%s > %s)`, RuleIdleEURByResource, num(o.WaitIdleMinEURPerHour)),
			`  * on (resource) group_right ()`,
			`  (`,
			`    0 * (`,
			`      ` + RulePodWaitingGPUs,
			`      and on (namespace, pod)`,
			fmt.Sprintf(`      (time() - max by (namespace, pod) (kube_pod_created) > %s)`, num(o.WaitLongerThan.Seconds())),
			`    ) + 1`,
			`  )`,
			`)`,
			`* on (namespace, pod) group_left (team)`,
			podTeam(dur(o.WaitLongerThan), false),
		}, "\n"),
		For:    dur(o.WaitFor),
		Labels: severity("warning"),
		Annotations: annotations(
			"GPU pod {{ $labels.namespace }}/{{ $labels.pod }} waits for {{ $labels.resource }} while {{ $value | printf \"%.2f\" }} EUR per hour of it sits idle",
			fmt.Sprintf("Pod {{ $labels.namespace }}/{{ $labels.pod }} has waited more than %s for a node with {{ $labels.resource }} free, while devices of that resource allocated to other pods sat idle at {{ $value | printf \"%%.2f\" }} EUR per hour. Releasing idle holders, or queues with reclaim (the weekly report's Kueue or Volcano configuration), would let it run.", dur(o.WaitLongerThan)),
		),
	}
}
