package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Querier runs PromQL range queries. Implementations must be safe for use by
// one goroutine at a time; the report issues its queries sequentially.
type Querier interface {
	// QueryRange evaluates query at every step from start to end inclusive and
	// returns the resulting series. Warnings are annotations the server returned
	// alongside a successful result.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error)
}

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
func (p *PrometheusQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
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
	m, ok := val.(model.Matrix)
	if !ok {
		got := "no result" // a "data" of null decodes to no value at all
		if val != nil {
			got = "a " + val.Type().String()
		}
		return nil, nil, fmt.Errorf("prometheus at %s answered a range query with %s, want a matrix", p.url, got)
	}
	return m, warnings, nil
}

// rangeRunner splits range queries into requests of at most maxPoints steps
// each, and of at most about maxSamples samples each, so that no single
// request asks the server for an unbounded answer, and reports progress on a
// writer. It is not safe for concurrent use.
type rangeRunner struct {
	q          Querier
	maxPoints  int
	maxSamples int // samples (series × steps) one answer should hold; 0: no limit
	progress   *Progress
	total      int // requests planned
	done       int
	warnings   []string
	series     int // series in the last answer; 0: none yet
}

// probeSteps is the size of the first request when answers are bounded by
// samples: the series it returns size the requests that follow.
const probeSteps = 10

// isTerminal reports whether w is a character device (a terminal), where a
// progress line can be redrawn; in a log file or a pod's log it cannot.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// requests returns how many requests a query over (start, end] at step needs
// at maxPoints steps per request; run corrects the count in total when
// maxSamples makes it split finer.
func (r *rangeRunner) requests(start, end time.Time, step time.Duration) int {
	return ceilDiv(int(end.Sub(start)/step)+1, r.maxPoints)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// run evaluates query at start, start+step, …, end and calls each with the
// series of every request in time order. With maxSamples set, the runner's
// first request asks for probeSteps steps and every later one for as many
// steps as keep series × steps within maxSamples, counting the series of the
// previous answer (of this query or the one before), between 1 and maxPoints.
func (r *rangeRunner) run(ctx context.Context, name, query string, start, end time.Time, step time.Duration, each func(model.Matrix)) error {
	planned, done := r.requests(start, end, step), 0
	steps := r.sized()
	if r.maxSamples > 0 && r.series == 0 {
		steps = min(probeSteps, r.maxPoints)
	}
	for from := start; !from.After(end); {
		to := from.Add(time.Duration(steps-1) * step)
		if to.After(end) {
			to = end
		}
		m, warnings, err := r.q.QueryRange(ctx, query, from, to, step)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.warnings = append(r.warnings, warnings...)
		each(m)
		from = to.Add(step)
		r.series = max(1, len(m))
		steps = r.sized()
		done++
		left := 0
		if !from.After(end) {
			left = ceilDiv(int(end.Sub(from)/step)+1, steps)
		}
		r.total += done + left - planned
		planned = done + left
		r.done++
		r.progress.Update(fmt.Sprintf("report: %d/%d queries (%s)", r.done, r.total, name))
	}
	return nil
}

// sized is the steps of the next request: maxPoints, or fewer when
// maxSamples bounds the samples of an answer as large as the last.
func (r *rangeRunner) sized() int {
	if r.maxSamples == 0 || r.series == 0 {
		return r.maxPoints
	}
	return max(1, min(r.maxPoints, r.maxSamples/r.series))
}

// finish ends the progress line.
func (r *rangeRunner) finish() {
	r.progress.End()
}
