package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	pmodel "github.com/prometheus/common/model"
)

// HTTPQuerier queries the range-query endpoint of a Prometheus-compatible
// HTTP API: Prometheus, Thanos, Mimir and Cortex, VictoriaMetrics, managed
// services — at the URL's path prefix (`https://mimir.example/prometheus`,
// `http://vmselect:8481/select/0/prometheus`). It asks every engine not to
// answer partially and Thanos for raw data, retries what an engine says it may
// retry, and reads each answer with a size cap. It is safe for concurrent use.
type HTTPQuerier struct {
	endpoint *url.URL // …/api/v1/query_range
	shown    string   // the engine in messages: scheme, host and path prefix, no query
	opts     HTTPOptions
}

// HTTPOptions configures a HTTPQuerier. The zero value of each field
// but Client means its default.
type HTTPOptions struct {
	// Client sends the requests; auth, TLS, proxy and extra headers come from
	// an HTTP client config file (LoadHTTPClient). nil: http.DefaultClient.
	Client *http.Client
	// Timeout bounds each request, on the server (its `timeout` parameter)
	// and on the client, its answer's last byte included; default 2m. A
	// request past it is not sent again: the same query would take as long.
	Timeout time.Duration
	// MaxAnswerBytes is the largest answer read; a larger one is an
	// *AnswerTooLargeError. Default DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Retries is how many times a request is sent again after a 429, 502, 503
	// or 504, a failed connection or an answer cut off (framed or not),
	// waiting Backoff, then twice as long each time (or what Retry-After
	// asks, at most a minute); default 4, negative: none. The caller's
	// context bounds the total time.
	Retries int
	Backoff time.Duration // default 1s
}

// DefaultMaxAnswerBytes is the default of HTTPOptions.MaxAnswerBytes: 256 MiB,
// about 10 times the text of a request of the default size (1,000,000
// samples, 25 MB at 25 bytes a sample). The report's default is smaller
// under a memory limit (report.AnswerCap).
const DefaultMaxAnswerBytes = 256 << 20

// userAgent names the report to the engines it queries.
const userAgent = "gputally-report"

// partialParams are sent with every query so that an engine that can answer
// with part of the data says so with an error instead (Thanos
// `partial_response`, VictoriaMetrics `deny_partial_response`), and so that
// Thanos reads raw samples, not its downsampled blocks, for money
// (`max_source_resolution`). Engines ignore the parameters they do not know.
var partialParams = url.Values{
	"partial_response":      {"false"},
	"deny_partial_response": {"1"},
	"max_source_resolution": {"0s"},
}

// NewHTTPQuerier returns a querier for the API at base, which may carry
// a path prefix.
func NewHTTPQuerier(base string, opts HTTPOptions) (*HTTPQuerier, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus url %q: want http(s)://host[:port][/path prefix]", base)
	}
	if u.User != nil {
		return nil, fmt.Errorf("prometheus url %q: credentials in the URL would show in logs and process lists; put them in --prometheus.http-config.file", u.Redacted())
	}
	// A query string stays in the requests and out of every message: it may
	// hold a token.
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}).String()
	u = u.JoinPath("api", "v1", "query_range")
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if opts.Retries == 0 {
		opts.Retries = 4
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	return &HTTPQuerier{endpoint: u, shown: shown, opts: opts}, nil
}

// String names the engine: its URL's scheme, host and path prefix, without
// its query string (which may hold a token).
func (p *HTTPQuerier) String() string { return p.shown }

// AnswerTooLargeError is an answer over HTTPOptions.MaxAnswerBytes. The
// report splits such a request into smaller ones while it can.
type AnswerTooLargeError struct {
	Limit int64
	Query string
}

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("the answer to %s is larger than %d bytes (%.1f MiB, --query.max-answer-bytes)", e.Query, e.Limit, float64(e.Limit)/(1<<20))
}

// engineError is an answer of the engine that is not data: its HTTP status,
// and the error type and text of its JSON envelope when it sent one.
type engineError struct {
	status    int
	errorType string
	text      string
}

func (e *engineError) Error() string {
	if e.errorType != "" {
		return fmt.Sprintf("HTTP %d, %s: %s", e.status, e.errorType, e.text)
	}
	return fmt.Sprintf("HTTP %d: %s", e.status, e.text)
}

// busyHint names the flag that sends fewer requests at once when the engine
// refused a request for the load.
func busyHint(e *engineError) string {
	if e.status == http.StatusTooManyRequests || strings.Contains(strings.ToLower(e.text), "too many") {
		return " — the engine is busy: lower --query.concurrency to send fewer requests at once"
	}
	return ""
}

