package helm_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/gputally/gputally/alerts"
	"github.com/gputally/gputally/report/engine"
)

// valueSets are the values every structural check runs against.
var valueSets = []struct {
	name string
	args []string
}{
	{"default", monitoringAPIs},
	{"all-features", append([]string{"-f", allFeatures}, monitoringAPIs...)},
}

func TestManifestsDecodeStrictly(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			m := render(t, vs.args...)
			decodeAll(t, m)
			for _, o := range m {
				var meta struct {
					Metadata objectMeta `json:"metadata"`
				}
				if err := yaml.Unmarshal(o.Doc, &meta); err != nil {
					t.Fatal(err)
				}
				if clusterScoped[o.Kind] {
					continue
				}
				if meta.Metadata.Namespace != namespace {
					t.Errorf("%s %s: namespace %q, want %q", o.Kind, o.Name, meta.Metadata.Namespace, namespace)
				}
				for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app.kubernetes.io/managed-by"} {
					if meta.Metadata.Labels[l] == "" {
						t.Errorf("%s %s: label %s missing", o.Kind, o.Name, l)
					}
				}
			}
		})
	}
}

func TestDaemonSetIsLeastPrivileged(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			var ds appsv1.DaemonSet
			decodeOne(t, render(t, vs.args...), "DaemonSet", &ds)
			pod := ds.Spec.Template.Spec

			// Only DRA attribution talks to the API server (dra_test.go).
			dra := slices.Contains(pod.Containers[0].Args, "--attribution.dra.enabled")
			if mounted := pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken; mounted != dra {
				t.Errorf("pod mounts a service account token: %v, want %v (only for DRA attribution)", mounted, dra)
			}
			psc := pod.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Error("pod does not set runAsNonRoot")
			}
			if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Error("pod runs as uid 0")
			}
			if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Error("pod seccomp profile is not RuntimeDefault")
			}
			if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
				t.Fatalf("want one container, got %d (+%d init)", len(pod.Containers), len(pod.InitContainers))
			}
			c := pod.Containers[0]
			assertRestricted(t, c)
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					t.Errorf("volume %s mounted writable at %s", m.Name, m.MountPath)
				}
			}

			lim := c.Resources.Limits[corev1.ResourceMemory]
			req := c.Resources.Requests[corev1.ResourceMemory]
			if lim.IsZero() || req.IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("resources incomplete: %+v", c.Resources)
			}
			// The design budget is ≤ 40 MiB resident: a limit below that starves the
			// exporter, one far above it hides a leak.
			if lim.Cmp(resource.MustParse("40Mi")) < 0 || lim.Cmp(resource.MustParse("128Mi")) > 0 {
				t.Errorf("memory limit %s outside [40Mi, 128Mi]", lim.String())
			}

			if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType ||
				ds.Spec.UpdateStrategy.RollingUpdate == nil || ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
				t.Errorf("update strategy %+v, want RollingUpdate with maxUnavailable", ds.Spec.UpdateStrategy)
			}
			if got := pod.NodeSelector["nvidia.com/gpu.present"]; got != "true" {
				t.Errorf("nodeSelector nvidia.com/gpu.present = %q, want \"true\"", got)
			}
			if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
				return tol.Key == "nvidia.com/gpu" && tol.Operator == corev1.TolerationOpExists
			}) {
				t.Errorf("no toleration for nvidia.com/gpu: %+v", pod.Tolerations)
			}

			if !selectorMatches(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
				t.Errorf("selector %v does not match pod labels %v", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
			}
			// GOMEMLIMIT follows the container's memory limit (issue 14): a scrape
			// storm meets the garbage collector, not the OOM killer.
			memLimit := envVar(c, "GOMEMLIMIT")
			if memLimit == nil || memLimit.ValueFrom == nil || memLimit.ValueFrom.ResourceFieldRef == nil ||
				memLimit.ValueFrom.ResourceFieldRef.Resource != "limits.memory" || !memLimit.ValueFrom.ResourceFieldRef.Divisor.IsZero() {
				t.Errorf("GOMEMLIMIT is not the container's memory limit in bytes: %+v", memLimit)
			}
			nodeName := envVar(c, "NODE_NAME")
			if nodeName == nil || nodeName.ValueFrom == nil || nodeName.ValueFrom.FieldRef == nil ||
				nodeName.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
				t.Errorf("NODE_NAME is not the downward API's spec.nodeName: %+v", nodeName)
			}
			if !slices.Contains(c.Args, "--hostname=$(NODE_NAME)") {
				t.Errorf("args do not pass --hostname=$(NODE_NAME): %v", c.Args)
			}
			if c.Args[0] != "exporter" {
				t.Errorf("first arg %q, want the exporter subcommand", c.Args[0])
			}
		})
	}
}

