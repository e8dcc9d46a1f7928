// Package writeback writes what inferwatch's rules judged back to a
// Prometheus-compatible store, as vmanomaly does, so that it can be plotted
// beside the metric it describes and alerted on with the store's own rules
// (vmalert, Prometheus).
//
// # What is written
//
// For each point of Batch.Scores (anomaly and window rules), at the point's
// time, the series
//
//	anomaly_score  the score: ≥ 1 is anomalous
//	y              the value judged
//	yhat           the expected value
//	yhat_lower     the lower bound of the band of normal values
//	yhat_upper     the upper bound
//
// each with the source series' labels, minus __name__, plus
//
//	for     the rule's name (vmanomaly's `for` names the query a model ran on)
//	rule    the rule's name again, as inferwatch's /metrics and events name it
//	group   the rule's group
//	metric  the source series' __name__, when it had one
//
// and the rule's own labels. A source label named like one of these is kept
// as exported_<name>. A figure that is undefined (NaN: the detector is not
// ready, or its band is one-sided) is no sample.
//
// For each lead of each forecast in Batch.Forecasts, three series named
// inferwatch_predicted with the same labels plus kind (yhat, yhat_lower,
// yhat_upper), horizon (the lead: 5m, 1h) and at (target or origin). A
// series per lead keeps every series in time order however the forecasts of
// successive evaluations overlap: inferwatch_predicted{horizon="10m"} is what
// was forecast ten minutes ahead. With at=target (ForecastTime AtTarget)
// each sample lies at the time it forecasts, so a panel shows it under what
// came; with at=origin (AtOrigin) at the forecast's origin, and `offset 10m`
// puts it under its target time. Remote-write receivers such as Prometheus
// refuse samples from the future, so AtOrigin is the default there.
//
// # How
//
// Two protocols: VictoriaMetrics' /api/v1/import (JSON lines) and
// Prometheus remote write 1.0 (a snappy-compressed protobuf WriteRequest),
// which VictoriaMetrics (/api/v1/write), Prometheus (with
// --web.enable-remote-write-receiver), Mimir, Thanos and others take.
//
// Send never blocks: it converts the batch and puts the series on a bounded
// queue, dropping the oldest samples when it is full. One goroutine drains
// it in requests of up to MaxSamplesPerSend samples, sent when that many are
// queued or the oldest has waited BatchDeadline. It retries what can succeed
// on retry (5xx, 429, connection errors, timeouts) with capped exponential
// backoff and drops what cannot (4xx). Every series is written in strictly
// increasing time: a sample at or before one already queued for its series
// is dropped and counted. A receiver refuses a whole request for one sample
// it will not store, out of order or too old (Prometheus 2 then stores
// none of it): a request refused with 400, 413 or 422 is split in halves by
// series and each half sent once, down to single series, so that only the
// refused series are dropped. Neither a refusal nor a half is retried.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/httpclient"
	"github.com/inferwatch/inferwatch/internal/httpretry"
	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/inferwatch/inferwatch/internal/redact"
)

// Protocol is how samples are sent.
type Protocol string

const (
	// VMImport posts JSON lines to VictoriaMetrics' /api/v1/import.
	VMImport Protocol = "vm_import"
	// RemoteWrite posts Prometheus remote-write 1.0 requests.
	RemoteWrite Protocol = "remote_write"
)

