package helm_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// clusterScoped are the kinds the chart renders without a namespace.
var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true}

// TestDRAAttributionAPIAccess: the service-account token and RBAC exist only with
// attribution.dra.enabled, and then grant read access to resourceslices alone, to
// the pod's own ServiceAccount.
func TestDRAAttributionAPIAccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		dra  bool
	}{
		{"default", nil, false},
		{"dra", []string{"--set", "attribution.dra.enabled=true", "--set", "serviceAccount.name=gl"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, tc.args...)
			var ds appsv1.DaemonSet
			decodeOne(t, m, "DaemonSet", &ds)
			pod := ds.Spec.Template.Spec
			if mounted := pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken; mounted != tc.dra {
				t.Errorf("token mounted %v, want %v", mounted, tc.dra)
			}
			args := pod.Containers[0].Args
			if has := slices.Contains(args, "--attribution.dra.enabled"); has != tc.dra {
				t.Errorf("--attribution.dra.enabled in args: %v, want %v (%v)", has, tc.dra, args)
			}
			if !tc.dra {
				if n := len(m.ofKind("ClusterRole")) + len(m.ofKind("ClusterRoleBinding")); n != 0 {
					t.Errorf("%d RBAC objects without DRA, want none", n)
				}
				return
			}
			if !slices.Contains(args, "--attribution.dra.driver=gpu.nvidia.com") {
				t.Errorf("args lack the default driver: %v", args)
			}
			// The slices of the node; the claims that share a GPU by consumed capacity, one by one.
			checkRBAC(t, m, "gputally-resourceslices", pod.ServiceAccountName, []rbacv1.PolicyRule{
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
			})
		})
	}
}

func TestDRAWithoutAttributionFailsToRender(t *testing.T) {
	_, err := helmTemplate(t, "--set", "attribution.dra.enabled=true", "--set", "attribution.enabled=false")
	if err == nil || !strings.Contains(err.Error(), "attribution.dra.enabled needs attribution.enabled") {
		t.Errorf("error %v, want one saying DRA needs attribution", err)
	}
}