func TestDaemonSetMountsAndProbes(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		hostPID       bool
		hostPaths     map[string]string // volume → host path
		probe         string            // http or tcp
		scheme        corev1.URIScheme
		wantArgs      []string
		wantNoArgs    []string
		secretVolumes []string
	}{
		{
			name:       "default",
			hostPaths:  map[string]string{"pod-resources": "/var/lib/kubelet/pod-resources"},
			probe:      "http",
			scheme:     corev1.URISchemeHTTP,
			wantArgs:   []string{"--attribution.enabled", "--attribution.kubelet-socket=/var/lib/kubelet/pod-resources/kubelet.sock", "--cost.price-book=/etc/gputally/price-book/price-book.yaml", "--collector.dcgm-exporter-names=4.10"},
			wantNoArgs: []string{"--attribution.process-accounting", "--web.config.file=/etc/gputally/web/web-config.yml", "--collector.legacy-hostname-label"},
		},
		{
			name:      "legacy hostname label",
			args:      []string{"--set", "exporter.legacyHostnameLabel=true"},
			hostPaths: map[string]string{"pod-resources": "/var/lib/kubelet/pod-resources"},
			probe:     "http",
			scheme:    corev1.URISchemeHTTP,
			wantArgs:  []string{"--collector.legacy-hostname-label"},
		},
		{
			name:       "dcgm-exporter 4.8 names",
			args:       []string{"--set", "exporter.dcgmExporterNames=4.8"},
			hostPaths:  map[string]string{"pod-resources": "/var/lib/kubelet/pod-resources"},
			probe:      "http",
			scheme:     corev1.URISchemeHTTP,
			wantArgs:   []string{"--collector.dcgm-exporter-names=4.8"},
			wantNoArgs: []string{"--collector.dcgm-exporter-names=4.10"},
		},
		{
			name:    "all-features",
			args:    []string{"-f", allFeatures},
			hostPID: true,
			hostPaths: map[string]string{
				"pod-resources": "/var/lib/kubelet/pod-resources",
				"pod-logs":      "/var/log/pods",
			},
			probe:         "tcp", // basic auth: the kubelet cannot authenticate
			wantArgs:      []string{"--attribution.process-accounting", "--attribution.pod-logs-dir=/var/log/pods", "--web.config.file=/etc/gputally/web/web-config.yml", "--attribution.extra-resource=example.com/gpu"},
			secretVolumes: []string{"web-config", "tls"},
		},
		{
			name:       "attribution off",
			args:       []string{"--set", "attribution.enabled=false"},
			hostPaths:  map[string]string{},
			probe:      "http",
			scheme:     corev1.URISchemeHTTP,
			wantArgs:   []string{"--no-attribution.enabled"},
			wantNoArgs: []string{"--attribution.enabled"},
		},
		{
			name:          "tls without basic auth",
			args:          []string{"--set", "webConfig.enabled=true", "--set", "webConfig.tlsSecretName=tls", "--set", "webConfig.config.tls_server_config.cert_file=/etc/gputally/tls/tls.crt"},
			hostPaths:     map[string]string{"pod-resources": "/var/lib/kubelet/pod-resources"},
			probe:         "http",
			scheme:        corev1.URISchemeHTTPS,
			secretVolumes: []string{"web-config", "tls"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ds appsv1.DaemonSet
			decodeOne(t, render(t, tt.args...), "DaemonSet", &ds)
			pod := ds.Spec.Template.Spec
			c := pod.Containers[0]

			if pod.HostPID != tt.hostPID {
				t.Errorf("hostPID = %v, want %v", pod.HostPID, tt.hostPID)
			}
			gotHostPaths := map[string]string{}
			var gotSecrets []string
			for _, v := range pod.Volumes {
				if v.HostPath != nil {
					gotHostPaths[v.Name] = v.HostPath.Path
				}
				if v.Secret != nil {
					gotSecrets = append(gotSecrets, v.Name)
				}
			}
			if !reflect.DeepEqual(gotHostPaths, tt.hostPaths) {
				t.Errorf("hostPath volumes %v, want %v", gotHostPaths, tt.hostPaths)
			}
			if !reflect.DeepEqual(gotSecrets, tt.secretVolumes) {
				t.Errorf("secret volumes %v, want %v", gotSecrets, tt.secretVolumes)
			}
			for name := range tt.hostPaths {
				m := mountOf(c, name)
				if m == nil || !m.ReadOnly {
					t.Errorf("host volume %s not mounted read-only: %+v", name, m)
				}
			}
			if m := mountOf(c, "price-book"); m == nil || !m.ReadOnly {
				t.Errorf("price book not mounted read-only: %+v", m)
			}

			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/-/healthy"}, {"readiness", c.ReadinessProbe, "/-/ready"}} {
				if p.probe == nil {
					t.Fatalf("%s probe missing", p.name)
				}
				switch tt.probe {
				case "http":
					h := p.probe.HTTPGet
					if h == nil || h.Path != p.path || h.Port.String() != "metrics" || h.Scheme != tt.scheme {
						t.Errorf("%s probe %+v, want GET %s %s on port metrics", p.name, h, tt.scheme, p.path)
					}
				case "tcp":
					if p.probe.TCPSocket == nil || p.probe.TCPSocket.Port.String() != "metrics" {
						t.Errorf("%s probe %+v, want a TCP check of port metrics", p.name, p.probe)
					}
				}
			}
			for _, a := range tt.wantArgs {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args lack %s: %v", a, c.Args)
				}
			}
			for _, a := range tt.wantNoArgs {
				if slices.Contains(c.Args, a) {
					t.Errorf("args hold %s: %v", a, c.Args)
				}
			}
		})
	}
}

