package attribution

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/gputally/gputally/smallfile"
)

// maxKubeconfigBytes caps the kubeconfig file read at start-up, bytes.
const maxKubeconfigBytes = 1 << 20

// kubeconfig is the part of a kubeconfig file (v1) that loadKubeconfig reads.
// client-go's own loader (tools/clientcmd) would cost the exporter about 2 MiB of
// resident memory for features a node exporter does not use (merging files,
// overrides, auth-provider plugins).
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			TLSServerName            string `json:"tls-server-name"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData []byte `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			ClientCertificate     string                   `json:"client-certificate"`
			ClientCertificateData []byte                   `json:"client-certificate-data"`
			ClientKey             string                   `json:"client-key"`
			ClientKeyData         []byte                   `json:"client-key-data"`
			Token                 string                   `json:"token"`
			TokenFile             string                   `json:"tokenFile"`
			Username              string                   `json:"username"`
			Password              string                   `json:"password"`
			Exec                  *clientcmdapi.ExecConfig `json:"exec"`
			AuthProvider          any                      `json:"auth-provider"`
		} `json:"user"`
	} `json:"users"`
}

// loadKubeconfig reads the current context of the kubeconfig file at path:
// server, TLS settings, and a token, token file, client certificate, basic auth or
// exec credential plugin. Relative file names are relative to the file's
// directory, as kubectl reads them. The file must be a regular file of at most
// maxKubeconfigBytes: a FIFO or a device is an error, not a hang.
func loadKubeconfig(path string) (*rest.Config, error) {
	data, err := smallfile.Read(path, maxKubeconfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if kc.CurrentContext == "" {
		return nil, fmt.Errorf("kubeconfig %s: no current-context", path)
	}
	var clusterName, userName string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
		}
	}
	if !found {
		return nil, fmt.Errorf("kubeconfig %s: no context %q", path, kc.CurrentContext)
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	rc := &rest.Config{}
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		rc.Host = c.Cluster.Server
		rc.TLSClientConfig = rest.TLSClientConfig{
			ServerName: c.Cluster.TLSServerName, Insecure: c.Cluster.InsecureSkipTLSVerify,
			CAFile: rel(c.Cluster.CertificateAuthority), CAData: c.Cluster.CertificateAuthorityData,
		}
	}
	if !found || rc.Host == "" {
		return nil, fmt.Errorf("kubeconfig %s: context %q: no server for cluster %q", path, kc.CurrentContext, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		if u.User.AuthProvider != nil {
			return nil, fmt.Errorf("kubeconfig %s: user %q: auth-provider plugins are not supported; use a token or an exec plugin", path, userName)
		}
		rc.BearerToken, rc.BearerTokenFile = u.User.Token, rel(u.User.TokenFile)
		rc.Username, rc.Password = u.User.Username, u.User.Password
		rc.CertFile, rc.CertData = rel(u.User.ClientCertificate), u.User.ClientCertificateData
		rc.KeyFile, rc.KeyData = rel(u.User.ClientKey), u.User.ClientKeyData
		if e := u.User.Exec; e != nil {
			if e.InteractiveMode == "" {
				e.InteractiveMode = clientcmdapi.NeverExecInteractiveMode // a daemon has no terminal
			}
			rc.ExecProvider = e
		}
	}
	return rc, nil
}
