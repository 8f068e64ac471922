package advice

import (
	"fmt"
	"strings"
	"testing"
)

// gpu is a ResourceList of nvidia.com/gpu.
func gpu(n string) map[string]string { return map[string]string{"nvidia.com/gpu": n} }

// TestVolcanoRules: one test per rule of Volcano's queue webhook that the
// CRD does not enforce, each at its boundary — the set that meets it
// exactly passes, the one a step past it fails with the webhook's words.
func TestVolcanoRules(t *testing.T) {
	chain := func(n int) []vcQueue { // a parent chain q1 ← q2 ← … ← qn
		qs := []vcQueue{{name: "q1"}}
		for i := 2; i <= n; i++ {
			qs = append(qs, vcQueue{name: fmt.Sprintf("q%d", i), parent: fmt.Sprintf("q%d", i-1)})
		}
		return qs
	}
	for _, c := range []struct {
		name string
		qs   []vcQueue
		want string // "" passes
	}{
		{"DNS-1123 label", []vcQueue{{name: "team-a"}}, ""},
		{"not DNS-1123: upper case", []vcQueue{{name: "Team-A"}}, "a lowercase RFC 1123 label"},
		{"not DNS-1123: a dot", []vcQueue{{name: "team.a"}}, "must not contain dots"},
		{"Volcano's default queue", []vcQueue{{name: "default"}}, `queue "default": Volcano's own queue`},
		{"Volcano's root queue", []vcQueue{{name: "root"}}, `queue "root": Volcano's own queue`},
		{"whole GPUs", []vcQueue{{name: "a", deserved: gpu("2"), capability: gpu("2000m")}}, ""},
		{"a fraction of a GPU", []vcQueue{{name: "a", deserved: gpu("1.5")}}, "deserved[nvidia.com/gpu]: 1.5 must be an integer"},
		{"milli GPUs", []vcQueue{{name: "a", capability: gpu("1500m")}}, "capability[nvidia.com/gpu]: 1500m must be an integer"},
		{"a fraction of a CPU", []vcQueue{{name: "a", deserved: map[string]string{"cpu": "1.5"}}}, ""},
		{"negative", []vcQueue{{name: "a", guarantee: gpu("-1"), deserved: gpu("1")}}, "guarantee.resource[nvidia.com/gpu]: -1 must be greater than or equal to 0"},
		{"not a quantity", []vcQueue{{name: "a", deserved: gpu("four")}}, `"four" is not a quantity`},
		{"guarantee = deserved = capability", []vcQueue{{name: "a", guarantee: gpu("3"), deserved: gpu("3"), capability: gpu("3")}}, ""},
		{"guarantee above deserved", []vcQueue{{name: "a", guarantee: gpu("4"), deserved: gpu("3")}}, "deserved[nvidia.com/gpu]=3 must be >= guarantee[nvidia.com/gpu]=4"},
		{"guarantee without deserved", []vcQueue{{name: "a", guarantee: gpu("1"), capability: gpu("4")}}, "no deserved[nvidia.com/gpu]"},
		{"deserved above capability", []vcQueue{{name: "a", deserved: gpu("5"), capability: gpu("4")}}, "deserved[nvidia.com/gpu]=5 must be <= capability[nvidia.com/gpu]=4"},
		{"deserved without capability", []vcQueue{{name: "a", deserved: gpu("50")}}, ""},
		{"itself as parent", []vcQueue{{name: "a", parent: "a"}}, "queue a cannot use itself as parent"},
		{"parent created after", []vcQueue{{name: "b", parent: "a"}, {name: "a"}}, "queue b: parent a is not created before it"},
		{"depth 5", chain(5), ""},
		{"depth 6", chain(6), "queue q6 exceeds the maximum allowed depth of 5"},
		{"children within parent", []vcQueue{
			{name: "p", deserved: gpu("8"), guarantee: gpu("4"), capability: gpu("8")},
			{name: "c1", parent: "p", deserved: gpu("5"), guarantee: gpu("2"), capability: gpu("8")},
			{name: "c2", parent: "p", deserved: gpu("3"), guarantee: gpu("2")},
		}, ""},
		{"children's deserved above parent's", []vcQueue{
			{name: "p", deserved: gpu("8")}, {name: "c1", parent: "p", deserved: gpu("5")}, {name: "c2", parent: "p", deserved: gpu("4")},
		}, "queue p: sum of children's deserved[nvidia.com/gpu] (9) exceeds its own (8)"},
		{"children's guarantee above parent's", []vcQueue{
			{name: "p", deserved: gpu("8"), guarantee: gpu("2")}, {name: "c1", parent: "p", deserved: gpu("4"), guarantee: gpu("2")},
			{name: "c2", parent: "p", deserved: gpu("4"), guarantee: gpu("1")},
		}, "queue p: sum of children's guarantee[nvidia.com/gpu] (3) exceeds its own (2)"},
		{"children's deserved of a resource the parent lacks", []vcQueue{
			{name: "p", deserved: map[string]string{"cpu": "4"}}, {name: "c", parent: "p", deserved: gpu("0")},
		}, "queue p: sum of children's deserved[nvidia.com/gpu] (0) exceeds its own ()"},
		{"capability above the nearest ancestor's", []vcQueue{
			{name: "g", capability: gpu("16")}, {name: "p", parent: "g", capability: gpu("8")}, {name: "c", parent: "p", capability: gpu("9")},
		}, "queue c capability[nvidia.com/gpu]=9 exceeds its ancestor p's capability=8"},
		// Only the nearest ancestor that sets a capability counts: c is within
		// p's 16 and not held to g's 4 (p, over g's, is the one at fault).
		{"capability against the nearest ancestor only", []vcQueue{
			{name: "g", capability: gpu("4")}, {name: "p", parent: "g", capability: gpu("16")}, {name: "c", parent: "p", capability: gpu("10")},
		}, "queue p capability[nvidia.com/gpu]=16 exceeds its ancestor g's capability=4"},
		{"capability within the nearest ancestor that sets one", []vcQueue{
			{name: "g", capability: gpu("16")}, {name: "p", parent: "g"}, {name: "c", parent: "p", capability: gpu("16")},
		}, ""},
	} {
		err := checkVolcanoQueues(c.qs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		case err != nil && strings.Count(err.Error(), "\n") > 0:
			t.Errorf("%s: more than the one error: %v", c.name, err)
		}
	}
}

// TestVolcanoQueueNames: a queue is named by its team as a DNS label;
// Volcano's own default and root become default-team and root-team, and a
// second team whose name makes a taken label gets -2.
func TestVolcanoQueueNames(t *testing.T) {
	qs := []quota{
		{team: "Default", resource: "nvidia.com/gpu", devices: 1, namespaces: []string{"a"}},
		{team: "ML", resource: "nvidia.com/gpu", devices: 1, namespaces: []string{"b"}},
		{team: "default", resource: "nvidia.com/gpu", devices: 1, namespaces: []string{"c"}},
		{team: "ml", resource: "nvidia.com/gpu", devices: 1, namespaces: []string{"d"}},
		{team: "root", resource: "nvidia.com/gpu", devices: 1, namespaces: []string{"e"}},
	}
	var names []string
	for _, q := range volcanoQueues(qs, nil) {
		names = append(names, q.name)
	}
	if got := strings.Join(names, " "); got != "default-team ml default-team-2 ml-2 root-team" {
		t.Errorf("queue names %s", got)
	}
}
