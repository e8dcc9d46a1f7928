package alerting

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStreamOptions configure the JetStream output.
type JetStreamOptions struct {
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
	// Source is the CloudEvents source, default "/inferwatch".
	Source string
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
	// Logger, nil discards.
	Logger *slog.Logger
	// Metrics receives the output's counters; nil keeps them unregistered.
	Metrics *metrics.Set
}

// Defaults of JetStreamOptions.
const (
	DefaultSubjectPrefix     = "inferwatch"
	DefaultDuplicateWindow   = 24 * time.Hour
	DefaultConnectionName    = "inferwatch"
	DefaultConnectBackoffMax = 10 * time.Second
	DefaultAckTimeout        = 5 * time.Second
	DefaultMaxPublishRetries = 5

	// backoffBase is the first wait of every backoff sequence.
	backoffBase = 100 * time.Millisecond
)

// ErrRejected marks a publish that can never succeed as is: a finding whose
// kind is no subject token, an event that fails validation, or a message the
// stream refuses with a client error. Retrying it is pointless; the caller
// should log it, count it and move past it.
var ErrRejected = errors.New("rejected")

// JetStream publishes findings and other events as CloudEvents on NATS
// JetStream, at least once, with JetStream's message-ID deduplication making
// re-publishing within the duplicate window harmless.
type JetStream struct {
	o      JetStreamOptions
	url    string // redacted, for logs and errors
	nc     *nats.Conn
	js     jetstream.Publisher
	closed chan struct{}

	published  *metrics.Counter
	duplicates *metrics.Counter
	retries    *metrics.Counter
	failures   *metrics.Counter
	connRetry  *metrics.Counter
	disconns   *metrics.Counter
	reconns    *metrics.Counter
}

