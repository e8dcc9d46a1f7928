// Package natsjs is inferwatch's NATS JetStream output: the connection
// (retried at start, reconnecting forever after), the stream over
// <prefix>.>, publishing with JetStream's acknowledgement and message-id
// deduplication, and the embedded server the daemon starts when no NATS is
// configured.
package natsjs

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/httpretry"
	"github.com/inferwatch/inferwatch/internal/metricname"
	"github.com/inferwatch/inferwatch/internal/redact"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configure the JetStream output.
type Options struct {
	// URL of the NATS server, e.g. nats://127.0.0.1:4222. Required.
	URL string
	// Prefix of every subject, default "inferwatch"; findings go to
	// <prefix>.findings.<kind>.
	Prefix string
	// Stream captures <prefix>.>; default: the prefix upper-cased with '.'
	// and '-' turned into '_'.
	Stream string
	// DuplicateWindow is how long JetStream remembers message IDs to drop
	// re-published findings, default 24h.
	DuplicateWindow time.Duration
	// Name is the NATS connection name, default "inferwatch".
	Name string
	// ConnectBackoffMax caps the wait between connection attempts at start,
	// between publish retries, and between reconnects; default 10s.
	ConnectBackoffMax time.Duration
	// AckTimeout bounds each publish attempt, default 5s.
	AckTimeout time.Duration
	// MaxPublishRetries is how many times a publish is retried after an ack
	// timeout or a connection error, default 5.
	MaxPublishRetries int
	// Auth is how the client proves who it is; TLS how it checks the
	// server (nil: plain, or the system's roots for tls:// URLs).
	Auth Auth
	TLS  *tls.Config
	// MaxAge, MaxBytes and Replicas bound a stream inferwatch creates
	// (defaults DefaultStreamMaxAge, DefaultStreamMaxBytes, 1); on a stream
	// that exists they are applied only when set.
	MaxAge   time.Duration
	MaxBytes int64
	Replicas int
	// Logger, nil discards.
	Logger *slog.Logger
	// Metrics receives the output's counters; nil keeps them unregistered.
	Metrics *metrics.Set
}

// Auth is one way of authenticating to NATS; at most one is used, in
// this order: a .creds file (user JWT and NKey seed), an NKey seed file,
// a token, a user and password.
type Auth struct {
	CredsFile, NKeySeedFile string
	Token                   string
	User, Password          string
}

// Options are the client options of a, for a connection made apart from
// Connect (a reader of the stream); none when a is empty.
func (a Auth) Options() ([]nats.Option, error) {
	switch {
	case a.CredsFile != "":
		return []nats.Option{nats.UserCredentials(a.CredsFile)}, nil
	case a.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("NATS nkey seed file %s: %w", a.NKeySeedFile, err)
		}
		return []nats.Option{opt}, nil
	case a.Token != "":
		return []nats.Option{nats.Token(a.Token)}, nil
	case a.User != "":
		return []nats.Option{nats.UserInfo(a.User, a.Password)}, nil
	}
	return nil, nil
}

// Defaults of Options.
const (
	DefaultStreamMaxAge      = 14 * 24 * time.Hour
	DefaultStreamMaxBytes    = 1 << 30
	DefaultDuplicateWindow   = 24 * time.Hour
	DefaultConnectionName    = "inferwatch"
	DefaultConnectBackoffMax = 10 * time.Second
	DefaultAckTimeout        = 5 * time.Second
	DefaultMaxPublishRetries = 5

	// backoffBase is the first wait of every backoff sequence.
	backoffBase = 100 * time.Millisecond
)

// JetStream publishes CloudEvents on NATS JetStream, at least once, with
// JetStream's message-ID deduplication making re-publishing within the
// duplicate window harmless. It implements alerting.Output.
type JetStream struct {
	o      Options
	url    string // redacted, for logs and errors
	nc     *nats.Conn
	js     jetstream.Publisher
	jsm    jetstream.KeyValueManager
	closed chan struct{}

	// by event class (finding, forecast, scale, other)
	published, duplicates, retries, failures map[string]*metrics.Counter

	connRetry *metrics.Counter
	disconns  *metrics.Counter
	reconns   *metrics.Counter
}

// StreamName is the default stream name for a subject prefix: the prefix
// upper-cased with '.' and '-' turned into '_'.
func StreamName(prefix string) string {
	return strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(prefix))
}

