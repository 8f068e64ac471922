package attribution

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func writeKubeconfig(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const kubeconfigTwoContexts = `apiVersion: v1
kind: Config
current-context: prod
clusters:
  - name: dev
    cluster: {server: "https://dev:6443", insecure-skip-tls-verify: true}
  - name: prod
    cluster:
      server: https://prod:6443
      certificate-authority: pki/ca.crt
      tls-server-name: api.prod
contexts:
  - {name: dev, context: {cluster: dev, user: dev}}
  - {name: prod, context: {cluster: prod, user: exporter}}
users:
  - name: dev
    user: {token: dev-token}
  - name: exporter
    user:
      tokenFile: /var/run/token
      client-certificate-data: Y2VydA==
      client-key: keys/client.key
`

func TestLoadKubeconfig(t *testing.T) {
	p := writeKubeconfig(t, kubeconfigTwoContexts)
	rc, err := loadKubeconfig(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	if rc.Host != "https://prod:6443" || rc.ServerName != "api.prod" || rc.Insecure ||
		rc.CAFile != filepath.Join(dir, "pki/ca.crt") || rc.BearerToken != "" || rc.BearerTokenFile != "/var/run/token" ||
		string(rc.CertData) != "cert" || rc.KeyFile != filepath.Join(dir, "keys/client.key") || rc.ExecProvider != nil {
		t.Errorf("config of the current context: %+v", rc)
	}

	rc, err = loadKubeconfig(writeKubeconfig(t, strings.Replace(kubeconfigTwoContexts, "current-context: prod", "current-context: dev", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://dev:6443" || !rc.Insecure || rc.BearerToken != "dev-token" || rc.CAFile != "" {
		t.Errorf("config of the dev context: %+v", rc)
	}
}

func TestLoadKubeconfigExec(t *testing.T) {
	rc, err := loadKubeconfig(writeKubeconfig(t, `current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://c"}}]
users:
  - name: u
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: cloud-auth
        args: [token, --cluster, c]
        env: [{name: REGION, value: eu}]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := rc.ExecProvider
	if e == nil || e.Command != "cloud-auth" || len(e.Args) != 3 || len(e.Env) != 1 || e.Env[0].Value != "eu" ||
		e.APIVersion != "client.authentication.k8s.io/v1" || e.InteractiveMode != clientcmdapi.NeverExecInteractiveMode {
		t.Errorf("exec provider %+v", e)
	}
}

func TestLoadKubeconfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"no current context", "clusters: []", "no current-context"},
		{"unknown context", "current-context: x\ncontexts: [{name: y, context: {cluster: c, user: u}}]", `no context "x"`},
		{"unknown cluster", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]", `no server for cluster "c"`},
		{"auth provider", `current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://c"}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]`, "auth-provider plugins are not supported"},
		{"not YAML", "current-context: [", "kubeconfig"},
		{"over the size cap", "current-context: x\n#" + strings.Repeat("x", maxKubeconfigBytes), "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadKubeconfig(writeKubeconfig(t, tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := loadKubeconfig(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: error %v", err)
	}
}