// fill sets defaults and checks o.
func (o *JetStreamOptions) fill() error {
	if o.URL == "" {
		return errors.New("NATS output: url is empty; set it, e.g. nats://127.0.0.1:4222")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultSubjectPrefix
	}
	if err := validSubject(o.Prefix); err != nil {
		return fmt.Errorf("NATS output: subject prefix: %w", err)
	}
	if o.Stream == "" {
		o.Stream = strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(o.Prefix))
	}
	if strings.ContainsAny(o.Stream, ".*>/\\ \t\r\n") {
		return fmt.Errorf("NATS output: stream name %q holds '.', '*', '>', a path separator or white space", o.Stream)
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.Source == "" {
		o.Source = DefaultEventSource
	}
	if _, err := url.Parse(o.Source); err != nil {
		return fmt.Errorf("NATS output: cloudevents source %q is not a URI-reference: %w", o.Source, err)
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

// ConnectJetStream connects to NATS, retrying with capped exponential
// backoff until ctx is done, and creates or updates the stream over
// <prefix>.>. Once connected, the connection reconnects forever on its own.
func ConnectJetStream(ctx context.Context, o JetStreamOptions) (*JetStream, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	j := &JetStream{
		o:          o,
		url:        redactURL(o.URL),
		closed:     make(chan struct{}),
		published:  o.Metrics.GetOrCreateCounter("inferwatch_findings_published_total"),
		duplicates: o.Metrics.GetOrCreateCounter("inferwatch_findings_duplicate_total"),
		retries:    o.Metrics.GetOrCreateCounter("inferwatch_publish_retries_total"),
		failures:   o.Metrics.GetOrCreateCounter("inferwatch_publish_failures_total"),
		connRetry:  o.Metrics.GetOrCreateCounter("inferwatch_nats_connect_retries_total"),
		disconns:   o.Metrics.GetOrCreateCounter("inferwatch_nats_disconnects_total"),
		reconns:    o.Metrics.GetOrCreateCounter("inferwatch_nats_reconnects_total"),
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
	for attempt := 0; ; attempt++ {
		nc, err := nats.Connect(o.URL, natsOpts...)
		if err == nil {
			j.nc = nc
			break
		}
		wait := backoffDelay(attempt, backoffBase, o.ConnectBackoffMax)
		log.Warn("NATS unreachable at start; retrying with backoff", "attempt", attempt+1, "wait", wait, "err", err)
		if cerr := sleepCtx(ctx, wait); cerr != nil {
			return nil, fmt.Errorf("connecting to NATS at %s: gave up after %d attempts: %w (last error: %v)", j.url, attempt+1, cerr, err)
		}
		j.connRetry.Inc()
	}
	js, err := jetstream.New(j.nc)
	if err != nil {
		j.nc.Close()
		return nil, fmt.Errorf("opening JetStream on %s: %w", j.url, err)
	}
	j.js = js
	if err := ensureStream(ctx, js, o); err != nil {
		j.nc.Close()
		return nil, fmt.Errorf("NATS at %s: %w", j.url, err)
	}
	log.Info("publishing findings on NATS JetStream", "stream", o.Stream,
		"subjects", o.Prefix+".>", "duplicate_window", o.DuplicateWindow)
	return j, nil
}

// streamManager is the part of JetStream that ensureStream needs.
type streamManager interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// ensureStream creates the stream over <prefix>.> with file storage, or
// updates an existing one to capture <prefix>.> with the duplicate window,
// keeping whatever else its operators configured (limits, replicas,
// storage, which cannot change).
func ensureStream(ctx context.Context, sm streamManager, o JetStreamOptions) error {
	subject := o.Prefix + ".>"
	cfg := jetstream.StreamConfig{
		Name:        o.Stream,
		Description: "inferwatch findings and signals",
		Subjects:    []string{subject},
		Storage:     jetstream.FileStorage,
		Duplicates:  o.DuplicateWindow,
	}
	s, err := sm.Stream(ctx, o.Stream)
	switch {
	case err == nil:
		cfg = s.CachedInfo().Config
		cfg.Duplicates = o.DuplicateWindow
		if cfg.MaxAge > 0 && cfg.Duplicates > cfg.MaxAge {
			return fmt.Errorf("stream %s keeps messages for %s, less than the duplicate window %s: lower the duplicate window or raise the stream's max age", o.Stream, cfg.MaxAge, cfg.Duplicates)
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
	if _, err := sm.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("creating or updating stream %s over %s with duplicate window %s: %w", o.Stream, subject, o.DuplicateWindow, err)
	}
	return nil
}

// Publish publishes fs in order, each as a CloudEvent on
// <prefix>.findings.<kind> with its FindingID as Nats-Msg-Id, waiting for
// JetStream's ack. A finding the stream reports as a duplicate counts as
// published. It stops at the first finding that still fails after the
// retries and returns how many were published before it, so the caller
// keeps fs[published:]; the error wraps ErrRejected when retrying that
// finding cannot help.
func (j *JetStream) Publish(ctx context.Context, fs []Finding) (published int, err error) {
	for i, f := range fs {
		ev, err := NewFindingEvent(f, j.o.Source)
		if err != nil {
			j.failures.Inc()
			return i, fmt.Errorf("publishing finding %d of %d: %w: %w", i+1, len(fs), ErrRejected, err)
		}
		subject := j.o.Prefix + ".findings." + f.Kind
		if err := j.publish(ctx, subject, ev); err != nil {
			return i, fmt.Errorf("publishing finding %d of %d (rule %q, group %q, series %s): %w", i+1, len(fs), f.Rule, f.Group, f.Series, err)
		}
	}
	return len(fs), nil
}

// PublishEvent publishes one CloudEvent on subject, which must lie under the
// prefix, with ev.ID as Nats-Msg-Id and the same ack, retry and
// deduplication rules as Publish.
func (j *JetStream) PublishEvent(ctx context.Context, subject string, ev Event) error {
	if err := validSubject(subject); err != nil {
		j.failures.Inc()
		return fmt.Errorf("publishing event %q: %w: %w", ev.ID, ErrRejected, err)
	}
	if !strings.HasPrefix(subject, j.o.Prefix+".") {
		j.failures.Inc()
		return fmt.Errorf("publishing event %q: %w: subject %q is outside the stream's subjects %s.>", ev.ID, ErrRejected, subject, j.o.Prefix)
	}
	if err := ev.Validate(); err != nil {
		j.failures.Inc()
		return fmt.Errorf("publishing event: %w: %w", ErrRejected, err)
	}
	return j.publish(ctx, subject, ev)
}

// publish sends one event and waits for its ack, retrying what can succeed
// on retry.
func (j *JetStream) publish(ctx context.Context, subject string, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		j.failures.Inc()
		return fmt.Errorf("encoding event %q: %w: %w", ev.ID, ErrRejected, err)
	}
	var lastErr error
	for attempt := 0; attempt <= j.o.MaxPublishRetries; attempt++ {
		if attempt > 0 {
			j.retries.Inc()
			wait := backoffDelay(attempt-1, backoffBase, j.o.ConnectBackoffMax)
			j.o.Logger.Warn("NATS publish failed; retrying", "url", j.url, "subject", subject,
				"id", ev.ID, "attempt", attempt, "wait", wait, "err", lastErr)
			if err := sleepCtx(ctx, wait); err != nil {
				break
			}
		}
		msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
		msg.Header.Set("Content-Type", CloudEventsContentType)
		actx, cancel := context.WithTimeout(ctx, j.o.AckTimeout)
		// Retries are ours, with backoff: no inner retry on no responders.
		ack, err := j.js.PublishMsg(actx, msg, jetstream.WithMsgID(ev.ID), jetstream.WithRetryAttempts(0))
		cancel()
		if err == nil {
			j.published.Inc()
			if ack.Duplicate {
				j.duplicates.Inc()
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
			j.failures.Inc()
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.Code >= 400 && apiErr.Code < 500 {
				return fmt.Errorf("stream %s refused event %q on %s: %w: %w", j.o.Stream, ev.ID, subject, ErrRejected, err)
			}
			return fmt.Errorf("publishing event %q on %s to %s: %w", ev.ID, subject, j.url, err)
		}
	}
	j.failures.Inc()
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

// sleepCtx waits for d or until ctx is done, whichever is first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// redactURL hides passwords and tokens in comma-separated NATS URLs.
func redactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			parts[i] = p
			continue
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