// fill sets defaults and checks o.
func (o *Options) fill() error {
	if o.URL == "" {
		return errors.New("NATS output: url is empty; set it, e.g. nats://127.0.0.1:4222")
	}
	if o.Prefix == "" {
		o.Prefix = alerting.DefaultSubjectPrefix
	}
	if err := alerting.ValidSubject(o.Prefix); err != nil {
		return fmt.Errorf("NATS output: subject prefix: %w", err)
	}
	if o.Stream == "" {
		o.Stream = StreamName(o.Prefix)
	}
	if strings.ContainsAny(o.Stream, ".*>/\\ \t\r\n") {
		return fmt.Errorf("NATS output: stream name %q holds '.', '*', '>', a path separator or white space", o.Stream)
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.Name == "" {
		o.Name = DefaultConnectionName
	}
	if o.ConnectBackoffMax <= 0 {
		o.ConnectBackoffMax = DefaultConnectBackoffMax
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.MaxPublishRetries < 0 {
		return fmt.Errorf("NATS output: max publish retries is %d, want 0 or more", o.MaxPublishRetries)
	}
	o.MaxPublishRetries = cmp.Or(o.MaxPublishRetries, DefaultMaxPublishRetries)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	return nil
}

// Connect connects to NATS, retrying with capped exponential backoff until
// ctx is done, and creates or updates the stream over <prefix>.>. Once
// connected, the connection reconnects forever on its own.
func Connect(ctx context.Context, o Options) (*JetStream, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	j := &JetStream{
		o:          o,
		url:        redactURL(o.URL),
		closed:     make(chan struct{}),
		published:  map[string]*metrics.Counter{},
		duplicates: map[string]*metrics.Counter{},
		retries:    map[string]*metrics.Counter{},
		failures:   map[string]*metrics.Counter{},
		connRetry:  o.Metrics.GetOrCreateCounter("inferwatch_nats_connect_retries_total"),
		disconns:   o.Metrics.GetOrCreateCounter("inferwatch_nats_disconnects_total"),
		reconns:    o.Metrics.GetOrCreateCounter("inferwatch_nats_reconnects_total"),
	}
	for _, c := range alerting.EventClasses {
		j.published[c] = o.Metrics.GetOrCreateCounter(metricname.Name("inferwatch_events_published_total", "kind", c))
		j.duplicates[c] = o.Metrics.GetOrCreateCounter(metricname.Name("inferwatch_events_duplicate_total", "kind", c))
		j.retries[c] = o.Metrics.GetOrCreateCounter(metricname.Name("inferwatch_publish_retries_total", "kind", c))
		j.failures[c] = o.Metrics.GetOrCreateCounter(metricname.Name("inferwatch_publish_failures_total", "kind", c))
	}
	log := o.Logger.With("url", j.url)
	natsOpts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(min(2*time.Second, o.ConnectBackoffMax)),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsDraining() || nc.IsClosed() {
				return // Close asked for it.
			}
			j.disconns.Inc()
			log.Warn("NATS disconnected; reconnecting until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			j.reconns.Inc()
			log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			log.Info("NATS connection closed")
			close(j.closed)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS asynchronous error", "subject", subject, "err", err)
		}),
	}
	auth, err := o.Auth.Options()
	if err != nil {
		return nil, err
	}
	natsOpts = append(natsOpts, auth...)
	if o.TLS != nil {
		natsOpts = append(natsOpts, nats.Secure(o.TLS))
	}
	for attempt := 0; ; attempt++ {
		nc, err := nats.Connect(o.URL, natsOpts...)
		if err == nil {
			j.nc = nc
			break
		}
		wait := backoffDelay(attempt, backoffBase, o.ConnectBackoffMax)
		log.Warn("NATS unreachable at start; retrying with backoff", "attempt", attempt+1, "wait", wait, "err", err)
		if cerr := httpretry.Sleep(ctx, wait); cerr != nil {
			return nil, fmt.Errorf("connecting to NATS at %s: gave up after %d attempts: %w (last error: %v)", j.url, attempt+1, cerr, err)
		}
		j.connRetry.Inc()
	}
	js, err := jetstream.New(j.nc)
	if err != nil {
		j.nc.Close()
		return nil, fmt.Errorf("opening JetStream on %s: %w", j.url, err)
	}
	j.js, j.jsm = js, js
	// On a cluster a request made while the stream's or the meta group's
	// leader changes (several replicas creating the stream at once, a
	// server restarting) may never be answered: each attempt is bounded
	// and tried again.
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, streamAttempt)
		err := ensureStream(actx, js, o)
		cancel()
		if err == nil {
			break
		}
		// A configuration the server refused, or ours, stays refused.
		var (
			cerr *streamConfigError
			aerr *jetstream.APIError
		)
		wait := backoffDelay(attempt, backoffBase, o.ConnectBackoffMax)
		if errors.As(err, &cerr) || errors.As(err, &aerr) || httpretry.Sleep(ctx, wait) != nil {
			j.nc.Close()
			return nil, fmt.Errorf("NATS at %s: %w", j.url, err)
		}
		log.Warn("creating or updating the stream failed; retrying with backoff", "stream", o.Stream, "attempt", attempt+1, "wait", wait, "err", err)
	}
	log.Info("publishing on NATS JetStream", "stream", o.Stream,
		"subjects", o.Prefix+".>", "duplicate_window", o.DuplicateWindow)
	return j, nil
}