// Options configure a Writer. Zero fields take the defaults below.
type Options struct {
	// URL is where requests go, e.g. http://127.0.0.1:8428/api/v1/import or
	// http://127.0.0.1:9090/api/v1/write. A URL without a path gets the
	// protocol's default, /api/v1/import or /api/v1/write; one with a path
	// is used as it is (a VictoriaMetrics cluster:
	// http://vminsert:8480/insert/0/prometheus/api/v1/import). See
	// ValidateURL.
	URL string
	// Protocol is VMImport (the default) or RemoteWrite.
	Protocol Protocol
	// HTTPClient sends the requests. nil: one built from HTTPClientConfig.
	HTTPClient *http.Client
	// HTTPClientConfig holds basic auth, authorization, TLS, proxy and
	// headers, with its files relative to the directory SetDirectory was
	// given. nil: config.DefaultHTTPClientConfig. Set at most one of
	// HTTPClient and HTTPClientConfig.
	HTTPClientConfig *config.HTTPClientConfig
	// Timeout bounds each request. Default 30s.
	Timeout time.Duration

	// Rules selects whose results are written: each entry a rule's name (in
	// any group), group/rule or group/*, with the wildcards of path.Match.
	// Empty: every rule.
	Rules []string
	// SkipScores leaves Batch.Scores out; SkipForecasts, Batch.Forecasts.
	SkipScores, SkipForecasts bool
	// ForecastAt says where forecast samples lie: AtTarget or AtOrigin.
	// Default AtTarget for VMImport, AtOrigin for RemoteWrite.
	ForecastAt ForecastTime
	// Horizons, when set, are the only leads of each forecast written.
	Horizons []time.Duration

	// QueueCapacity is how many samples may wait, not counting the request
	// in flight; beyond it the oldest are dropped. Default 100000.
	QueueCapacity int
	// MaxSamplesPerSend is the most samples in one request. Default 2000,
	// at most QueueCapacity.
	MaxSamplesPerSend int
	// BatchDeadline is how long a sample waits for a request to fill before
	// it is sent in a smaller one. Default 5s.
	BatchDeadline time.Duration
	// BackoffMax caps the wait between retries, which starts at 100ms (or
	// BackoffMax if lower) and doubles, with jitter. A longer Retry-After
	// header is honoured up to it. Default 10s.
	BackoffMax time.Duration
	// FlushTimeout bounds how long Close keeps writing what is queued.
	// Default 10s.
	FlushTimeout time.Duration

	// Logger receives retries, refusals and drops. nil: discarded.
	Logger *slog.Logger
	// Metrics receives the self-metrics. nil: unregistered.
	Metrics *metrics.Set
}

// Defaults of Options.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultQueueCapacity     = 100_000
	DefaultMaxSamplesPerSend = 2000
	DefaultBatchDeadline     = 5 * time.Second
	DefaultBackoffMax        = 10 * time.Second
	DefaultFlushTimeout      = 10 * time.Second

	// maxRequestsPerBatch bounds the requests one batch may take while
	// refused requests are split to find the series refused.
	maxRequestsPerBatch = 64
)

// Reasons for dropping samples, the values of the reason label of
// inferwatch_writeback_samples_dropped_total.
const (
	// ReasonQueueFull: the queue was full and these were the oldest.
	ReasonQueueFull = "queue_full"
	// ReasonRejected: the store answered 4xx (other than 429) to the
	// request that held them alone or with others it could not be split
	// from, or the request cannot succeed as configured (a TLS certificate
	// that does not verify). A receiver that stores the valid samples of a
	// refused request (Prometheus 3) may hold some of them: an upper bound.
	ReasonRejected = "rejected"
	// ReasonDuplicate: a sample at the same time as one already queued
	// for its series (e.g. a forecast with the origin of the previous one).
	ReasonDuplicate = "duplicate"
	// ReasonOutOfOrder: a sample older than one already queued for its
	// series, which a remote-write receiver would refuse.
	ReasonOutOfOrder = "out_of_order"
	// ReasonInf: a value of ±Inf.
	ReasonInf = "inf"
	// ReasonInvalid: a series with an empty label name, or a name or value
	// that is not UTF-8.
	ReasonInvalid = "invalid"
	// ReasonShutdown: still queued when Close gave up, or sent after it.
	ReasonShutdown = "shutdown"
)

// Writer writes scores and forecasts back to a store. It is safe for
// concurrent use.
type Writer struct {
	o        Options
	log      *slog.Logger
	hc       *http.Client
	url      string // redacted endpoint, for logs and errors
	endpoint string
	conv     converter
	q        *queue

	mu    sync.Mutex // guards order
	order order

	ctx      context.Context // cancelled when Close gives up
	cancel   context.CancelFunc
	draining chan struct{} // closed by Close: the worker exits once empty
	wg       sync.WaitGroup

	set                           *metrics.Set
	queued, sent, errors, retries *metrics.Counter
	dropped                       map[string]*metrics.Counter // by reason
	latency                       *metrics.PrometheusHistogram
	fullNotice, refusedNotice     httpretry.Notice
	orderNotice, invalidNotice    httpretry.Notice

	closeOnce sync.Once
	left      int
	closeErr  error
}