func TestServiceAndServiceMonitorSelectTheExporter(t *testing.T) {
	// A release named otherwise still gets the job the generated alerts select.
	renamed := append([]string{"--set", "fullnameOverride=monitoring-gpu-exporter"}, monitoringAPIs...)
	for _, vs := range append(slices.Clone(valueSets), struct {
		name string
		args []string
	}{"renamed", renamed}) {
		t.Run(vs.name, func(t *testing.T) {
			m := render(t, vs.args...)
			var ds appsv1.DaemonSet
			var svc corev1.Service
			var sm serviceMonitor
			var sa corev1.ServiceAccount
			decodeOne(t, m, "DaemonSet", &ds)
			decodeOne(t, m, "Service", &svc)
			decodeOne(t, m, "ServiceMonitor", &sm)
			decodeOne(t, m, "ServiceAccount", &sa)

			if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				t.Error("ServiceAccount automounts its token")
			}
			if ds.Spec.Template.Spec.ServiceAccountName != sa.Name {
				t.Errorf("pod uses ServiceAccount %q, chart renders %q", ds.Spec.Template.Spec.ServiceAccountName, sa.Name)
			}
			if !selectorMatches(svc.Spec.Selector, ds.Spec.Template.Labels) {
				t.Errorf("Service selector %v does not match pod labels %v", svc.Spec.Selector, ds.Spec.Template.Labels)
			}
			if !selectorMatches(sm.Spec.Selector.MatchLabels, svc.Labels) {
				t.Errorf("ServiceMonitor selector %v does not match Service labels %v", sm.Spec.Selector.MatchLabels, svc.Labels)
			}
			job := svc.Labels[sm.Spec.JobLabel]
			if sm.Spec.JobLabel == "" {
				job = svc.Name
			}
			if want := alerts.DefaultOptions().ExporterJob; !regexp.MustCompile("^(?:" + want + ")$").MatchString(job) {
				t.Errorf("scrape job %q (jobLabel %q) does not match the rules' ExporterJob %q: GPUTallyExporterDown would never fire", job, sm.Spec.JobLabel, want)
			}
			if len(sm.Spec.Endpoints) != 1 {
				t.Fatalf("want one ServiceMonitor endpoint, got %d", len(sm.Spec.Endpoints))
			}
			ep := sm.Spec.Endpoints[0]
			if !ep.HonorLabels {
				t.Error("honorLabels is false: pod labels would be renamed exported_pod")
			}
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("ServiceMonitor port %q is not a Service port %+v", ep.Port, svc.Spec.Ports)
			}
			if ep.Interval == "" {
				t.Error("ServiceMonitor has no interval")
			}
		})
	}
}

