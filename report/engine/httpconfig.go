package engine

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/prometheus/common/config"

	"github.com/gputally/gputally/smallfile"
)

// maxHTTPConfigBytes bounds the HTTP client config file.
const maxHTTPConfigBytes = 1 << 20

// LoadHTTPClient returns the HTTP client of an HTTP client config file in
// prometheus/common's format (promtool's --http.config.file): basic auth,
// authorization (bearer token) with its credentials in files, OAuth 2,
// TLS CA, certificate and key, proxy, and extra headers such as X-Scope-OrgID
// or THANOS-TENANT (http_headers). Unknown keys are errors; relative paths are
// relative to the file. No secret of the file is ever logged or put in an error.
func LoadHTTPClient(path string) (*http.Client, error) {
	b, err := smallfile.Read(path, maxHTTPConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("read HTTP client config: %w", err)
	}
	cfg, err := config.LoadHTTPConfig(string(b))
	if err != nil {
		return nil, fmt.Errorf("HTTP client config %s: %w", path, err)
	}
	cfg.SetDirectory(filepath.Dir(path))
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("HTTP client config %s: %w", path, err)
	}
	c, err := config.NewClientFromConfig(*cfg, userAgent, config.WithUserAgent(userAgent))
	if err != nil {
		return nil, fmt.Errorf("HTTP client config %s: %w", path, err)
	}
	return c, nil
}
