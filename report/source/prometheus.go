package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	pmodel "github.com/prometheus/common/model"
)

// PrometheusQuerier queries a Prometheus-compatible HTTP API (Prometheus,
// Thanos, Mimir, VictoriaMetrics) through client_golang's api/prometheus/v1.
// It is safe for concurrent use.
type PrometheusQuerier struct {
	api     v1.API
	url     string
	timeout time.Duration
}

// NewPrometheusQuerier returns a querier for the API at url. Each request is
// bounded by timeout, both on the server (the `timeout` parameter) and on the
// client. rt is the HTTP transport; nil uses http.DefaultTransport.
func NewPrometheusQuerier(url string, timeout time.Duration, rt http.RoundTripper) (*PrometheusQuerier, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	c, err := api.NewClient(api.Config{Address: url, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus url %q: %w", url, err)
	}
	return &PrometheusQuerier{api: v1.NewAPI(c), url: url, timeout: timeout}, nil
}

// QueryRange implements Querier.
func (p *PrometheusQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	val, warnings, _, err := p.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(p.timeout))
	if err != nil {
		var apiErr *v1.Error
		if errors.As(err, &apiErr) && apiErr.Type != v1.ErrClient {
			return nil, nil, fmt.Errorf("prometheus at %s rejected query %s: %w", p.url, query, err)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("prometheus at %s did not answer within %s: %w", p.url, p.timeout, err)
		}
		return nil, nil, fmt.Errorf("query prometheus at %s: %w", p.url, err)
	}
	m, ok := val.(pmodel.Matrix)
	if !ok {
		got := "no result" // a "data" of null decodes to no value at all
		if val != nil {
			got = "a " + val.Type().String()
		}
		return nil, nil, fmt.Errorf("prometheus at %s answered a range query with %s, want a matrix", p.url, got)
	}
	return m, warnings, nil
}