func TestMonitoringObjectsFollowCapabilities(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no operator", nil, 0},
		{"operator present", monitoringAPIs, 1},
		{"forced on", []string{"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true"}, 1},
		{"forced off", append([]string{"--set", "serviceMonitor.enabled=false", "--set", "prometheusRule.enabled=false"}, monitoringAPIs...), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := render(t, tt.args...)
			for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
				if got := len(m.ofKind(kind)); got != tt.want {
					t.Errorf("%d %s objects, want %d", got, kind, tt.want)
				}
			}
		})
	}
}

func TestPrometheusRuleHoldsTheGeneratedGroups(t *testing.T) {
	generated := readRepoFile(t, "alerts/generated/gputally-rules.yaml")
	if cp := readRepoFile(t, "deploy/helm/gputally/files/gputally-rules.yaml"); !bytes.Equal(cp, generated) {
		t.Fatal("deploy/helm/gputally/files/gputally-rules.yaml differs from alerts/generated/gputally-rules.yaml: run scripts/sync-chart-files.sh")
	}
	legacyOpts := alerts.DefaultOptions()
	legacyOpts.LegacyHostnameLabel = true
	legacy, err := alerts.Generate(legacyOpts)
	if err != nil {
		t.Fatal(err)
	}
	generated48 := readRepoFile(t, "alerts/generated/4.8/gputally-rules.yaml")
	if cp := readRepoFile(t, "deploy/helm/gputally/files/4.8/gputally-rules.yaml"); !bytes.Equal(cp, generated48) {
		t.Fatal("deploy/helm/gputally/files/4.8/gputally-rules.yaml differs from alerts/generated/4.8/gputally-rules.yaml: run scripts/sync-chart-files.sh")
	}
	for _, tc := range []struct {
		name string
		args []string
		want []byte // the rules file the PrometheusRule must hold
	}{
		{"default", nil, generated},
		// The chart's rules follow the exporter's spelling of the node label,
		// as `gputally generate rules --collector.legacy-hostname-label` writes them.
		{"legacy hostname label", []string{"--set", "exporter.legacyHostnameLabel=true"}, legacy},
		// And the exporter's DCGM_* names, as `gputally generate rules
		// --collector.dcgm-exporter-names=4.8` writes them.
		{"dcgm-exporter 4.8 names", []string{"--set", "exporter.dcgmExporterNames=4.8"}, generated48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want struct {
				Groups []any `json:"groups"`
			}
			if err := yaml.UnmarshalStrict(tc.want, &want); err != nil {
				t.Fatalf("generated rules file: %v", err)
			}
			if len(want.Groups) == 0 {
				t.Fatal("generated rules file has no groups")
			}
			var rule prometheusRule
			decodeOne(t, render(t, append(tc.args, monitoringAPIs...)...), "PrometheusRule", &rule)
			if !reflect.DeepEqual(rule.Spec.Groups, want.Groups) {
				got, _ := yaml.Marshal(rule.Spec.Groups)
				exp, _ := yaml.Marshal(want.Groups)
				t.Errorf("PrometheusRule groups differ from the generated file\n--- got\n%s\n--- want\n%s", got, exp)
			}
		})
	}
}

