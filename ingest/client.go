package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/internal/httpretry"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// ClientOptions configure a Client. Zero fields take the documented defaults.
type ClientOptions struct {
	// URL is the API base, e.g. http://127.0.0.1:8428 or
	// http://vmselect:8481/select/0/prometheus. Userinfo is sent as basic
	// auth and redacted in errors; query parameters are sent with every
	// request.
	URL string
	// HTTPClient is built by the caller, typically from
	// prometheus/common/config.HTTPClientConfig. nil: a default client.
	HTTPClient *http.Client
	// Timeout bounds each attempt, reading and decoding the response body
	// included. Default 30s.
	Timeout time.Duration
	// UsePOST sends the parameters as a POST form instead of a GET query,
	// except to label values and the TSDB status, which Prometheus serves
	// to GET alone.
	// A query string longer than 4 KiB is sent as a POST form either way.
	UsePOST bool
	// MaxRetries is how many times a request is retried after a 5xx, a 429
	// or a connection error. 0 means the default, 3; negative means none.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the capped exponential backoff with
	// full jitter between attempts. Defaults 250ms and 5s. A Retry-After
	// header is honoured up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxPointsPerSeries is the most points one query_range request may
	// return per series; longer ranges are split into consecutive requests
	// and joined. Default MaxPointsPerQuery.
	MaxPointsPerSeries int
	// MaxResponseBytes, MaxResponseSeries and MaxResponsePoints bound what
	// one call takes in: the bytes of each response body as read (after
	// HTTP decompression), and the series and points (samples over all
	// series) of the result of a QueryRange or Query call, over all the
	// requests a long range is split into. A response past a limit is
	// refused with a *LimitError that names the limit and its value, as
	// soon as it is passed: the rest of the body is not read, and the
	// request is not retried. A Content-Length past MaxResponseBytes
	// refuses the response before its body is read. 0 means the default; a
	// negative value means no limit.
	//
	// The body is decoded as it is read, so what a call holds is its series
	// plus a bounded buffer. The defaults are twice what the daemon is sized
	// for, 100,000 series of 240 points (a body of 550 to 600 MB, decoded
	// into 384 MB of points): DefaultMaxResponseBytes (1 GiB),
	// DefaultMaxResponseSeries (200,000) and DefaultMaxResponsePoints
	// (48,000,000 points, 768 MB of timestamps and values).
	MaxResponseBytes  int64
	MaxResponseSeries int
	MaxResponsePoints int
	// MaxConcurrentRequests bounds the requests one call has in flight at
	// once: the time chunks and series shards of a range (see
	// QueryRangeParts). Default 4; 1 fetches them one after another.
	MaxConcurrentRequests int
	// RequestPoints is how many points (samples over all series) one
	// query_range request is planned to return at most. A query_range of
	// a series selector to VictoriaMetrics expected to return more is
	// split into series shards, and into time chunks of ChunkPoints points
	// per series. An export is not: it is streamed.
	// Default 2,000,000 (about 40 MB of JSON).
	RequestPoints int
	// ChunkPoints is the most points per series of one time chunk of a
	// range split to stay within RequestPoints. Default 1440 (six hours at
	// 15 s); at most MaxPointsPerSeries.
	ChunkPoints int
	// Store is what the source is: StoreAuto (the default) asks it once
	// whether it is VictoriaMetrics; StoreVictoriaMetrics and StoreOther
	// say so without asking. On VictoriaMetrics the client may split a
	// range by series and fetch series selectors from /api/v1/export (see
	// QueryRangeParts); on any other store it uses query_range.
	Store StoreKind
	// DisableExport keeps the client on query_range even when the store is
	// VictoriaMetrics.
	DisableExport bool
	// Metrics receives the client's self-metrics. nil: unregistered.
	//
	// The client counts requests by path and HTTP code
	// (inferwatch_source_requests_total{path,code}, code "error" when there
	// was no response), retries (inferwatch_source_request_retries_total),
	// the duration of each attempt with its body read
	// (inferwatch_source_request_duration_seconds{path}), and responses
	// refused by a limit
	// (inferwatch_source_responses_refused_total{limit="bytes|series|points"}).
	Metrics *metrics.Set
	// Logger receives retry notices. nil: discarded.
	Logger *slog.Logger
}

