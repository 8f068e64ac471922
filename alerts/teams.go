package alerts

import (
	"fmt"
	"strings"

	"github.com/gputally/gputally/team"
)

// Names of the team rules: which team each pod that holds a GPU belongs to, the
// way the report reads it (the team label, else the team map).
const (
	// RuleNamespaceTeam is the team map as constant series: 1 for each
	// namespace of Options.Teams, labels namespace and team.
	RuleNamespaceTeam = "namespace:gputally_team:info"
	// RulePodTeamLabel is 1 for each pod holding or waiting for a GPU whose Options.TeamLabel
	// names a team on kube-state-metrics' kube_pod_labels, labels namespace,
	// pod and team. Written only with a TeamLabel.
	RulePodTeamLabel = "namespace_pod:gputally_team_label:info"
	// RulePodTeam is, for each pod holding a GPU (gputally_gpu_allocation)
	// or waiting for one (RulePodWaitingGPUs),
	// labels namespace, pod and, when one is known, team: its team label, else
	// its namespace's team in the map. One series per pod; its value is the
	// precedence of the team's source: 2 the team label, 1 the team map, 0 no
	// team. Looking back over a window, the highest wins (podTeam): a pod
	// whose kube_pod_labels series missed a scrape keeps its labelled team.
	RulePodTeam = "namespace_pod:gputally_team:precedence"
)

// gpuPods are the pods whose team the team rules record: those that hold a
// GPU, and those that wait for one (waiting.go).
const gpuPods = "(gputally_gpu_allocation or " + RulePodWaitingGPUs + ")"

// teamRules are the team group: the team map's constants, then the pods'
// team labels, then every pod's team.
func teamRules(o Options) []Rule {
	var rules []Rule
	for _, ns := range o.Teams.Namespaces() {
		t, _ := o.Teams.Team(ns)
		rules = append(rules, Rule{Record: RuleNamespaceTeam, Expr: "vector(1)", Labels: map[string]string{"namespace": ns, "team": t}})
	}
	if o.TeamLabel != "" {
		l := team.KubePodLabel(o.TeamLabel)
		rules = append(rules, Rule{Record: RulePodTeamLabel, Expr: strings.Join([]string{
			`max by (namespace, pod, team) (`,
			fmt.Sprintf(`  label_replace(kube_pod_labels{%s!=""}, "team", "$1", "%s", "(.+)")`, l, l),
			`  and on (namespace, pod)`,
			`  ` + gpuPods,
			`)`,
		}, "\n")})
	}
	// topk keeps one team where kube-state-metrics briefly shows two label
	// values of a pod (a pod recreated under its name with another team).
	return append(rules, Rule{Record: RulePodTeam, Expr: strings.Join([]string{
		fmt.Sprintf(`2 * topk by (namespace, pod) (1, %s)`, RulePodTeamLabel),
		`or on (namespace, pod)`,
		fmt.Sprintf(`group by (namespace, pod) (%s) * on (namespace) group_left (team) %s`, gpuPods, RuleNamespaceTeam),
		`or on (namespace, pod)`,
		fmt.Sprintf(`0 * group by (namespace, pod) (%s)`, gpuPods),
	}, "\n")})
}

// podTeam is the team of each pod over the last lookback (a Prometheus
// duration), value 1, one series per pod, for `* on (namespace, pod)
// group_left (team)` joins: of the teams RulePodTeam recorded for the pod in
// the window, the one of the highest precedence (one of them where a pod's
// team changed within the window). Looking back keeps pods that ended within
// the window, and a missed scrape drops no pod nor changes its team. With
// teamed, only pods with a team.
func podTeam(lookback string, teamed bool) string {
	sel := RulePodTeam
	if teamed {
		sel += `{team!=""}`
	}
	return fmt.Sprintf("group by (namespace, pod, team) (topk by (namespace, pod) (1, max_over_time(%s[%s])))", sel, lookback)
}
