package main

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gputally/gputally/attribution"
	"github.com/gputally/gputally/collector/sim"
)

// TestPodWatchWithKubeAPIServer runs the exporter on the simulated HAMi node
// (testdata/scenarios/fractional/hami-node.yaml) with its pod watch against a
// real kube-apiserver, with only the chart's RBAC (list and watch on pods,
// get on nodes: deploy/helm TestPodWatchAPIAccess holds the chart to it).
// While the API server has none of the node's pods, the containers holding
// HAMi's virtual devices are unresolved (hami_not_allocated), never
// time-slice replicas; once the pods, as HAMi annotates them, and the node,
// with HAMi's registration, exist, each container holds its grant; a pod on
// another node is not watched.
func TestPodWatchWithKubeAPIServer(t *testing.T) {
	bin := kubeAPIServer(t)
	api := startAPIServer(t, bin)
	admin := clientset(t, api.admin)
	ctx := t.Context()

	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gputally-pods"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gputally-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "gputally"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const scenario = "../../testdata/scenarios/fractional/hami-node.yaml"
	e := startExporter(t, "--backend=sim", "--sim.scenario="+scenario, "--collector.interval=200ms",
		"--attribution.interval=200ms", "--attribution.pods.enabled", "--kubeconfig="+api.exporter, "--hostname=fleet-hami")

	// The node's pods are listed (none): the 12 HAMi containers are unresolved.
	waitLong(t, "12 unresolved HAMi holders", func() bool {
		s := e.scrape(t)
		v, _ := sum(s, "gputally_attribution_unresolved_shares", model.LabelSet{"reason": "hami_not_allocated"})
		up, _ := sum(s, "gputally_pod_watch_up", nil)
		return v == 12 && up == 1
	})
	if _, n := sum(e.scrape(t), "gputally_gpu_allocation", nil); n != 0 {
		t.Errorf("%d allocation series without the pods' grants, want 0 (virtual devices are no replicas)", n)
	}

	// The pods and the node as a cluster shows them: the simulated node's own view.
	sc, err := sim.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(sc, sim.Options{Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := sim.StartVirtualKubelet(b)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	view := k.Pods().Pods()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fleet-hami", Annotations: map[string]string{"hami.io/node-nvidia-register": view.HAMiRegistration}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(view.Pods, podOnAnotherNode()) {
		if _, err := admin.CoreV1().Namespaces().Get(ctx, p.Namespace, metav1.GetOptions{}); err != nil {
			if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// No controller manager runs: the namespace's default ServiceAccount by hand.
			if _, err := admin.CoreV1().ServiceAccounts(p.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations},
			Spec: corev1.PodSpec{NodeName: "fleet-hami"}}
		if p.Name == "elsewhere" {
			pod.Spec.NodeName = "another-node"
		}
		for _, c := range p.Containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.invalid/none"})
		}
		if _, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	waitLong(t, "12 HAMi holders", func() bool {
		_, n := sum(e.scrape(t), "gputally_gpu_allocation", model.LabelSet{"sharing": "hami"})
		return n == 12
	})
	s := e.scrape(t)
	// The shares of the scenario's comments: GPU 0's four quarters; GPU 3's
	// one pod at 4096 of 40960 MiB, no core limit: .1.
	for _, tc := range []struct {
		match model.LabelSet
		want  float64
	}{
		{model.LabelSet{"pod": "ranker-0", "gpu": "0"}, 0.25},
		{model.LabelSet{"pod": "scorer-0", "gpu": "0"}, 0.25},
		{model.LabelSet{"pod": "notebook-a", "gpu": "1"}, 0.25},
		{model.LabelSet{"pod": "notebook-f", "gpu": "3"}, 0.1},
	} {
		if v, n := sum(s, "gputally_gpu_allocation", tc.match); n != 1 || v < tc.want-1e-9 || v > tc.want+1e-9 {
			t.Errorf("gputally_gpu_allocation%v = %v (%d series), want %v", tc.match, v, n, tc.want)
		}
	}
	if v, _ := sum(s, "gputally_attribution_unresolved_shares", nil); v != 0 {
		t.Errorf("%v unresolved holders once the pods exist, want 0", v)
	}
	if v, _ := sum(s, "gputally_pod_watch_pods", nil); v != 11 {
		t.Errorf("the watch sees %v pods, want the node's 11 (not the one on another node)", v)
	}
}

// podOnAnotherNode is a HAMi pod the watch of fleet-hami must not see.
func podOnAnotherNode() attribution.Pod {
	return attribution.Pod{Namespace: "dev", Name: "elsewhere", Containers: []string{"main"},
		Annotations: map[string]string{"hami.io/bind-phase": "success"}}
}