// streamAttempt bounds one attempt at creating or updating the stream.
const streamAttempt = 5 * time.Second

// streamConfigError is a stream configuration that retrying cannot fix.
type streamConfigError struct{ msg string }

func (e *streamConfigError) Error() string { return e.msg }

// streamManager is the part of JetStream that ensureStream needs.
type streamManager interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// ensureStream creates the stream over <prefix>.> with file storage, or
// updates an existing one to capture <prefix>.> with the duplicate window,
// keeping whatever else its operators configured (limits, replicas,
// storage, which cannot change).
func ensureStream(ctx context.Context, sm streamManager, o Options) error {
	subject := o.Prefix + ".>"
	cfg := jetstream.StreamConfig{
		Name:        o.Stream,
		Description: "inferwatch findings, alerts, forecasts and signals",
		Subjects:    []string{subject},
		Storage:     jetstream.FileStorage,
		Duplicates:  o.DuplicateWindow,
		MaxAge:      cmp.Or(o.MaxAge, DefaultStreamMaxAge),
		MaxBytes:    cmp.Or(o.MaxBytes, DefaultStreamMaxBytes),
		Replicas:    cmp.Or(o.Replicas, 1),
		Discard:     jetstream.DiscardOld,
	}
	s, err := sm.Stream(ctx, o.Stream)
	switch {
	case err == nil:
		cfg = s.CachedInfo().Config
		cfg.Duplicates = o.DuplicateWindow
		if o.MaxAge > 0 {
			cfg.MaxAge = o.MaxAge
		}
		if o.MaxBytes > 0 {
			cfg.MaxBytes = o.MaxBytes
		}
		if o.Replicas > 0 {
			cfg.Replicas = o.Replicas
		}
		has := false
		for _, s := range cfg.Subjects {
			has = has || s == subject
		}
		if !has {
			cfg.Subjects = append(cfg.Subjects, subject)
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("looking up stream %s: %w", o.Stream, err)
	}
	if cfg.MaxAge > 0 && cfg.Duplicates > cfg.MaxAge {
		return &streamConfigError{fmt.Sprintf("stream %s keeps messages for %s, less than the duplicate window %s: lower the duplicate window or raise the stream's max age", o.Stream, cfg.MaxAge, cfg.Duplicates)}
	}
	if _, err := sm.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("creating or updating stream %s over %s with duplicate window %s: %w", o.Stream, subject, o.DuplicateWindow, err)
	}
	return nil
}