// retryable reports whether the engine says the same request may succeed later.
func (e *engineError) retryable() bool {
	switch e.status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// QueryRange implements Querier. The warnings it returns are the engine's
// words about an answer it marked partial or incomplete: its `warnings`, the
// `infos` that say data is missing, and VictoriaMetrics' `isPartial`.
func (p *HTTPQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (pmodel.Matrix, []string, error) {
	form := url.Values{
		"query":   {query},
		"start":   {formatTime(start)},
		"end":     {formatTime(end)},
		"step":    {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
		"timeout": {pmodel.Duration(p.opts.Timeout).String()},
	}
	for k, v := range partialParams {
		form[k] = v
	}
	backoff := p.opts.Backoff
	for attempt := 0; ; attempt++ {
		m, warnings, wait, err := p.send(ctx, query, form)
		if err == nil {
			return m, warnings, nil
		}
		if wait < 0 || attempt >= p.opts.Retries {
			return nil, nil, err
		}
		wait = max(wait, backoff)
		backoff *= 2
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// send makes one request. wait is negative when the error is final, else the
// least time to wait before sending it again (0: the caller's backoff).
func (p *HTTPQuerier) send(ctx context.Context, query string, form url.Values) (_ pmodel.Matrix, _ []string, wait time.Duration, _ error) {
	ctx, cancel := context.WithTimeoutCause(ctx, p.opts.Timeout, errQueryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, -1, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", userAgent)
	resp, err := p.opts.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, -1, p.late(ctx, fmt.Sprintf("did not answer %s", query))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query string and all
		}
		return nil, nil, 0, fmt.Errorf("query %s at %s: %w", query, p.where(), err)
	}
	defer resp.Body.Close()
	body := &cappedReader{r: resp.Body, left: p.opts.MaxAnswerBytes + 1}
	m, warnings, err := decodeAnswer(resp.StatusCode, body)
	var ee *engineError
	switch {
	case body.over:
		return nil, nil, -1, &AnswerTooLargeError{Limit: p.opts.MaxAnswerBytes, Query: query}
	case err == nil:
		return m, warnings, 0, nil
	case errors.Is(err, errAnswerTooLarge):
		return nil, nil, -1, &AnswerTooLargeError{Limit: p.opts.MaxAnswerBytes, Query: query}
	case ctx.Err() != nil: // an answer that trickles
		return nil, nil, -1, p.late(ctx, fmt.Sprintf("did not finish its answer to %s (%d bytes in)", query, body.read))
	case errors.As(err, &ee) && ee.retryable():
		return nil, nil, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("%s refused %s for now: %w%s", p.where(), query, err, busyHint(ee))
	case errors.As(err, &ee):
		return nil, nil, -1, fmt.Errorf("%s rejected %s: %w%s", p.where(), query, err, limitHint(ee))
	case body.failed != nil:
		return nil, nil, 0, fmt.Errorf("the answer of %s to %s was cut off after %d bytes: %w", p.where(), query, body.read, body.failed)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The connection closed cleanly before the JSON ended: an answer
		// without Content-Length or chunks, cut off as a framed one is.
		return nil, nil, 0, fmt.Errorf("the answer of %s to %s was cut off after %d bytes, before its JSON ended: %w", p.where(), query, body.read, err)
	}
	return nil, nil, -1, fmt.Errorf("%s answered %s with %w", p.where(), query, err)
}

// errQueryTimeout is the cause of a request's context when HTTPOptions.Timeout
// ran out.
var errQueryTimeout = errors.New("the query's timeout")

// late is the error of a request whose context ended: past the query's
// timeout (what names --query.timeout), or the caller's cause (the report's
// total timeout, a signal). what says what the engine did not do in time.
func (p *HTTPQuerier) late(ctx context.Context, what string) error {
	if cause := context.Cause(ctx); cause != errQueryTimeout {
		return fmt.Errorf("%s %s: %w", p.where(), what, cause)
	}
	return fmt.Errorf("%s %s within %s (--query.timeout)", p.where(), what, pmodel.Duration(p.opts.Timeout))
}

// errAnswerTooLarge is a cappedReader's error past its cap.
var errAnswerTooLarge = errors.New("answer too large")

// cappedReader reads at most left − 1 bytes of r: the byte after them is
// errAnswerTooLarge, and over is set once it was read (a decoder may have
// what it needs before it sees the error). failed is the error of r itself,
// if any; read counts the bytes read.
type cappedReader struct {
	r      io.Reader
	left   int64
	read   int64
	over   bool
	failed error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	if c.left <= 0 {
		c.over = true
		return n, errAnswerTooLarge
	}
	if err != nil && err != io.EOF {
		c.failed = err
	}
	return n, err
}

// where names the engine in errors: its URL without the query endpoint and
// without a query string.
func (p *HTTPQuerier) where() string { return "the engine at " + p.String() }

// limitHint names the flags that split the work when the engine refused a
// query for one of its limits (points per series, samples, query length).
func limitHint(e *engineError) string {
	s := strings.ToLower(e.text)
	for _, w := range []string{"too many samples", "maximum resolution", "points per timeseries", "max samples", "query time range exceeds", "exceeded", "exceeds", "limit",
		"maxsamplesperquery", "maxpointspertimeseries", "maxuniquetimeseries", "max-fetched", "cannot select more than"} {
		if strings.Contains(s, w) {
			return " — an engine limit: lower --query.max-samples or --query.max-points to split the work into smaller requests"
		}
	}
	return ""
}

// retryAfter is the wait a Retry-After header asks for (seconds or an HTTP
// date), at most a minute; 0 when absent or unreadable.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(h); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), time.Minute)
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', -1, 64)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
