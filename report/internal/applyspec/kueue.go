package applyspec

import (
	"testing"
)

// Kueue v1beta2 objects, the fields gputally writes.
type kueueSpec struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		CohortName        string `yaml:"cohortName"`
		ClusterQueue      string `yaml:"clusterQueue"`
		NamespaceSelector *struct {
			MatchExpressions []struct {
				Key      string   `yaml:"key"`
				Operator string   `yaml:"operator"`
				Values   []string `yaml:"values"`
			} `yaml:"matchExpressions"`
		} `yaml:"namespaceSelector"`
		ResourceGroups []struct {
			CoveredResources []string `yaml:"coveredResources"`
			Flavors          []struct {
				Name      string `yaml:"name"`
				Resources []struct {
					Name         string `yaml:"name"`
					NominalQuota int    `yaml:"nominalQuota"`
				} `yaml:"resources"`
			} `yaml:"flavors"`
		} `yaml:"resourceGroups"`
	} `yaml:"spec"`
}

// CheckKueue checks the Kueue objects: v1beta2 only, no v1beta1 `cohort`,
// every LocalQueue pointing at a ClusterQueue of the file, and every flavor
// a ResourceFlavor of the file. It returns the nominal quotas by queue and
// resource. The API server's dry-run (scripts/chart-test.sh) checks the rest.
func CheckKueue(t *testing.T, text string) map[string]int {
	t.Helper()
	objs, err := strictDecode[kueueSpec](text)
	if err != nil {
		t.Fatalf("kueue objects: %v\n%s", err, text)
	}
	flavors, queues, quota := map[string]bool{}, map[string]bool{}, map[string]int{}
	seen := map[string]bool{} // kind/namespace/name: kubectl apply would keep only the last
	for _, o := range objs {
		if o.APIVersion != "kueue.x-k8s.io/v1beta2" {
			t.Errorf("%s %s: apiVersion %s, want kueue.x-k8s.io/v1beta2", o.Kind, o.Metadata.Name, o.APIVersion)
		}
		if id := o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name; seen[id] {
			t.Errorf("%s twice", id)
		} else {
			seen[id] = true
		}
		switch o.Kind {
		case "ResourceFlavor":
			flavors[o.Metadata.Name] = true
		case "ClusterQueue":
			queues[o.Metadata.Name] = true
			for _, g := range o.Spec.ResourceGroups {
				for _, f := range g.Flavors {
					for _, r := range f.Resources {
						quota[o.Metadata.Name+" "+r.Name] = r.NominalQuota
					}
				}
			}
		}
	}
	for _, o := range objs {
		switch o.Kind {
		case "ClusterQueue":
			for _, g := range o.Spec.ResourceGroups {
				for _, f := range g.Flavors {
					if !flavors[f.Name] {
						t.Errorf("ClusterQueue %s uses flavor %s, not in the file", o.Metadata.Name, f.Name)
					}
				}
			}
		case "LocalQueue":
			if !queues[o.Spec.ClusterQueue] || o.Metadata.Namespace == "" {
				t.Errorf("LocalQueue %s/%s points at ClusterQueue %q, not in the file", o.Metadata.Namespace, o.Metadata.Name, o.Spec.ClusterQueue)
			}
		}
	}
	return quota
}