func TestDashboardConfigMapsHoldTheGeneratedJSON(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		labelValue string
		legacy     bool   // the dashboards query `Hostname`
		generated  string // their directory, under the repository root
	}{
		{"default", nil, "1", false, "dashboards/generated"},
		{"all-features", []string{"-f", allFeatures}, "gpu", false, "dashboards/generated"},
		{"legacy hostname label", []string{"--set", "exporter.legacyHostnameLabel=true"}, "1", true, "dashboards/generated"},
		{"dcgm-exporter 4.8 names", []string{"--set", "exporter.dcgmExporterNames=4.8"}, "1", false, "dashboards/generated/4.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			generated, err := filepath.Glob(filepath.Join(repoRoot, tt.generated, "*.json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(generated) == 0 {
				t.Fatalf("no dashboards in %s", tt.generated)
			}
			byFile := map[string]corev1.ConfigMap{}
			for _, o := range render(t, tt.args...).ofKind("ConfigMap") {
				var cm corev1.ConfigMap
				decodeStrict(t, o, &cm)
				if _, ok := cm.Labels["grafana_dashboard"]; !ok {
					continue
				}
				if got := cm.Labels["grafana_dashboard"]; got != tt.labelValue {
					t.Errorf("ConfigMap %s: grafana_dashboard=%q, want %q", cm.Name, got, tt.labelValue)
				}
				if len(cm.Data) != 1 {
					t.Errorf("ConfigMap %s holds %d keys, want one dashboard", cm.Name, len(cm.Data))
				}
				for k := range cm.Data {
					byFile[k] = cm
				}
			}
			if len(byFile) != len(generated) {
				t.Errorf("%d dashboard ConfigMaps, want %d (run scripts/sync-chart-files.sh)", len(byFile), len(generated))
			}
			for _, path := range generated {
				file := filepath.Base(path)
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if tt.legacy {
					want = alerts.LegacyHostname(want)
				}
				cm, ok := byFile[file]
				if !ok {
					t.Errorf("no ConfigMap holds %s", file)
					continue
				}
				if cm.Data[file] != string(want) {
					t.Errorf("ConfigMap %s: %s differs from %s/%s", cm.Name, file, tt.generated, file)
				}
			}
		})
	}
}

