// Package alertmanager forwards alerts to one or more Prometheus
// Alertmanagers through their API v2 (POST /api/v2/alerts).
//
// Send never blocks: it encodes the alerts and puts them on a bounded queue
// per Alertmanager, dropping the oldest when the queue is full. One
// goroutine per Alertmanager drains its queue in batches, retrying what can
// succeed on retry (5xx, 429, connection errors, timeouts) with capped
// exponential backoff and dropping what cannot (any other 4xx), so an
// Alertmanager that is down or slow delays nobody but itself.
package alertmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/internal/httpclient"
	"github.com/inferwatch/inferwatch/internal/httpretry"
	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/prometheus/common/config"
)

// Alert is one alert as Alertmanager's API v2 takes it (a postable alert).
// An alert whose EndsAt is in the past is resolved; a zero EndsAt leaves the
// Alertmanager to resolve it after its resolve_timeout unless it is sent
// again, so firing alerts are re-sent on every evaluation, as Prometheus
// does. A zero StartsAt means the time the Alertmanager receives it.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Validate reports what would make an Alertmanager refuse a: no label with
// a value (empty values count as absent), an empty label name, names or
// values that are not UTF-8, an end before the start, or a time JSON cannot
// hold. Alertmanagers older than 0.28 also refuse label names outside
// [a-zA-Z_][a-zA-Z0-9_]*; that is left to them.
func (a Alert) Validate() error {
	nonEmpty := 0
	for k, v := range a.Labels {
		switch {
		case k == "":
			return fmt.Errorf("alert has a label with an empty name (value %q)", v)
		case !utf8.ValidString(k):
			return fmt.Errorf("alert label name %q is not valid UTF-8", k)
		case !utf8.ValidString(v):
			return fmt.Errorf("alert label %s has a value that is not valid UTF-8: %q", k, v)
		}
		if v != "" {
			nonEmpty++
		}
	}
	if nonEmpty == 0 {
		return errors.New("alert has no label with a value; Alertmanager needs at least one, such as alertname")
	}
	for k, v := range a.Annotations {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("alert %s: annotation %q is empty or not valid UTF-8", describe(a.Labels), k)
		}
	}
	for _, t := range []time.Time{a.StartsAt, a.EndsAt} {
		if !t.IsZero() && (t.Year() < 0 || t.Year() > 9999) {
			return fmt.Errorf("alert %s: time %s is outside the years 0 to 9999", describe(a.Labels), t)
		}
	}
	if !a.StartsAt.IsZero() && !a.EndsAt.IsZero() && a.EndsAt.Before(a.StartsAt) {
		return fmt.Errorf("alert %s ends at %s, before it starts at %s",
			describe(a.Labels), a.EndsAt.Format(time.RFC3339Nano), a.StartsAt.Format(time.RFC3339Nano))
	}
	return nil
}

// describe names an alert in messages by its alertname, else by its labels.
func describe(ls map[string]string) string {
	if n := ls["alertname"]; n != "" {
		return fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("%v", ls)
}

// Options configure a Notifier. Zero fields take the defaults below.
type Options struct {
	// URLs are the base URLs of the Alertmanagers, each e.g.
	// http://127.0.0.1:9093 or https://host/prefix; alerts go to every one
	// of them (Alertmanagers in a cluster deduplicate notifications). See
	// ValidateURLs.
	URLs []string
	// HTTPClient sends the requests. nil: one built from HTTPClientConfig.
	HTTPClient *http.Client
	// HTTPClientConfig holds basic auth, authorization, TLS, proxy and
	// headers, with its files relative to the directory SetDirectory was
	// given. nil: config.DefaultHTTPClientConfig. Set at most one of
	// HTTPClient and HTTPClientConfig.
	HTTPClientConfig *config.HTTPClientConfig
	// Timeout bounds each POST. Default 10s.
	Timeout time.Duration
	// QueueCapacity is how many alerts wait for each Alertmanager, not
	// counting the batch in flight; beyond it the oldest are dropped.
	// Default 10000.
	QueueCapacity int
	// MaxBatch is the most alerts sent in one request. Default 64, at most
	// QueueCapacity.
	MaxBatch int
	// BackoffMax caps the wait between retries of a batch, which starts at
	// 100ms (or BackoffMax if lower) and doubles, with jitter. A longer
	// Retry-After header is honoured up to it. Default 10s.
	BackoffMax time.Duration
	// FlushTimeout bounds how long Close keeps delivering what is queued.
	// Default 10s.
	FlushTimeout time.Duration
	// Logger receives retries, rejections and drops. nil: discarded.
	Logger *slog.Logger
	// Metrics receives the self-metrics. nil: unregistered.
	Metrics *metrics.Set
}

// Defaults of Options.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultQueueCapacity = 10000
	DefaultMaxBatch      = 64
	DefaultBackoffMax    = 10 * time.Second
	DefaultFlushTimeout  = 10 * time.Second
)

