package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gputally/gputally/collector/sim"
	"github.com/gputally/gputally/dcgmnames"
)

// kubeVersion is the kube-apiserver that tools/build-k8s.sh builds (and make
// chart-test uses).
const kubeVersion = "v1.37.2"

// kubeAPIServer returns the kube-apiserver binary built by tools/build-k8s.sh.
// When it or etcd is missing the test is skipped, or fails when the CI
// environment variable is set (CI builds and installs both: .ci/run).
func kubeAPIServer(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GPUTALLY_KUBE_BIN")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "gputally-tools", "k8s-"+kubeVersion)
	}
	bin := filepath.Join(dir, "kube-apiserver")
	if _, err := os.Stat(bin); err != nil {
		missingTool(t, "no kube-apiserver at %s: build it with `bash tools/build-k8s.sh` (make chart-test does) or set GPUTALLY_KUBE_BIN", bin)
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		missingTool(t, "etcd not on the PATH (Debian: apt-get install etcd-server)")
	}
	return bin
}

// missingTool skips the test for want of a tool, or fails it under CI, where
// a missing tool is a broken setup rather than a reason to test less.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (needed in CI)", args...)
	}
	t.Skipf(format, args...)
}

// apiServer is an etcd and a kube-apiserver on loopback ports, with two token
// users: admin (system:masters) and gputally (no rights but what RBAC grants).
type apiServer struct {
	admin, exporter string // kubeconfig files
	stop            func() // stops the API server (etcd stays until cleanup)
}