// TestDCGMExporterNamesValue: the value is the string "4.10" or "4.8"
// (--set gives a string); a number (4.10 unquoted in a values file is 4.1)
// or another string fails the render.
func TestDCGMExporterNamesValue(t *testing.T) {
	unquoted := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(unquoted, []byte("exporter:\n  dcgmExporterNames: 4.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := helmTemplate(t, "--set", "exporter.dcgmExporterNames=4.8"); err != nil {
		t.Errorf("--set exporter.dcgmExporterNames=4.8: %v", err)
	}
	for _, args := range [][]string{
		{"-f", unquoted},
		{"--set", "exporter.dcgmExporterNames=4.9"},
	} {
		_, err := helmTemplate(t, args...)
		if err == nil || !strings.Contains(err.Error(), `exporter.dcgmExporterNames must be the string "4.10" or "4.8"`) {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

func TestPriceBookChangeRollsThePods(t *testing.T) {
	annotation := func(args ...string) string {
		var ds appsv1.DaemonSet
		decodeOne(t, render(t, args...), "DaemonSet", &ds)
		return ds.Spec.Template.Annotations["checksum/price-book"]
	}
	base := annotation()
	if base == "" {
		t.Fatal("no checksum/price-book annotation on the pod template")
	}
	if again := annotation(); again != base {
		t.Errorf("checksum not stable: %s then %s", base, again)
	}
	if changed := annotation("--set", "costs.priceBook.idle.threshold=0.1"); changed == base {
		t.Error("a changed price book does not change the pod template")
	}

	var cm corev1.ConfigMap
	for _, o := range render(t).ofKind("ConfigMap") {
		if strings.HasSuffix(o.Name, "-price-book") {
			decodeStrict(t, o, &cm)
		}
	}
	var book map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["price-book.yaml"]), &book); err != nil {
		t.Fatalf("price book: %v", err)
	}
	if book["currency"] != "EUR" {
		t.Errorf("price book currency %v, want EUR", book["currency"])
	}
}

func TestReportCronJob(t *testing.T) {
	m := render(t, "-f", allFeatures)
	var cj batchv1.CronJob
	decodeOne(t, m, "CronJob", &cj)
	var pvc corev1.PersistentVolumeClaim
	decodeOne(t, m, "PersistentVolumeClaim", &pvc)

	if cj.Spec.Schedule != "0 6 * * 1" {
		t.Errorf("schedule %q, want Monday 06:00", cj.Spec.Schedule)
	}
	if cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Europe/Berlin" {
		t.Errorf("timeZone %v, want Europe/Berlin", cj.Spec.TimeZone)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("report pod mounts a service account token")
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.FSGroup == nil {
		t.Errorf("report pod security context %+v, want non-root with an fsGroup for the volume", pod.SecurityContext)
	}
	var claim string
	var webhookSecret string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		if v.Secret != nil && v.Name == "webhook" {
			webhookSecret = v.Secret.SecretName
		}
	}
	if claim != pvc.Name {
		t.Errorf("report volume claims %q, chart renders PVC %q", claim, pvc.Name)
	}
	secrets := m.ofKind("Secret")
	if !slices.ContainsFunc(secrets, func(o object) bool { return o.Name == webhookSecret }) {
		t.Errorf("webhook Secret %q is not rendered", webhookSecret)
	}

	formats := map[string]corev1.Container{}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		assertRestricted(t, c)
		if c.Args[0] != "report" {
			t.Errorf("container %s runs %q, want the report subcommand", c.Name, c.Args[0])
		}
		if m := mountOf(c, "reports"); m == nil || m.MountPath != "/reports" {
			t.Errorf("container %s does not mount the reports volume at /reports", c.Name)
		}
		// GOMEMLIMIT is the container's memory limit (512Mi by default), in bytes,
		// as the DaemonSet's: the report sizes its answers from it, and meets the
		// garbage collector before the OOM killer.
		memLimit := envVar(c, "GOMEMLIMIT")
		if memLimit == nil || memLimit.ValueFrom == nil || memLimit.ValueFrom.ResourceFieldRef == nil ||
			memLimit.ValueFrom.ResourceFieldRef.Resource != "limits.memory" || !memLimit.ValueFrom.ResourceFieldRef.Divisor.IsZero() {
			t.Errorf("container %s: GOMEMLIMIT is not the container's memory limit in bytes: %+v", c.Name, memLimit)
		}
		if lim := c.Resources.Limits.Memory(); !lim.Equal(resource.MustParse("512Mi")) {
			t.Errorf("container %s: memory limit %s, want the 512Mi GOMEMLIMIT follows", c.Name, lim)
		}
		for _, a := range c.Args {
			if f, ok := strings.CutPrefix(a, "--format="); ok {
				formats[f] = c
			}
		}
	}
	// The values ask for html, md and csv; the follow-up of the kept
	// reports (report.history.keep) adds json: the next run's baseline.
	if len(formats) != 4 || formats["html"].Name == "" || formats["md"].Name == "" || formats["csv"].Name == "" || formats["json"].Name == "" {
		t.Errorf("report formats %v, want html, md, csv and json", slices.Sorted(maps.Keys(formats)))
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != formats["md"].Name {
		t.Errorf("the Markdown report (posted to the webhook) must be the main container, got %v", pod.Containers)
	}
	for f, c := range formats {
		hasWebhook := slices.Contains(c.Args, "--webhook.url-file=/etc/gputally/webhook/url")
		if hasWebhook != (f == "md") {
			t.Errorf("format %s: webhook flag %v, want only on md", f, hasWebhook)
		}
		if !slices.Contains(c.Args, "--out=/reports/gputally-report-$(JOB_NAME)."+f) {
			t.Errorf("format %s: args %v do not write to the volume", f, c.Args)
		}
	}
}

// TestReportHTTPConfig: the report's HTTP client config reaches every report
// container as --prometheus.http-config.file from a mounted Secret — the
// chart's, holding the config the values give (which gputally loads), or an
// existing one.
func TestReportHTTPConfig(t *testing.T) {
	base := []string{"--set", "report.enabled=true", "--set", "report.prometheusURL=https://mimir.example/prometheus"}
	for _, tc := range []struct {
		name, secret string
		args         []string
		rendered     bool // the chart renders the Secret
	}{
		{"config", "gputally-report-http-config",
			[]string{"--set-json", `report.httpConfig.config={"http_headers":{"X-Scope-OrgID":{"values":["team-a"]}}}`}, true},
		{"existing secret", "engine-credentials", []string{"--set", "report.httpConfig.existingSecret=engine-credentials"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, append(slices.Clone(base), tc.args...)...)
			var cj batchv1.CronJob
			decodeOne(t, m, "CronJob", &cj)
			pod := cj.Spec.JobTemplate.Spec.Template.Spec
			if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
				return v.Name == "http-config" && v.Secret != nil && v.Secret.SecretName == tc.secret
			}) {
				t.Errorf("no http-config volume of Secret %s: %+v", tc.secret, pod.Volumes)
			}
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				if !slices.Contains(c.Args, "--prometheus.http-config.file=/etc/gputally/http-config/http-config.yml") {
					t.Errorf("container %s: args %v lack the HTTP config file", c.Name, c.Args)
				}
				if mt := mountOf(c, "http-config"); mt == nil || mt.MountPath != "/etc/gputally/http-config" || !mt.ReadOnly {
					t.Errorf("container %s does not mount the HTTP config read-only", c.Name)
				}
			}
			var found *corev1.Secret
			for _, o := range m.ofKind("Secret") {
				var sec corev1.Secret
				decodeStrict(t, o, &sec)
				if sec.Name == tc.secret {
					found = &sec
				}
			}
			if (found != nil) != tc.rendered {
				t.Fatalf("Secret %s rendered %v, want %v", tc.secret, found != nil, tc.rendered)
			}
			if found == nil {
				return
			}
			path := filepath.Join(t.TempDir(), "http-config.yml")
			if err := os.WriteFile(path, []byte(found.StringData["http-config.yml"]), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := engine.LoadHTTPClient(path); err != nil {
				t.Errorf("gputally does not load the rendered config: %v\n%s", err, found.StringData["http-config.yml"])
			}
		})
	}
}

