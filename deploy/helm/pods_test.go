package helm_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// checkRBAC holds the ClusterRole name of render m to exactly want — no
// other verb, resource, resource name or URL — and its ClusterRoleBinding
// (same name) to the pod's ServiceAccount sa alone.
func checkRBAC(t *testing.T, m manifests, name, sa string, want []rbacv1.PolicyRule) {
	t.Helper()
	var role *rbacv1.ClusterRole
	for _, obj := range m.ofKind("ClusterRole") {
		var r rbacv1.ClusterRole
		decodeStrict(t, obj, &r)
		if r.Name == name {
			role = &r
		}
	}
	if role == nil {
		t.Fatalf("no ClusterRole %s", name)
	}
	if len(role.Rules) != len(want) {
		t.Fatalf("ClusterRole %s rules %+v, want %+v", name, role.Rules, want)
	}
	for i, r := range role.Rules {
		w := want[i]
		if !slices.Equal(r.APIGroups, w.APIGroups) || !slices.Equal(r.Resources, w.Resources) || !slices.Equal(r.Verbs, w.Verbs) ||
			len(r.ResourceNames) != 0 || len(r.NonResourceURLs) != 0 {
			t.Errorf("ClusterRole %s rule %d %+v, want %+v", name, i, r, w)
		}
	}
	var binding *rbacv1.ClusterRoleBinding
	for _, obj := range m.ofKind("ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		decodeStrict(t, obj, &b)
		if b.Name == name {
			binding = &b
		}
	}
	switch {
	case binding == nil:
		t.Errorf("no ClusterRoleBinding %s", name)
	case binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != name:
		t.Errorf("binding refers to %+v, want ClusterRole %s", binding.RoleRef, name)
	case len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
		binding.Subjects[0].Name != sa || binding.Subjects[0].Namespace != namespace:
		t.Errorf("binding subjects %+v, want the pod's ServiceAccount %s/%s", binding.Subjects, namespace, sa)
	}
}

// TestPodWatchAPIAccess: the service-account token and the pod watch's RBAC
// exist only with attribution.pods.enabled, and then grant list and watch on
// pods (no get: the informer does not issue one) and, with readNode, get on
// nodes — nothing else — to the pod's own ServiceAccount; the flags follow.
func TestPodWatchAPIAccess(t *testing.T) {
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}
	nodes := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}
	for _, tc := range []struct {
		name     string
		args     []string
		watch    bool
		rules    []rbacv1.PolicyRule
		wantArgs []string
		notArgs  []string
	}{
		{name: "default", notArgs: []string{"--attribution.pods.enabled"}},
		{name: "pods", args: []string{"--set", "attribution.pods.enabled=true"}, watch: true, rules: []rbacv1.PolicyRule{pods, nodes},
			wantArgs: []string{"--attribution.pods.enabled", "--attribution.kai.reservation-namespace=kai-resource-reservation",
				"--attribution.kai.reservation-app=kai-resource-reservation"},
			notArgs: []string{"--no-attribution.pods.read-node"}},
		{name: "pods without the node", args: []string{"--set", "attribution.pods.enabled=true", "--set", "attribution.pods.readNode=false",
			"--set", "attribution.pods.kai.reservationNamespace=infrastructure"}, watch: true, rules: []rbacv1.PolicyRule{pods},
			wantArgs: []string{"--attribution.pods.enabled", "--no-attribution.pods.read-node", "--attribution.kai.reservation-namespace=infrastructure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, tc.args...)
			var ds appsv1.DaemonSet
			decodeOne(t, m, "DaemonSet", &ds)
			pod := ds.Spec.Template.Spec
			if mounted := pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken; mounted != tc.watch {
				t.Errorf("token mounted %v, want %v", mounted, tc.watch)
			}
			args := pod.Containers[0].Args
			for _, a := range tc.wantArgs {
				if !slices.Contains(args, a) {
					t.Errorf("args lack %s: %v", a, args)
				}
			}
			for _, a := range tc.notArgs {
				if slices.Contains(args, a) {
					t.Errorf("args have %s: %v", a, args)
				}
			}
			if !tc.watch {
				if n := len(m.ofKind("ClusterRole")) + len(m.ofKind("ClusterRoleBinding")); n != 0 {
					t.Errorf("%d RBAC objects without the pod watch, want none", n)
				}
				return
			}
			checkRBAC(t, m, "gputally-pods", pod.ServiceAccountName, tc.rules)
		})
	}
}

func TestPodWatchWithoutAttributionFailsToRender(t *testing.T) {
	_, err := helmTemplate(t, "--set", "attribution.pods.enabled=true", "--set", "attribution.enabled=false")
	if err == nil || !strings.Contains(err.Error(), "attribution.pods.enabled needs attribution.enabled") {
		t.Errorf("error %v, want one saying the pod watch needs attribution", err)
	}
}