// Reasons for dropping alerts, the values of the reason label of
// inferwatch_alertmanager_alerts_dropped_total.
const (
	// ReasonQueueFull: the queue was full and these were the oldest.
	ReasonQueueFull = "queue_full"
	// ReasonRejected: the Alertmanager answered 4xx (other than 429) to
	// their batch, or the request cannot succeed as configured (a TLS
	// certificate that does not verify). Alertmanager keeps the valid
	// alerts of a batch it answers 400 to, so this counts an upper bound.
	ReasonRejected = "rejected"
	// ReasonInvalid: Send was given an alert that fails Validate.
	ReasonInvalid = "invalid"
	// ReasonShutdown: still queued when Close gave up, or sent after it.
	ReasonShutdown = "shutdown"
)

// Notifier forwards alerts to Alertmanagers. It is safe for concurrent use.
type Notifier struct {
	o       Options
	log     *slog.Logger
	hc      *http.Client
	targets []*target

	ctx      context.Context // cancelled when Close gives up
	cancel   context.CancelFunc
	draining chan struct{} // closed by Close: workers exit once empty
	wg       sync.WaitGroup

	invalidNotice httpretry.Notice

	closeOnce sync.Once
	left      int
	closeErr  error
}

// target is one Alertmanager: its queue, worker state and metrics.
type target struct {
	url      string // redacted base URL, for logs and the metric label
	endpoint string // <base>/api/v2/alerts
	q        *queue
	log      *slog.Logger

	sent, errors                          *metrics.Counter
	queueFull, rejected, invalid, shutdwn *metrics.Counter
	latency                               *metrics.PrometheusHistogram

	fullNotice httpretry.Notice
}