func startAPIServer(t *testing.T, bin string) *apiServer {
	t.Helper()
	dir := t.TempDir()
	port := func() string {
		_, p, _ := net.SplitHostPort(freeAddr(t))
		return p
	}
	etcdClient, etcdPeer, apiPort := port(), port(), port()
	etcd := exec.Command("etcd", "--name", "dra-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:"+etcdClient, "--advertise-client-urls", "http://127.0.0.1:"+etcdClient,
		"--listen-peer-urls", "http://127.0.0.1:"+etcdPeer, "--initial-advertise-peer-urls", "http://127.0.0.1:"+etcdPeer,
		"--initial-cluster", "dra-test=http://127.0.0.1:"+etcdPeer)
	startProcess(t, etcd, filepath.Join(dir, "etcd.log"))

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := filepath.Join(dir, "sa.key")
	writeFile(t, saKey, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(t, filepath.Join(dir, "tokens.csv"), "admin-token,admin,admin,system:masters\nexporter-token,gputally,gputally\n")
	api := exec.Command(bin,
		"--etcd-servers", "http://127.0.0.1:"+etcdClient,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", apiPort,
		"--cert-dir", filepath.Join(dir, "serving"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none", "--enable-priority-and-fairness=false", "--profiling=false")
	stopAPI := startProcess(t, api, filepath.Join(dir, "kube-apiserver.log"))

	s := &apiServer{admin: filepath.Join(dir, "admin.kubeconfig"), exporter: filepath.Join(dir, "exporter.kubeconfig"), stop: stopAPI}
	for file, token := range map[string]string{s.admin: "admin-token", s.exporter: "exporter-token"} {
		writeFile(t, file, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: "https://127.0.0.1:%s", certificate-authority: %q}}]
users: [{name: t, user: {token: %s}}]
contexts: [{name: t, context: {cluster: t, user: t}}]
current-context: t
`, apiPort, filepath.Join(dir, "serving", "apiserver.crt"), token))
	}
	waitLong(t, "kube-apiserver ready", func() bool {
		rc, err := clientcmd.BuildConfigFromFlags("", s.admin) // fails until the serving certificate exists
		if err != nil {
			return false
		}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return false
		}
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
		return err == nil
	})
	return s
}

// startProcess starts cmd with its output in logFile and returns a function that
// stops it (also run at cleanup). The log is shown when the test fails.
func startProcess(t *testing.T, cmd *exec.Cmd, logFile string) func() {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("%s (last 3000 bytes):\n%s", filepath.Base(logFile), b[max(0, len(b)-3000):])
		}
	})
	return stop
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func clientset(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitLong polls cond for up to three minutes: processes starting on a loaded
// machine.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 3m", what)
		}
		time.Sleep(200 * time.Millisecond) // polling processes we do not control
	}
}

// TestDRAWithKubeAPIServer runs the exporter on the simulated DRA node
// (testdata/scenarios/dra.yaml) against a real kube-apiserver: with only the
// chart's RBAC (get/list/watch resourceslices), its DRA claims are unmapped
// (counted, and no holder) until the node's ResourceSlices exist, then attributed
// — whole GPUs, a GPU shared by two claims, dynamic MIG devices without a UUID —
// and charged to their pods; with the API server stopped, the last listed slices
// keep attributing and gputally_dra_resourceslices_up says 0.
func TestDRAWithKubeAPIServer(t *testing.T) {
	bin := kubeAPIServer(t)
	api := startAPIServer(t, bin)
	admin := clientset(t, api.admin)
	ctx := t.Context()

	// The chart's ClusterRole, bound to the exporter's user.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gputally-resourceslices"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gputally-resourceslices"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "gputally"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const scenario = "../../testdata/scenarios/dra.yaml"
	e := startExporter(t, "--backend=sim", "--sim.scenario="+scenario, "--collector.interval=200ms",
		"--attribution.interval=200ms", "--attribution.dra.enabled", "--kubeconfig="+api.exporter)

	// No slices yet: the six DRA allocations of the scenario are unmapped.
	waitLong(t, "six unmapped DRA allocations", func() bool {
		s := e.scrape(t)
		v, _ := sum(s, "gputally_dra_unmapped_allocations", nil)
		up, _ := sum(s, "gputally_dra_resourceslices_up", nil)
		return v == 6 && up == 1
	})
	if _, n := sum(e.scrape(t), "gputally_gpu_allocation", model.LabelSet{"sharing": "dra"}); n != 0 {
		t.Errorf("%d DRA holders before any ResourceSlice exists, want 0", n)
	}

	sc, err := sim.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.ResourceSlices() {
		// Through k8s.io/api's type, decoded strictly: the simulator's slices are valid v1.
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var typed resourcev1.ResourceSlice
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&typed); err != nil {
			t.Fatalf("the simulated ResourceSlice is not resource.k8s.io/v1: %v\n%s", err, raw)
		}
		if _, err := admin.ResourceV1().ResourceSlices().Create(ctx, &typed, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ResourceSlice %s: %v", typed.Name, err)
		}
	}
	waitLong(t, "DRA holders attributed", func() bool {
		_, n := sum(e.scrape(t), "gputally_gpu_allocation", model.LabelSet{"sharing": "dra"})
		return n == 6
	})
	s := e.scrape(t)
	for _, tc := range []struct {
		match model.LabelSet
		want  float64
	}{
		{model.LabelSet{"pod": "train-0", "gpu": "0", "resource": "gpu.nvidia.com"}, 1},
		{model.LabelSet{"pod": "nb-alice", "gpu": "1"}, 0.5},
		{model.LabelSet{"pod": "nb-bob", "container": "jupyter", "gpu": "1"}, 0.25},
		{model.LabelSet{"pod": "nb-bob", "container": "sidecar", "gpu": "1"}, 0.25},
		{model.LabelSet{"pod": "search-0", "GPU_I_PROFILE": "3g.40gb"}, 1},
		{model.LabelSet{"pod": "classifier-0", "GPU_I_PROFILE": "1g.10gb"}, 1},
		{model.LabelSet{"pod": "eval-0", "sharing": "exclusive"}, 1},
	} {
		if v, n := sum(s, "gputally_gpu_allocation", tc.match); n != 1 || v != tc.want {
			t.Errorf("gputally_gpu_allocation%v = %v (%d series), want %v", tc.match, v, n, tc.want)
		}
	}
	if v, _ := sum(s, "gputally_dra_unmapped_allocations", nil); v != 0 {
		t.Errorf("gputally_dra_unmapped_allocations = %v once the slices exist, want 0", v)
	}
	if v, _ := sum(s, "gputally_dra_resourceslice_devices", nil); v != 5 {
		t.Errorf("gputally_dra_resourceslice_devices = %v, want 5 (2 GPUs, 3 MIG devices)", v)
	}
	// The ledger charges the DRA holders: their seconds grow.
	charged := func(pod string) float64 {
		v, _ := sum(e.scrape(t), "gputally_gpu_seconds_total", model.LabelSet{"pod": model.LabelValue(pod)})
		return v
	}
	for _, pod := range []string{"train-0", "nb-bob", "classifier-0"} {
		before := charged(pod)
		waitLong(t, pod+" charged", func() bool { return charged(pod) > before })
	}

	// The API server goes away: the watch fails, the cached slices keep mapping.
	api.stop()
	waitLong(t, "gputally_dra_resourceslices_up 0", func() bool {
		v, n := sum(e.scrape(t), "gputally_dra_resourceslices_up", nil)
		return n == 1 && v == 0
	})
	s = e.scrape(t)
	if _, n := sum(s, "gputally_gpu_allocation", model.LabelSet{"sharing": "dra"}); n != 6 {
		t.Errorf("%d DRA holders with the API server down, want the 6 from the last listed slices", n)
	}
	if v, _ := sum(s, "gputally_dra_unmapped_allocations", nil); v != 0 {
		t.Errorf("gputally_dra_unmapped_allocations = %v with the API server down, want 0", v)
	}
}

// TestExporterServesDRAScenario: the simulated DRA node needs no API server: the
// simulator answers the ResourceSlice lookups in process.
func TestExporterServesDRAScenario(t *testing.T) {
	e := startExporter(t, "--backend=sim", "--sim.scenario=../../testdata/scenarios/dra.yaml", "--collector.interval=200ms")
	waitFor(t, func() bool {
		_, n := sum(e.scrape(t), "gputally_gpu_allocation", model.LabelSet{"sharing": "dra", "resource": "gpu.nvidia.com"})
		return n == 6
	})
	s := e.scrape(t)
	for name, want := range map[string]float64{
		"gputally_dra_resourceslices_up": 1, "gputally_dra_resourceslice_devices": 5, "gputally_dra_unmapped_allocations": 0,
	} {
		if v, n := sum(s, name, nil); n != 1 || v != want {
			t.Errorf("%s = %v (%d series), want %v", name, v, n, want)
		}
	}
	// A lone holder of a whole DRA GPU labels its device series; a shared one does not.
	if _, n := sum(s, dcgmnames.GPUUtil.New, model.LabelSet{"pod": "train-0"}); n != 1 {
		t.Errorf("train-0's whole GPU: %d device series with its pod labels, want 1", n)
	}
	if _, n := sum(s, dcgmnames.GPUUtil.New, model.LabelSet{"namespace": "lab"}); n != 0 {
		t.Errorf("the GPU two claims share got pod labels on %d device series", n)
	}
}

// TestDRAFlagErrors: DRA attribution without a way to reach the API server is a
// bad-input exit naming the fix.
func TestDRAFlagErrors(t *testing.T) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBERNETES_SERVICE_") {
			env = append(env, kv)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"not in a cluster", []string{"--attribution.dra.enabled"}, []string{"--attribution.dra.enabled", "--kubeconfig"}},
		{"missing kubeconfig", []string{"--attribution.dra.enabled", "--kubeconfig=" + filepath.Join(t.TempDir(), "none")}, []string{"none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadInput(t, env, append([]string{"exporter", "--backend=sim", "--web.listen-address=" + freeAddr(t)}, tc.args...), tc.want...)
		})
	}
}