// The defaults of the response limits of ClientOptions.
const (
	DefaultMaxResponseBytes  = 1 << 30
	DefaultMaxResponseSeries = 200_000
	DefaultMaxResponsePoints = 48_000_000
)

// StoreKind says what kind of store the source is.
type StoreKind string

// The kinds of store.
const (
	StoreAuto            StoreKind = ""
	StoreVictoriaMetrics StoreKind = "victoriametrics"
	StoreOther           StoreKind = "other"
)

// The defaults of the request planning of ClientOptions.
const (
	DefaultMaxConcurrentRequests = 4
	DefaultRequestPoints         = 2_000_000
	DefaultChunkPoints           = 1440
)

// Client queries a Prometheus-compatible HTTP API (Prometheus,
// VictoriaMetrics single node, vmselect). It is safe for concurrent use.
type Client struct {
	o    ClientOptions
	base *url.URL
	hc   *http.Client
	log  *slog.Logger
	ms   *metrics.Set

	lim         ResponseLimits // the limits of one call; 0: none
	retries     *metrics.Counter
	lookBehinds *metrics.Counter
	refused     map[string]*metrics.Counter // by limit
	splits      map[string]*metrics.Counter // by what: time, series

	mu        sync.Mutex
	requests  map[string]*metrics.Counter             // by path and code
	durations map[string]*metrics.PrometheusHistogram // by path

	store  storeKind   // what the source is, once known
	plans  *planCache  // series shards and what is known of each query
	labels *labelCache // the labels of the series met, by their bytes
}

const (
	pathQueryRange = "/api/v1/query_range"
	pathQuery      = "/api/v1/query"
)