// PublishEvent publishes one CloudEvent on subject, which must lie under the
// prefix, in structured mode (Content-Type application/cloudevents+json)
// with ev.ID as Nats-Msg-Id, and waits for JetStream's ack: an ack timeout,
// no responders or a connection error is retried with capped backoff up to
// MaxPublishRetries times; an event JetStream reports as a duplicate counts
// as published. The error wraps alerting.ErrRejected when retrying cannot
// help.
func (j *JetStream) PublishEvent(ctx context.Context, subject string, ev alerting.Event) error {
	class := alerting.EventClass(ev.Type)
	if err := alerting.ValidSubject(subject); err != nil {
		j.failures[class].Inc()
		return fmt.Errorf("publishing event %q: %w: %w", ev.ID, alerting.ErrRejected, err)
	}
	if !strings.HasPrefix(subject, j.o.Prefix+".") {
		j.failures[class].Inc()
		return fmt.Errorf("publishing event %q: %w: subject %q is outside the stream's subjects %s.>", ev.ID, alerting.ErrRejected, subject, j.o.Prefix)
	}
	if err := ev.ValidateAttributes(); err != nil { // Data is JSON by construction (see alerting.Event)
		j.failures[class].Inc()
		return fmt.Errorf("publishing event: %w: %w", alerting.ErrRejected, err)
	}
	body, err := ev.Encode()
	if err != nil {
		j.failures[class].Inc()
		return fmt.Errorf("encoding event %q: %w: %w", ev.ID, alerting.ErrRejected, err)
	}
	var lastErr error
	for attempt := 0; attempt <= j.o.MaxPublishRetries; attempt++ {
		if attempt > 0 {
			j.retries[class].Inc()
			wait := backoffDelay(attempt-1, backoffBase, j.o.ConnectBackoffMax)
			j.o.Logger.Warn("NATS publish failed; retrying", "url", j.url, "subject", subject,
				"id", ev.ID, "attempt", attempt, "wait", wait, "err", lastErr)
			if err := httpretry.Sleep(ctx, wait); err != nil {
				break
			}
		}
		msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
		msg.Header.Set("Content-Type", alerting.CloudEventsContentType)
		actx, cancel := context.WithTimeout(ctx, j.o.AckTimeout)
		// Retries are ours, with backoff: no inner retry on no responders.
		ack, err := j.js.PublishMsg(actx, msg, jetstream.WithMsgID(ev.ID), jetstream.WithRetryAttempts(0))
		cancel()
		if err == nil {
			j.published[class].Inc()
			if ack.Duplicate {
				j.duplicates[class].Inc()
			}
			return nil
		}
		if ctx.Err() != nil {
			lastErr = err
			break
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no ack within %s: %w", j.o.AckTimeout, err)
		}
		lastErr = err
		if !retriable(err) {
			j.failures[class].Inc()
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.Code >= 400 && apiErr.Code < 500 {
				return fmt.Errorf("stream %s refused event %q on %s: %w: %w", j.o.Stream, ev.ID, subject, alerting.ErrRejected, err)
			}
			return fmt.Errorf("publishing event %q on %s to %s: %w", ev.ID, subject, j.url, err)
		}
	}
	j.failures[class].Inc()
	if ctx.Err() != nil {
		return fmt.Errorf("publishing event %q on %s to %s: %w (last error: %v)", ev.ID, subject, j.url, ctx.Err(), lastErr)
	}
	return fmt.Errorf("publishing event %q on %s to %s: no ack after %d attempts: %w", ev.ID, subject, j.url, j.o.MaxPublishRetries+1, lastErr)
}

// Close drains the connection: pending publishes are flushed, then it is
// closed. It waits at most the connection's drain timeout.
func (j *JetStream) Close() error {
	if j.nc.IsClosed() {
		return nil
	}
	if !j.nc.IsConnected() {
		// Nothing can be flushed to a server that is away: do not wait
		// for it.
		j.nc.Close()
		return nil
	}
	if err := j.nc.Drain(); err != nil {
		j.nc.Close()
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil
		}
		return fmt.Errorf("draining NATS connection to %s: %w", j.url, err)
	}
	t := time.NewTimer(j.nc.Opts.DrainTimeout + time.Second)
	defer t.Stop()
	select {
	case <-j.closed:
		return nil
	case <-t.C:
		j.nc.Close()
		return fmt.Errorf("draining NATS connection to %s: not closed within %s", j.url, j.nc.Opts.DrainTimeout)
	}
}

// retriable reports whether a publish that failed with err can succeed if
// tried again: ack timeouts, no responders (the stream is being
// restarted or elected), connection trouble and server-side 5xx errors.
func retriable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code >= 500
	}
	switch {
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, jetstream.ErrInvalidOption):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrStaleConnection), errors.Is(err, jetstream.ErrInvalidJSAck),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// backoffDelay is the wait before retry attempt+1: base doubled attempt
// times, capped at max.
func backoffDelay(attempt int, base, max time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	if base >= max {
		return max
	}
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// redactURL hides passwords and tokens in comma-separated NATS URLs.
func redactURL(s string) string { return redact.URL(s) }

// Ready says whether the connection is up: nil when connected, else what
// it is doing.
func (j *JetStream) Ready() error {
	switch {
	case j.nc.IsConnected():
		return nil
	case j.nc.IsReconnecting():
		return fmt.Errorf("NATS at %s: reconnecting", j.url)
	}
	return fmt.Errorf("NATS at %s: %s", j.url, j.nc.Status())
}
