package advice

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Volcano objects the report writes: Queues of scheduling.volcano.sh/v1beta1
// for the capacity plugin, and the Namespace annotation that picks a
// namespace's queue (volcano-sh/volcano@ed72c7c
// pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go:104-123: a
// PodGroup left in queue "default" gets its Namespace's annotation).
const (
	volcanoAPIVersion      = "scheduling.volcano.sh/v1beta1"
	volcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"
)

// volcanoBanner says what the scheduler must run for the queues to mean
// what they say.
var volcanoBanner = []string{
	"# Volcano queues (scheduling.volcano.sh/v1beta1) for the capacity plugin, one per team, from measured demand.",
	"# The volcano-scheduler ConfigMap must run the capacity plugin, not proportion (they conflict), and the reclaim",
	`# action: actions: "enqueue, allocate, backfill, reclaim"; replace proportion with capacity in its plugin tiers`,
	"# (docs/user-guide/how_to_use_capacity_plugin.md). proportion ignores spec.deserved: only capability, a hard cap,",
	"# would apply. A queue uses what others leave idle up to its capability and gets its deserved back by reclaim.",
}

type (
	vqMeta struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	vqObject struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   vqMeta `yaml:"metadata"`
		Spec       any    `yaml:"spec,omitempty"`
	}
	vqSpec struct {
		Reclaimable bool              `yaml:"reclaimable"`
		Deserved    map[string]string `yaml:"deserved"`
		Capability  map[string]string `yaml:"capability,omitempty"`
	}
)

// volcanoQueue is one team's queue and where its figures come from.
type volcanoQueue struct {
	vcQueue
	team string
	qs   []quota
}

// volcanoQueues returns a queue per team of qs (sorted by team), named by
// the team as a DNS label — Volcano's own default and root become
// <name>-team, and two teams whose names make the same label get -2, … —
// deserving its quota of each resource and capable of the cluster's whole
// capacity of it (capacity, devices per resource; a resource missing there
// is not capped, and deserved is at most the capacity).
func volcanoQueues(qs []quota, capacity map[string]int) []volcanoQueue {
	var out []volcanoQueue
	taken := map[string]bool{"default": true, "root": true}
	for i := 0; i < len(qs); {
		j := i
		for j < len(qs) && qs[j].team == qs[i].team {
			j++
		}
		base := dnsName(qs[i].team)
		if base == "default" || base == "root" {
			base += "-team"
		}
		name := base
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		taken[name] = true
		q := volcanoQueue{vcQueue: vcQueue{name: name, deserved: map[string]string{}}, team: qs[i].team, qs: qs[i:j]}
		for _, t := range q.qs {
			deserved := t.devices
			if c, ok := capacity[t.resource]; ok {
				deserved = min(deserved, c)
				if q.capability == nil {
					q.capability = map[string]string{}
				}
				q.capability[t.resource] = strconv.Itoa(c)
			}
			q.deserved[t.resource] = strconv.Itoa(deserved)
		}
		out = append(out, q)
		i = j
	}
	return out
}

// volcanoYAML writes the banner, a Queue per team and an annotated
// Namespace per namespace of the teams, with comments that say where each
// figure comes from; how says how the peaks were read and chosen how the
// scheduler was. The queues pass checkVolcanoQueues, or none is written and
// the text says why.
func volcanoYAML(qs []quota, capacity map[string]int, headroom float64, how, chosen string) string {
	if len(qs) == 0 {
		return ""
	}
	queues := volcanoQueues(qs, capacity)
	plain := make([]vcQueue, len(queues))
	for i, q := range queues {
		plain[i] = q.vcQueue
	}
	head := commentLines(append(slices.Clone(volcanoBanner), "# Scheduler: "+chosen+"."))
	if err := checkVolcanoQueues(plain); err != nil {
		return head + commentLines([]string{"# No queues written: they would break Volcano's queue rules: " + err.Error()})
	}
	docs := make([]string, 0, len(queues))
	for i, q := range queues {
		why := []string{fmt.Sprintf("# team %s: the most devices it kept busy and its pods waited for at the same time (%s), with headroom", q.team, how)}
		for _, t := range q.qs {
			why = append(why, quotaWhy(t, headroom)...)
			if c, ok := capacity[t.resource]; ok && t.devices > c {
				why = append(why, fmt.Sprintf("#     deserved %s: the cluster offers %d of %s", q.deserved[t.resource], c, t.resource))
			}
		}
		if q.capability == nil {
			why = append(why, "#   no capability: the cluster's capacity of its resources was not read (kube_node_status_allocatable)")
		}
		text := commentLines(why) + mustYAML(vqObject{volcanoAPIVersion, "Queue", vqMeta{Name: q.name},
			vqSpec{Reclaimable: true, Deserved: q.deserved, Capability: q.capability}})
		if i == 0 {
			text = head + text
		}
		docs = append(docs, text)
	}
	return strings.Join(append(docs, volcanoNamespaces(queues)...), "---\n")
}

// volcanoNamespaces are the Namespaces of the queues' teams, each annotated
// with the queue that picks it: in a namespace of several teams, the queue
// of the team with the largest quota, the comment naming the others.
func volcanoNamespaces(queues []volcanoQueue) []string {
	byNS := map[string][]*volcanoQueue{}
	for i := range queues {
		for _, ns := range queues[i].qs[0].namespaces {
			byNS[ns] = append(byNS[ns], &queues[i])
		}
	}
	var docs []string
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		qs := byNS[ns]
		slices.SortStableFunc(qs, func(a, b *volcanoQueue) int { return cmp.Compare(quotaSum(b.qs), quotaSum(a.qs)) })
		why := []string{fmt.Sprintf("# namespace %s: its pods' PodGroups left in queue default go to queue %s (team %s)", ns, qs[0].name, qs[0].team)}
		for _, other := range qs[1:] {
			why = append(why, fmt.Sprintf("#   team %s's pods here need the pod annotation %s: %s", other.team, volcanoQueueAnnotation, other.name))
		}
		docs = append(docs, commentLines(why)+mustYAML(vqObject{"v1", "Namespace", vqMeta{Name: ns, Annotations: map[string]string{volcanoQueueAnnotation: qs[0].name}}, nil}))
	}
	return docs
}

// quotaSum is the devices of a team's quotas over its resources.
func quotaSum(qs []quota) int {
	n := 0
	for _, q := range qs {
		n += q.devices
	}
	return n
}