// NewClient checks o, fills its defaults and returns a Client.
func NewClient(o ClientOptions) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("ingest client: URL is empty; want e.g. http://127.0.0.1:8428")
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("ingest client: parsing URL: %w", err)
	}
	switch o.Store {
	case StoreAuto, StoreVictoriaMetrics, StoreOther:
	default:
		return nil, fmt.Errorf("ingest client: Store %q: want %q, %q or %q", o.Store, StoreAuto, StoreVictoriaMetrics, StoreOther)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("ingest client: URL %s: scheme must be http or https", redact(u))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("ingest client: URL %s has no host", redact(u))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Fragment = ""
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxPointsPerSeries <= 0 {
		o.MaxPointsPerSeries = MaxPointsPerQuery
	}
	if o.MaxConcurrentRequests <= 0 {
		o.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if o.RequestPoints <= 0 {
		o.RequestPoints = DefaultRequestPoints
	}
	if o.ChunkPoints <= 0 {
		o.ChunkPoints = DefaultChunkPoints
	}
	o.ChunkPoints = min(o.ChunkPoints, o.MaxPointsPerSeries)
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxResponseSeries == 0 {
		o.MaxResponseSeries = DefaultMaxResponseSeries
	}
	if o.MaxResponsePoints == 0 {
		o.MaxResponsePoints = DefaultMaxResponsePoints
	}
	c := &Client{o: o, base: u, hc: o.HTTPClient, log: o.Logger, ms: o.Metrics, lim: ResponseLimits{
		Bytes:  max(o.MaxResponseBytes, 0),
		Series: max(o.MaxResponseSeries, 0),
		Points: max(o.MaxResponsePoints, 0),
	}}
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.ms == nil {
		c.ms = metrics.NewSet()
	}
	c.retries = c.ms.GetOrCreateCounter("inferwatch_source_request_retries_total")
	c.lookBehinds = c.ms.GetOrCreateCounter("inferwatch_source_export_refetches_total")
	c.refused = make(map[string]*metrics.Counter, 3)
	for _, l := range []string{"bytes", "series", "points"} {
		c.refused[l] = c.ms.GetOrCreateCounter(fmt.Sprintf(`inferwatch_source_responses_refused_total{limit=%q}`, l))
	}
	c.splits = make(map[string]*metrics.Counter, 2)
	for _, by := range []string{"time", "series"} {
		c.splits[by] = c.ms.GetOrCreateCounter(fmt.Sprintf(`inferwatch_source_request_splits_total{by=%q}`, by))
	}
	c.requests = make(map[string]*metrics.Counter)
	c.durations = make(map[string]*metrics.PrometheusHistogram)
	c.plans = newPlanCache()
	// Two generations of twice the series one answer may hold.
	c.labels = newLabelCache(max(2*c.lim.Series, 1<<16))
	if c.lim.Series == 0 {
		c.labels = newLabelCache(1 << 20)
	}
	if o.Store != StoreAuto {
		c.store.known, c.store.vm = true, o.Store == StoreVictoriaMetrics
	}
	return c, nil
}

// joinSeries appends the points of next to the series of acc with the same
// labels, dropping points not after the last one already held.
func joinSeries(acc []Series, index map[string]int, next []Series) []Series {
	var key []byte
	for _, s := range next {
		key = appendJoinKey(key[:0], s.Labels)
		i, ok := index[string(key)]
		if !ok {
			index[string(key)] = len(acc)
			acc = append(acc, s)
			continue
		}
		a := &acc[i]
		k := 0
		if n := len(a.Timestamps); n > 0 {
			last := a.Timestamps[n-1]
			for k < len(s.Timestamps) && s.Timestamps[k] <= last {
				k++
			}
		}
		a.Timestamps = append(a.Timestamps, s.Timestamps[k:]...)
		a.Values = append(a.Values, s.Values[k:]...)
	}
	return acc
}

// appendJoinKey writes an unambiguous key for sorted labels.
func appendJoinKey(dst []byte, ls Labels) []byte {
	for _, l := range ls {
		dst = strconv.AppendQuote(dst, l.Name)
		dst = strconv.AppendQuote(dst, l.Value)
	}
	return dst
}

// Query evaluates query at the instant ts. A vector yields one point per
// series; a scalar yields one series without labels.
func (c *Client) Query(ctx context.Context, query string, ts time.Time) ([]Series, error) {
	params := url.Values{"query": {query}, "time": {formatSeconds(ts.UnixMilli())}}
	return c.do(ctx, "query", pathQuery, query, params, 0, c.readQuery)
}

// readQuery is readQueryResponse through the client's label cache.
func (c *Client) readQuery(body io.Reader, lim ResponseLimits, prior int) ([]Series, error) {
	d := newReadDecoder(body, lim, prior, readBufSize)
	d.lc = c.labels
	return d.response()
}

// formatSeconds writes unix milliseconds as seconds with three decimals.
func formatSeconds(ms int64) string {
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

// maxErrorBody is how much of the body of a response that is not a 2xx
// the client reads, looking for the API's error message.
const maxErrorBody = 64 << 10

// decodeFunc decodes a 2xx body as it is read, within lim, prior points
// being held already.
type decodeFunc func(body io.Reader, lim ResponseLimits, prior int) ([]Series, error)

// do sends one API request with retries and decodes the answer. prior
// points, held by the caller, count against the points limit.
func (c *Client) do(ctx context.Context, op, path, query string, params url.Values, prior int, decode decodeFunc) ([]Series, error) {
	ss, _, err := c.doType(ctx, op, path, query, params, prior, decode)
	return ss, err
}

// doType is do that also returns the Content-Type of the answer.
func (c *Client) doType(ctx context.Context, op, path, query string, params url.Values, prior int, decode decodeFunc) ([]Series, string, error) {
	return c.doWith(ctx, op, path, query, params, prior, decode, false)
}

// doStream is do for an answer whose decode hands its series over as they
// come: the per-attempt timeout bounds each wait for the body's next
// bytes rather than the whole attempt, which lasts as long as the caller
// takes to use the parts.
func (c *Client) doStream(ctx context.Context, op, path, query string, params url.Values, decode decodeFunc) ([]Series, error) {
	ss, _, err := c.doWith(ctx, op, path, query, params, 0, decode, true)
	return ss, err
}

func (c *Client) doWith(ctx context.Context, op, path, query string, params url.Values, prior int, decode decodeFunc, idle bool) ([]Series, string, error) {
	u := *c.base
	u.Path += path
	if c.base.RawQuery != "" {
		extra := c.base.Query()
		for k, vs := range extra {
			if _, ok := params[k]; !ok {
				params[k] = vs
			}
		}
	}
	form := params.Encode()
	rerr := &RequestError{Op: op, URL: c.redacted(path), Query: query}

	for attempt := 0; ; attempt++ {
		rerr.Attempts = attempt + 1
		res := c.attempt(ctx, &u, path, form, prior, decode, idle)
		if res.err == nil && res.code/100 == 2 {
			return res.series, res.contentType, nil
		}
		rerr.StatusCode, rerr.Status, rerr.Err, rerr.Body = res.code, res.status, res.err, res.body
		if !res.retry || attempt >= c.o.MaxRetries || ctx.Err() != nil {
			if ctx.Err() != nil && rerr.Err == nil {
				rerr.Err = ctx.Err()
			}
			return nil, "", rerr
		}
		wait := c.backoff(attempt, res.retryAfter)
		c.retries.Inc()
		c.log.Warn("retrying source request", "op", op, "url", rerr.URL, "attempt", attempt+1,
			"status", res.code, "err", res.err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if rerr.Err != nil {
				rerr.Err = fmt.Errorf("%w; stopped before retrying: %w", rerr.Err, ctx.Err())
			} else {
				rerr.Err = fmt.Errorf("stopped before retrying: %w", ctx.Err())
			}
			return nil, "", rerr
		case <-t.C:
		}
	}
}

type attemptResult struct {
	series      []Series
	contentType string
	code        int
	status      string
	err         error  // a transport, read, decode or limit error, or the API's *APIError
	body        string // the first bytes of a body that is not a 2xx and not an API error
	retry       bool
	retryAfter  time.Duration // from a Retry-After header, or -1
}

// maxGetForm is the longest query string a request sends in its URL: a
// longer one (a shard's matcher on many values) goes in a POST form, as
// servers and proxies bound the length of a URL.
const maxGetForm = 4 << 10

// post says whether a request to path with the query string form goes as
// a POST form: when asked (ClientOptions.UsePOST), except to the paths
// Prometheus serves to GET alone (label values, the TSDB status), and
// whenever form is longer than maxGetForm.
func (c *Client) post(path, form string) bool {
	getOnly := strings.HasPrefix(path, pathLabelValues) || strings.HasPrefix(path, "/api/v1/status/")
	return (c.o.UsePOST && !getOnly) || len(form) > maxGetForm
}

// attempt sends one request and decodes a 2xx body as it is read, within
// the per-attempt timeout.
func (c *Client) attempt(ctx context.Context, u *url.URL, path, form string, prior int, decode decodeFunc, idle bool) attemptResult {
	var (
		actx   context.Context
		cancel context.CancelFunc
		timer  *time.Timer
	)
	if idle {
		actx, cancel = context.WithCancel(ctx)
		timer = time.AfterFunc(c.o.Timeout, cancel)
		defer timer.Stop()
	} else {
		actx, cancel = context.WithTimeout(ctx, c.o.Timeout)
	}
	defer cancel()
	var req *http.Request
	var err error
	if c.post(path, form) {
		req, err = http.NewRequestWithContext(actx, http.MethodPost, u.String(), strings.NewReader(form))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		q := *u
		q.RawQuery = form
		req, err = http.NewRequestWithContext(actx, http.MethodGet, q.String(), nil)
	}
	if err != nil {
		return attemptResult{err: fmt.Errorf("building request: %w", err), retryAfter: -1}
	}
	req.Header.Set("Accept", "application/json")

	began := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.observe(path, "error", began)
		r := attemptResult{err: transportError(err), retryAfter: -1}
		switch {
		case ctx.Err() != nil:
			r.err = ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil:
			r.err = fmt.Errorf("no response within the per-attempt timeout of %v", c.o.Timeout)
		default:
			r.retry = isConnError(err)
		}
		return r
	}
	// Closing a body that was not read to its end closes the connection
	// rather than reading the rest.
	defer resp.Body.Close()
	r := attemptResult{code: resp.StatusCode, status: resp.Status, retryAfter: -1, contentType: resp.Header.Get("Content-Type")}
	body := &countingReader{r: resp.Body, timer: timer, idle: c.o.Timeout}
	if resp.StatusCode/100 == 2 {
		if c.lim.Bytes > 0 && resp.ContentLength > c.lim.Bytes {
			r.err = &LimitError{Limit: "bytes", Max: c.lim.Bytes, ContentLength: resp.ContentLength}
		} else {
			r.series, r.err = decode(body, c.lim, prior)
		}
	} else {
		r.body, r.err = readErrorBody(body)
	}
	c.observe(path, strconv.Itoa(resp.StatusCode), began)
	var le *LimitError
	switch {
	case errors.As(r.err, &le):
		c.refused[le.Limit].Inc()
		r.series = nil
	case body.err != nil && errors.Is(r.err, body.err):
		switch {
		case ctx.Err() != nil:
			r.err = fmt.Errorf("reading body: %w", ctx.Err())
		case actx.Err() != nil:
			r.err = fmt.Errorf("reading body: not complete within the per-attempt timeout of %v (after %d bytes)", c.o.Timeout, body.n)
			if idle {
				r.err = fmt.Errorf("reading body: no bytes for the per-attempt timeout of %v (after %d bytes)", c.o.Timeout, body.n)
			}
		default:
			r.err = fmt.Errorf("reading body after %d bytes: %w", body.n, body.err)
		}
		// A broken body is not retried.
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		r.retry = true
		r.retryAfter = httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}

// readErrorBody reads the start of a body that is not a 2xx: the API's
// error, or else its first bytes to quote.
func readErrorBody(body io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxErrorBody))
	if err != nil {
		return "", err
	}
	// A Prometheus error body is JSON with status "error".
	if _, err := DecodeQueryResponse(b); err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			return "", ae
		}
		return headAndTail(b), nil
	}
	return "", nil
}

