package applyspec

import (
	"testing"
)

// Volcano objects, as the report writes them: scheduling.volcano.sh/v1beta1
// Queues (the fields of the CRD, config/crd/volcano/bases/
// scheduling.volcano.sh_queues.yaml, that the report may set) and v1
// Namespaces with annotations.
type volcanoSpec struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec *struct {
		Reclaimable *bool             `yaml:"reclaimable"`
		Deserved    map[string]string `yaml:"deserved"`
		Capability  map[string]string `yaml:"capability"`
		Guarantee   *struct {
			Resource map[string]string `yaml:"resource"`
		} `yaml:"guarantee"`
		Parent string `yaml:"parent"`
	} `yaml:"spec"`
}

// VolcanoQueues is what the Volcano objects say: per queue and resource its
// deserved and capability, per namespace the queue its annotation picks.
type VolcanoQueues struct {
	Deserved, Capability map[string]string // "queue resource" → quantity
	Namespaces           map[string]string // namespace → queue
}

// CheckVolcano decodes the Volcano objects strictly and checks them:
// Queues of scheduling.volcano.sh/v1beta1, reclaimable, each named once;
// Namespaces of v1 whose scheduling.volcano.sh/queue-name annotation names
// a Queue of the file. The API server's dry-run (scripts/chart-test.sh)
// checks them against Volcano's CRD; report/advice checks Volcano's webhook
// rules.
func CheckVolcano(t *testing.T, text string) VolcanoQueues {
	t.Helper()
	objs, err := strictDecode[volcanoSpec](text)
	if err != nil {
		t.Fatalf("volcano objects: %v\n%s", err, text)
	}
	out := VolcanoQueues{Deserved: map[string]string{}, Capability: map[string]string{}, Namespaces: map[string]string{}}
	queues := map[string]bool{}
	for _, o := range objs {
		switch {
		case o.Kind == "Queue" && o.APIVersion == "scheduling.volcano.sh/v1beta1" && o.Spec != nil:
			if queues[o.Metadata.Name] {
				t.Errorf("Queue %s twice", o.Metadata.Name)
			}
			queues[o.Metadata.Name] = true
			if o.Spec.Reclaimable == nil || !*o.Spec.Reclaimable {
				t.Errorf("Queue %s is not reclaimable: its deserved share could not be taken back", o.Metadata.Name)
			}
			for r, v := range o.Spec.Deserved {
				out.Deserved[o.Metadata.Name+" "+r] = v
			}
			for r, v := range o.Spec.Capability {
				out.Capability[o.Metadata.Name+" "+r] = v
			}
		case o.Kind == "Namespace" && o.APIVersion == "v1" && o.Spec == nil:
			if _, dup := out.Namespaces[o.Metadata.Name]; dup {
				t.Errorf("Namespace %s twice", o.Metadata.Name)
			}
			out.Namespaces[o.Metadata.Name] = o.Metadata.Annotations["scheduling.volcano.sh/queue-name"]
		default:
			t.Errorf("unexpected object %s %s %s", o.APIVersion, o.Kind, o.Metadata.Name)
		}
	}
	for ns, q := range out.Namespaces {
		if !queues[q] {
			t.Errorf("Namespace %s picks queue %q, not in the file", ns, q)
		}
	}
	return out
}