func TestBadValuesFailToRender(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scrape faster than sampling", []string{"--set", "serviceMonitor.interval=500ms", "--set", "serviceMonitor.enabled=true"}, "shorter than exporter.collectorInterval"},
		{"report without prometheus", []string{"--set", "report.enabled=true"}, "report.prometheusURL is required"},
		{"report HTTP config twice", []string{"--set", "report.enabled=true", "--set", "report.prometheusURL=http://p",
			"--set", "report.httpConfig.existingSecret=s", "--set-json", `report.httpConfig.config={"proxy_from_environment":true}`}, "set config or existingSecret, not both"},
		{"negative reports to keep", []string{"--set", "report.enabled=true", "--set", "report.prometheusURL=http://p", "--set", "report.history.keep=-1"},
			"report.history.keep must be 0"},
		{"unknown monitoring setting", []string{"--set", "serviceMonitor.enabled=maybe"}, "must be auto, true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmTemplate(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("helm template %v: error %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// assertRestricted checks the container-level settings of the restricted Pod Security
// Standard.
func assertRestricted(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("container %s has no security context", c.Name)
		return
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: root file system writable", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: privilege escalation allowed", c.Name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s: privileged", c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container %s: capabilities %+v, want drop ALL and add none", c.Name, sc.Capabilities)
	}
}

func selectorMatches(selector, podLabels map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podLabels))
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func mountOf(c corev1.Container, volume string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == volume {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatalf("%v (run make generate and scripts/sync-chart-files.sh)", err)
	}
	return b
}