// New checks o, fills its defaults and starts the goroutine that writes,
// which runs until Close.
func New(o Options) (*Writer, error) {
	if err := ValidateURL(o.URL); err != nil {
		return nil, err
	}
	var errs []error
	switch o.Protocol {
	case "":
		o.Protocol = VMImport
	case VMImport, RemoteWrite:
	default:
		errs = append(errs, fmt.Errorf("writeback protocol %q is not %s or %s", o.Protocol, VMImport, RemoteWrite))
	}
	switch o.ForecastAt {
	case "":
		o.ForecastAt = AtTarget
		if o.Protocol == RemoteWrite {
			o.ForecastAt = AtOrigin
		}
	case AtTarget, AtOrigin:
	default:
		errs = append(errs, fmt.Errorf("writeback forecast time %q is not %s or %s", o.ForecastAt, AtTarget, AtOrigin))
	}
	positive := func(name string, bad bool, v, def any) {
		if bad {
			errs = append(errs, fmt.Errorf("writeback %s is %v; want a positive value, or 0 for the default %v", name, v, def))
		}
	}
	positive("timeout", o.Timeout < 0, o.Timeout, DefaultTimeout)
	positive("queue capacity", o.QueueCapacity < 0, o.QueueCapacity, DefaultQueueCapacity)
	positive("max samples per send", o.MaxSamplesPerSend < 0, o.MaxSamplesPerSend, DefaultMaxSamplesPerSend)
	positive("batch deadline", o.BatchDeadline < 0, o.BatchDeadline, DefaultBatchDeadline)
	positive("backoff max", o.BackoffMax < 0, o.BackoffMax, DefaultBackoffMax)
	positive("flush timeout", o.FlushTimeout < 0, o.FlushTimeout, DefaultFlushTimeout)
	if o.HTTPClient != nil && o.HTTPClientConfig != nil {
		errs = append(errs, errors.New("writeback: both an HTTP client and an HTTP client config are given; set one"))
	}
	if o.SkipScores && o.SkipForecasts {
		errs = append(errs, errors.New("writeback: both scores and forecasts are skipped, so nothing would be written; enable one or remove the writeback"))
	}
	var horizons map[time.Duration]bool
	for _, h := range o.Horizons {
		if h <= 0 {
			errs = append(errs, fmt.Errorf("writeback horizon %v is not positive", h))
			continue
		}
		if horizons == nil {
			horizons = map[time.Duration]bool{}
		}
		horizons[h] = true
	}
	patterns, err := rulePatterns(o.Rules)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.Timeout = orDefault(o.Timeout, DefaultTimeout)
	o.QueueCapacity = orDefault(o.QueueCapacity, DefaultQueueCapacity)
	o.MaxSamplesPerSend = min(orDefault(o.MaxSamplesPerSend, DefaultMaxSamplesPerSend), o.QueueCapacity)
	o.BatchDeadline = orDefault(o.BatchDeadline, DefaultBatchDeadline)
	o.BackoffMax = orDefault(o.BackoffMax, DefaultBackoffMax)
	o.FlushTimeout = orDefault(o.FlushTimeout, DefaultFlushTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	hc, err := httpclient.New(o.HTTPClient, o.HTTPClientConfig, "inferwatch_writeback", "writeback")
	if err != nil {
		return nil, err
	}
	ep := endpoint(o.URL, o.Protocol)
	w := &Writer{
		o: o, log: o.Logger.With("writeback", redact.URL(ep)), hc: hc,
		url: redact.URL(ep), endpoint: ep,
		conv: converter{scores: !o.SkipScores, forecasts: !o.SkipForecasts, forecastAt: o.ForecastAt,
			horizons: horizons, rules: patterns},
		draining: make(chan struct{}),
		set:      o.Metrics,
	}
	ms := o.Metrics
	length := ms.GetOrCreateGauge("inferwatch_writeback_queue_length", nil)
	ms.GetOrCreateGauge("inferwatch_writeback_queue_capacity", nil).Set(float64(o.QueueCapacity))
	w.q = newQueue(o.QueueCapacity, func(n int) { length.Set(float64(n)) })
	w.queued = ms.GetOrCreateCounter("inferwatch_writeback_samples_queued_total")
	w.sent = ms.GetOrCreateCounter("inferwatch_writeback_samples_sent_total")
	w.errors = ms.GetOrCreateCounter("inferwatch_writeback_errors_total")
	w.retries = ms.GetOrCreateCounter("inferwatch_writeback_retries_total")
	w.latency = ms.GetOrCreatePrometheusHistogramExt("inferwatch_writeback_request_duration_seconds", metricname.RequestBuckets())
	w.dropped = map[string]*metrics.Counter{}
	for _, r := range []string{ReasonQueueFull, ReasonRejected, ReasonDuplicate, ReasonOutOfOrder, ReasonInf, ReasonInvalid, ReasonShutdown} {
		w.dropped[r] = ms.GetOrCreateCounter(metricname.Name("inferwatch_writeback_samples_dropped_total", "reason", r))
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.wg.Add(1)
	go w.run()
	w.log.Info("writing scores and forecasts back to the store", "protocol", o.Protocol,
		"scores", !o.SkipScores, "forecasts", !o.SkipForecasts, "forecast_at", o.ForecastAt,
		"queue_capacity", o.QueueCapacity, "max_samples_per_send", o.MaxSamplesPerSend)
	return w, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Send converts the scores and forecasts of b into series and queues them;
// it never waits for the network, and never fails: what cannot be written
// is counted in inferwatch_writeback_samples_dropped_total and logged (at
// most every 30s per reason). b is not kept: the caller may reuse it.
func (w *Writer) Send(_ context.Context, b alerting.Batch) error {
	ss, d := w.conv.convert(b)
	w.dropped[ReasonInf].Add(d.inf)
	if d.invalid > 0 {
		w.dropped[ReasonInvalid].Add(d.invalid)
		if k := w.invalidNotice.Add(d.invalid, time.Now()); k > 0 {
			w.log.Error("dropping samples of series whose labels no store would take (an empty label name, or a name or value that is not UTF-8)",
				"group", b.Group, "samples", k)
		}
	}
	if len(ss) == 0 {
		return nil
	}
	now := time.Now()
	dup, ooo, n := 0, 0, 0
	// Admitting and queueing under one lock keeps each series in time order
	// in the queue when evaluations Send concurrently.
	w.mu.Lock()
	for _, s := range ss {
		d, o := w.order.admit(s, now)
		dup, ooo = dup+d, ooo+o
		n += len(s.t)
		s.at = now
	}
	dropped, closed := 0, false
	if n > 0 {
		dropped, closed = w.q.pushBack(ss)
	}
	w.mu.Unlock()
	w.dropped[ReasonDuplicate].Add(dup)
	w.dropped[ReasonOutOfOrder].Add(ooo)
	if ooo > 0 {
		if k := w.orderNotice.Add(ooo, now); k > 0 {
			w.log.Warn("dropping samples older than ones already written for their series; a store taking remote write refuses them",
				"group", b.Group, "samples", k)
		}
	}
	switch {
	case n == 0:
	case closed:
		w.dropped[ReasonShutdown].Add(n)
		w.log.Warn("samples sent after Close; dropped", "group", b.Group, "samples", n)
	default:
		w.queued.Add(n)
		if dropped > 0 {
			w.dropFull(dropped)
		}
	}
	return nil
}

// dropFull counts samples dropped from a full queue and logs it, at most
// every httpretry.NoticeEvery.
func (w *Writer) dropFull(k int) {
	w.dropped[ReasonQueueFull].Add(k)
	if k = w.fullNotice.Add(k, time.Now()); k > 0 {
		w.log.Warn("writeback queue full; dropped the oldest samples: the store is unreachable or slow, or samples come faster than it takes them",
			"dropped", k, "queue_capacity", w.o.QueueCapacity)
	}
}

// Close stops taking samples and keeps writing what is queued until the
// queue is empty, ctx is done or FlushTimeout has passed, whichever is
// first; then it abandons the request in flight. It returns how many
// samples were left unwritten (counted with reason shutdown) and, when some
// were, an error saying why. Later calls return the same.
func (w *Writer) Close(ctx context.Context) (left int, err error) {
	w.closeOnce.Do(func() {
		close(w.draining)
		why := httpretry.Flush(ctx, &w.wg, w.o.FlushTimeout, w.cancel)
		w.cancel()
		w.left = w.q.drain()
		if w.left > 0 {
			w.dropped[ReasonShutdown].Add(w.left)
			if why == "" {
				why = "they arrived after the queue was emptied"
			}
			w.closeErr = fmt.Errorf("writeback to %s: %d samples not written at shutdown: %s; the errors logged before say why they were not written earlier",
				w.url, w.left, why)
		}
		w.log.Info("stopped writing back", "unwritten", w.left)
	})
	return w.left, w.closeErr
}

// describe names a series in logs: its labels, cut at 200 bytes.
func describe(ss []*series) string {
	if len(ss) == 0 {
		return ""
	}
	s := ss[0].key
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if len(ss) > 1 {
		s += fmt.Sprintf(" and %d more", len(ss)-1)
	}
	return s
}