// headAndTail quotes a long error body by its start and its end, where
// VictoriaMetrics says which of its limits refused the request.
func headAndTail(b []byte) string {
	if len(b) <= maxBodyInError {
		return string(b)
	}
	half := maxBodyInError / 2
	return string(b[:half]) + " … " + string(b[len(b)-half:])
}

// countingReader counts the bytes of a body and keeps its first error.
type countingReader struct {
	r   io.Reader
	n   int64
	err error // other than io.EOF
	// timer, when set, is reset to idle at every read that returns bytes.
	timer *time.Timer
	idle  time.Duration
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if n > 0 && c.timer != nil {
		c.timer.Reset(c.idle)
	}
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// observe counts a finished attempt and its duration.
func (c *Client) observe(path, code string, began time.Time) {
	c.mu.Lock()
	key := path + " " + code
	ctr, ok := c.requests[key]
	if !ok {
		ctr = c.ms.GetOrCreateCounter(fmt.Sprintf(`inferwatch_source_requests_total{path=%q,code=%q}`, path, code))
		c.requests[key] = ctr
	}
	h, ok := c.durations[path]
	if !ok {
		h = c.ms.GetOrCreatePrometheusHistogramExt(fmt.Sprintf(`inferwatch_source_request_duration_seconds{path=%q}`, path), metricname.RequestBuckets())
		c.durations[path] = h
	}
	c.mu.Unlock()
	ctr.Inc()
	h.UpdateDuration(began)
}

// backoff is the wait before retry number attempt+1: the server's
// Retry-After when given, else full jitter over a capped exponential; both
// capped at MaxBackoff.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, c.o.MaxBackoff)
	}
	ceil := c.o.MinBackoff
	for i := 0; i < attempt && ceil < c.o.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.o.MaxBackoff)
	return rand.N(ceil + 1)
}

// isConnError reports whether err means the request never got an answer
// from a server that may answer next time: refused, reset, or the
// connection closed before the response headers.
func isConnError(err error) bool {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "dial" || op.Op == "read")
}

// transportError drops the *url.Error wrapper, whose message repeats the
// full request URL with every parameter.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redacted is the base URL plus path with the password masked and no
// query parameters, for messages.
func (c *Client) redacted(path string) string {
	u := *c.base
	u.Path += path
	return redact(&u)
}

func redact(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	v.ForceQuery = false
	v.Fragment = ""
	return v.Redacted()
}
