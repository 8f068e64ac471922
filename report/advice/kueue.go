package advice

import (
	"fmt"
	"strings"
)

// Kueue objects the report writes: kueue.x-k8s.io/v1beta2 (v1beta1 is
// deprecated since Kueue 0.16 and no longer served from 0.20).
const (
	kueueAPIVersion = "kueue.x-k8s.io/v1beta2"
	kueueFlavor     = "gputally-default"
	kueueCohort     = "gputally"
	kueueLocalQueue = "gputally"
)

// The Kueue objects, as far as kueueYAML writes them.
type (
	kqMeta struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace,omitempty"`
	}
	kqObject struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   kqMeta `yaml:"metadata"`
		Spec       any    `yaml:"spec"`
	}
	kqResource struct {
		Name         string `yaml:"name"`
		NominalQuota int    `yaml:"nominalQuota"`
	}
	kqFlavor struct {
		Name      string       `yaml:"name"`
		Resources []kqResource `yaml:"resources"`
	}
	kqGroup struct {
		CoveredResources []string   `yaml:"coveredResources"`
		Flavors          []kqFlavor `yaml:"flavors"`
	}
	kqRequirement struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	}
	kqSelector struct {
		MatchExpressions []kqRequirement `yaml:"matchExpressions"`
	}
	kqClusterQueueSpec struct {
		CohortName        string     `yaml:"cohortName"`
		NamespaceSelector kqSelector `yaml:"namespaceSelector"`
		ResourceGroups    []kqGroup  `yaml:"resourceGroups"`
	}
	kqLocalQueueSpec struct {
		ClusterQueue string `yaml:"clusterQueue"`
	}
)

// kueueYAML writes a ResourceFlavor, one ClusterQueue per team in one cohort
// (so a team can borrow what others leave unused), admitting only the team's
// namespaces, and a LocalQueue in each of them: named kueueLocalQueue, or,
// in a namespace whose pods belong to several teams, kueueLocalQueue-<queue>,
// one per team. Two teams whose names make the same DNS name get the second
// -2, and so on. Comments say where each quota comes from, and why when the
// floor of 1 applies.
func kueueYAML(qs []quota, headroom float64, how string) string {
	if len(qs) == 0 {
		return ""
	}
	docs := []string{"# one flavor for every GPU resource below; add nodeLabels to tie it to nodes\n" +
		mustYAML(kqObject{kueueAPIVersion, "ResourceFlavor", kqMeta{Name: kueueFlavor}, struct{}{}})}
	teams := teamsPerNamespace(qs)
	taken := map[string]bool{} // ClusterQueue names
	for i := 0; i < len(qs); {
		team := qs[i].team
		name := dnsName(team)
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s-%d", dnsName(team), n)
		}
		taken[name] = true
		j := i
		for j < len(qs) && qs[j].team == team {
			j++
		}
		docs = append(docs, clusterQueue(qs[i:j], name, headroom, how))
		for _, ns := range qs[i].namespaces {
			lq := kueueLocalQueue
			if teams[ns] > 1 {
				lq += "-" + name
			}
			docs = append(docs, mustYAML(kqObject{kueueAPIVersion, "LocalQueue", kqMeta{Name: lq, Namespace: ns}, kqLocalQueueSpec{ClusterQueue: name}}))
		}
		i = j
	}
	return strings.Join(docs, "---\n")
}

// teamsPerNamespace counts, per namespace, the teams whose pods run in it;
// qs are sorted by team.
func teamsPerNamespace(qs []quota) map[string]int {
	teams := map[string]int{}
	for i, q := range qs {
		if i == 0 || q.team != qs[i-1].team {
			for _, ns := range q.namespaces {
				teams[ns]++
			}
		}
	}
	return teams
}

// clusterQueue writes the ClusterQueue name of one team, whose quotas are
// qs, with the comment that says where each quota comes from; how says how
// the peaks were read.
func clusterQueue(qs []quota, name string, headroom float64, how string) string {
	g := kqGroup{Flavors: []kqFlavor{{Name: kueueFlavor}}}
	var why []string
	for _, q := range qs {
		g.CoveredResources = append(g.CoveredResources, q.resource)
		g.Flavors[0].Resources = append(g.Flavors[0].Resources, kqResource{Name: q.resource, NominalQuota: q.devices})
		why = append(why, quotaWhy(q, headroom)...)
	}
	spec := kqClusterQueueSpec{CohortName: kueueCohort, ResourceGroups: []kqGroup{g},
		// Only the team's own namespaces may use its quota.
		NamespaceSelector: kqSelector{MatchExpressions: []kqRequirement{{Key: "kubernetes.io/metadata.name", Operator: "In", Values: qs[0].namespaces}}}}
	head := fmt.Sprintf("# team %s: the most devices it kept busy and its pods waited for at the same time (%s), with headroom; it borrows unused quota in cohort %s", qs[0].team, how, kueueCohort)
	return commentLines(append([]string{head}, why...)) +
		mustYAML(kqObject{kueueAPIVersion, "ClusterQueue", kqMeta{Name: name}, spec})
}