// New checks o, fills its defaults and starts one goroutine per
// Alertmanager, which runs until Close.
func New(o Options) (*Notifier, error) {
	if err := ValidateURLs(o.URLs); err != nil {
		return nil, err
	}
	switch {
	case o.Timeout < 0:
		return nil, fmt.Errorf("alertmanager timeout is %v; want a positive duration, or 0 for the default %v", o.Timeout, DefaultTimeout)
	case o.QueueCapacity < 0:
		return nil, fmt.Errorf("alertmanager queue capacity is %d; want a positive number, or 0 for the default %d", o.QueueCapacity, DefaultQueueCapacity)
	case o.MaxBatch < 0:
		return nil, fmt.Errorf("alertmanager max batch is %d; want a positive number, or 0 for the default %d", o.MaxBatch, DefaultMaxBatch)
	case o.BackoffMax < 0:
		return nil, fmt.Errorf("alertmanager backoff max is %v; want a positive duration, or 0 for the default %v", o.BackoffMax, DefaultBackoffMax)
	case o.FlushTimeout < 0:
		return nil, fmt.Errorf("alertmanager flush timeout is %v; want a positive duration, or 0 for the default %v", o.FlushTimeout, DefaultFlushTimeout)
	case o.HTTPClient != nil && o.HTTPClientConfig != nil:
		return nil, errors.New("alertmanager: both an HTTP client and an HTTP client config are given; set one")
	}
	o.Timeout = orDefault(o.Timeout, DefaultTimeout)
	o.QueueCapacity = orDefault(o.QueueCapacity, DefaultQueueCapacity)
	o.MaxBatch = min(orDefault(o.MaxBatch, DefaultMaxBatch), o.QueueCapacity)
	o.BackoffMax = orDefault(o.BackoffMax, DefaultBackoffMax)
	o.FlushTimeout = orDefault(o.FlushTimeout, DefaultFlushTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	hc, err := httpclient.New(o.HTTPClient, o.HTTPClientConfig, "inferwatch_alertmanager", "alertmanager")
	if err != nil {
		return nil, err
	}
	n := &Notifier{o: o, log: o.Logger, hc: hc, draining: make(chan struct{})}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, raw := range o.URLs {
		n.targets = append(n.targets, n.newTarget(raw))
	}
	for _, t := range n.targets {
		n.wg.Add(1)
		go n.run(t)
	}
	n.log.Info("forwarding alerts to Alertmanager", "alertmanagers", n.urls(), "queue_capacity", o.QueueCapacity, "max_batch", o.MaxBatch)
	return n, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (n *Notifier) newTarget(raw string) *target {
	shown := redactString(raw)
	ms := n.o.Metrics
	label := fmt.Sprintf("alertmanager=%q", shown)
	dropped := func(reason string) *metrics.Counter {
		return ms.GetOrCreateCounter(fmt.Sprintf(`inferwatch_alertmanager_alerts_dropped_total{%s,reason=%q}`, label, reason))
	}
	length := ms.GetOrCreateGauge(`inferwatch_alertmanager_queue_length{`+label+`}`, nil)
	ms.GetOrCreateGauge(`inferwatch_alertmanager_queue_capacity{`+label+`}`, nil).Set(float64(n.o.QueueCapacity))
	return &target{
		url:       shown,
		endpoint:  endpoint(raw),
		q:         newQueue(n.o.QueueCapacity, func(l int) { length.Set(float64(l)) }),
		log:       n.log.With("alertmanager", shown),
		sent:      ms.GetOrCreateCounter(`inferwatch_alertmanager_alerts_sent_total{` + label + `}`),
		errors:    ms.GetOrCreateCounter(`inferwatch_alertmanager_errors_total{` + label + `}`),
		queueFull: dropped(ReasonQueueFull),
		rejected:  dropped(ReasonRejected),
		invalid:   dropped(ReasonInvalid),
		shutdwn:   dropped(ReasonShutdown),
		latency:   ms.GetOrCreatePrometheusHistogramExt(`inferwatch_alertmanager_request_duration_seconds{`+label+`}`, metricname.RequestBuckets()),
	}
}

func (n *Notifier) urls() []string {
	out := make([]string, len(n.targets))
	for i, t := range n.targets {
		out[i] = t.url
	}
	return out
}

// Send queues alerts for every Alertmanager and returns at once; it never
// waits for the network. Alerts that fail Validate are dropped, counted and
// logged (at most every 30s). The alerts are encoded before Send returns, so
// the caller may reuse their maps.
func (n *Notifier) Send(alerts ...Alert) {
	if len(alerts) == 0 {
		return
	}
	items := make([][]byte, 0, len(alerts))
	var bad error
	badCount := 0
	for _, a := range alerts {
		err := a.Validate()
		var b []byte
		if err == nil {
			b, err = json.Marshal(a)
		}
		if err != nil {
			badCount++
			bad = err
			continue
		}
		items = append(items, b)
	}
	if badCount > 0 {
		for _, t := range n.targets {
			t.invalid.Add(badCount)
		}
		if k := n.invalidNotice.Add(badCount, time.Now()); k > 0 {
			n.log.Error("dropping alerts that no Alertmanager would take", "alerts", k, "err", bad)
		}
	}
	if len(items) == 0 {
		return
	}
	for _, t := range n.targets {
		dropped, closed := t.q.pushBack(items)
		switch {
		case closed:
			t.shutdwn.Add(len(items))
			t.log.Warn("alerts sent after Close; dropped", "alerts", len(items))
		case dropped > 0:
			t.dropFull(dropped, n.o.QueueCapacity)
		}
	}
}

// dropFull counts alerts dropped from a full queue and logs it, at most
// every httpretry.NoticeEvery.
func (t *target) dropFull(k, capacity int) {
	t.queueFull.Add(k)
	if k = t.fullNotice.Add(k, time.Now()); k > 0 {
		t.log.Warn("Alertmanager queue full; dropped the oldest alerts: the Alertmanager is unreachable or slow, or alerts come faster than it takes them",
			"dropped", k, "queue_capacity", capacity)
	}
}

// Close stops taking alerts and keeps delivering what is queued until every
// queue is empty, ctx is done or FlushTimeout has passed, whichever is
// first; then it abandons requests in flight. It returns how many alerts
// were left undelivered (counted with reason shutdown) and, when some were,
// an error naming the Alertmanagers that did not get them. Later calls
// return the same.
func (n *Notifier) Close(ctx context.Context) (left int, err error) {
	n.closeOnce.Do(func() {
		close(n.draining)
		why := httpretry.Flush(ctx, &n.wg, n.o.FlushTimeout, n.cancel)
		n.cancel()
		var missed []string
		for _, t := range n.targets {
			k := t.q.drain()
			if k == 0 {
				continue
			}
			t.shutdwn.Add(k)
			n.left += k
			missed = append(missed, fmt.Sprintf("%d to %s", k, t.url))
		}
		if n.left > 0 {
			if why == "" {
				why = "they arrived after the queues were emptied"
			}
			n.closeErr = fmt.Errorf("alertmanager: %d alerts not delivered at shutdown (%s): %s; the errors logged before say why they were not delivered earlier",
				n.left, strings.Join(missed, ", "), why)
		}
		n.log.Info("stopped forwarding alerts to Alertmanager", "undelivered", n.left)
	})
	return n.left, n.closeErr
}
