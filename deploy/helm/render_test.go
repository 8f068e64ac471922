// Package helm_test renders the gputally Helm chart with the pinned helm binary
// (tools/bin/helm, built by tools/build-helm.sh) and checks the manifests: decoded strictly
// into k8s.io/api types, least-privileged, wired to the generated rules and dashboards, and
// passing only flags the gputally binary accepts.
//
// Without tools/bin/helm the tests skip, unless CI is set, where they fail.
package helm_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "gputally"
	repoRoot    = "../.."
	namespace   = "gpu-monitoring"
	release     = "gputally"
	kubeVersion = "1.37.2"

	allFeatures = "gputally/ci/all-features-values.yaml"
)

// monitoringAPIs are the Capabilities a cluster with the Prometheus Operator reports.
var monitoringAPIs = []string{
	"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
}

// helmPath returns the pinned helm binary, skipping (or failing under CI) when it is absent.
func helmPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "tools", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: CI must run tools/build-helm.sh (scripts/chart-test.sh does) before these tests", p)
		}
		t.Skipf("%s is missing: run tools/build-helm.sh (or make chart-test) to test the chart", p)
	}
	return p
}

// helmTemplate runs `helm template` and returns its output, or its error with stderr.
func helmTemplate(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	full := append([]string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}, args...)
	cmd := exec.Command(helmPath(t), full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(full, " "), err, stderr.String())
	}
	return out, nil
}

// object is one rendered manifest.
type object struct {
	Kind string
	Name string
	Doc  []byte
}

// manifests holds one render, split into documents.
type manifests []object

func render(t *testing.T, args ...string) manifests {
	t.Helper()
	out, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := splitManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func splitManifests(out []byte) (manifests, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	var objs manifests
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split manifests: %w", err)
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("read kind of %q: %w", doc, err)
		}
		if head.Kind == "" {
			continue // a document holding only comments
		}
		objs = append(objs, object{Kind: head.Kind, Name: head.Metadata.Name, Doc: doc})
	}
}

// ofKind returns the documents of one kind.
func (m manifests) ofKind(kind string) []object {
	var out []object
	for _, o := range m {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// decodeOne strictly decodes the only object of a kind into v.
func decodeOne(t *testing.T, m manifests, kind string, v any) {
	t.Helper()
	objs := m.ofKind(kind)
	if len(objs) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(objs))
	}
	decodeStrict(t, objs[0], v)
}

func decodeStrict(t *testing.T, o object, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.Doc, v); err != nil {
		t.Fatalf("decode %s %s strictly: %v\n%s", o.Kind, o.Name, err, o.Doc)
	}
}

// decodeAll strictly decodes every object into its k8s.io/api type (or the local
// Prometheus Operator shapes), failing on kinds the chart is not expected to render.
func decodeAll(t *testing.T, m manifests) {
	t.Helper()
	for _, o := range m {
		var v any
		switch o.Kind {
		case "DaemonSet":
			v = &appsv1.DaemonSet{}
		case "Service":
			v = &corev1.Service{}
		case "ServiceAccount":
			v = &corev1.ServiceAccount{}
		case "ConfigMap":
			v = &corev1.ConfigMap{}
		case "Secret":
			v = &corev1.Secret{}
		case "PersistentVolumeClaim":
			v = &corev1.PersistentVolumeClaim{}
		case "CronJob":
			v = &batchv1.CronJob{}
		case "ServiceMonitor":
			v = &serviceMonitor{}
		case "PrometheusRule":
			v = &prometheusRule{}
		case "AlertmanagerConfig":
			v = &alertmanagerConfig{}
		case "ClusterRole":
			v = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			v = &rbacv1.ClusterRoleBinding{}
		default:
			t.Errorf("unexpected kind %s (%s)", o.Kind, o.Name)
			continue
		}
		decodeStrict(t, o, v)
	}
}

// serviceMonitor is the subset of monitoring.coreos.com/v1 ServiceMonitor the chart
// renders; strict decoding fails on any other field. The API server test validates the
// full CRD schema.
type serviceMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMeta     `json:"metadata"`
	Spec       serviceMonSpec `json:"spec"`
}

type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

type serviceMonSpec struct {
	JobLabel string `json:"jobLabel"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	NamespaceSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"namespaceSelector"`
	Endpoints []struct {
		Port              string           `json:"port"`
		Path              string           `json:"path"`
		Scheme            string           `json:"scheme"`
		Interval          string           `json:"interval"`
		ScrapeTimeout     string           `json:"scrapeTimeout"`
		HonorLabels       bool             `json:"honorLabels"`
		TLSConfig         map[string]any   `json:"tlsConfig"`
		BasicAuth         map[string]any   `json:"basicAuth"`
		Relabelings       []map[string]any `json:"relabelings"`
		MetricRelabelings []map[string]any `json:"metricRelabelings"`
	} `json:"endpoints"`
}

type prometheusRule struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Groups []any `json:"groups"`
	} `json:"spec"`
}

// alertmanagerConfig is the subset of monitoring.coreos.com/v1alpha1
// AlertmanagerConfig the chart renders; strict decoding fails on any other field.
type alertmanagerConfig struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Route        amRoute         `json:"route"`
		InhibitRules []amInhibitRule `json:"inhibitRules"`
		Receivers    []amReceiver    `json:"receivers"`
	} `json:"spec"`
}

type amRoute struct {
	Receiver       string      `json:"receiver"`
	GroupBy        []string    `json:"groupBy"`
	GroupWait      string      `json:"groupWait"`
	GroupInterval  string      `json:"groupInterval"`
	RepeatInterval string      `json:"repeatInterval"`
	Matchers       []amMatcher `json:"matchers"`
	Routes         []amRoute   `json:"routes"`
}

type amMatcher struct {
	Name      string `json:"name"`
	MatchType string `json:"matchType"`
	Value     string `json:"value"`
}

type amInhibitRule struct {
	SourceMatch []amMatcher `json:"sourceMatch"`
	TargetMatch []amMatcher `json:"targetMatch"`
	Equal       []string    `json:"equal"`
}

type amReceiver struct {
	Name           string      `json:"name"`
	WebhookConfigs []amWebhook `json:"webhookConfigs"`
}

type amWebhook struct {
	URL          string `json:"url"`
	SendResolved bool   `json:"sendResolved"`
}
