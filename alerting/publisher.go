package alerting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/internal/metricname"
)

// Output publishes one event on a subject and waits for the broker's
// acknowledgement; it stops when ctx is done. An error wrapping ErrRejected
// says that retrying the event cannot help. *natsjs.JetStream implements it.
type Output interface {
	PublishEvent(ctx context.Context, subject string, ev Event) error
}

// ErrRejected marks a publish that can never succeed as is: a finding whose
// kind is no subject token, an event that fails validation, or a message the
// stream refuses with a client error. Retrying it is pointless; the caller
// should log it, count it and move past it.
var ErrRejected = errors.New("rejected")

// Outbox keeps findings on disk until the output has taken them, so that
// a crash, a restart or a broker outage loses none. *outbox.Outbox
// implements it.
type Outbox interface {
	// Append stores records, durably before it returns, under consecutive
	// sequence numbers from first.
	Append(recs ...[]byte) (first uint64, err error)
	// Ack marks records done: published, or dropped for good.
	Ack(seqs ...uint64) error
	// Replay calls fn with each record not yet done, in order; rec is
	// valid during the call only.
	Replay(fn func(seq uint64, rec []byte) error) error
}

// ErrClosed is returned by Send and Flush after Close.
var ErrClosed = errors.New("alerting: the publisher is closed")

// DefaultSubjectPrefix is the first part of every subject when none is
// configured.
const DefaultSubjectPrefix = "inferwatch"

// DefaultMaxPending bounds the findings a Publisher keeps while its output
// fails.
const DefaultMaxPending = 100_000

// PublisherOptions configure a Publisher. Output is required.
type PublisherOptions struct {
	Output Output
	// Prefix is the first part of the subjects (default "inferwatch"):
	// <prefix>.findings.<kind>, <prefix>.forecasts.<rule>,
	// <prefix>.scale.<rule>.
	Prefix string
	// Source is the CloudEvents source (default "/inferwatch").
	Source string
	// MaxPending bounds the findings kept while the output fails (default
	// DefaultMaxPending); past it the oldest are dropped, logged and
	// counted.
	MaxPending int
	// Outbox, when set, keeps every finding and alert event from before it
	// is published until the output acknowledges it (or rejects it for
	// good), and NewPublisher queues the ones it holds from before, ahead
	// of any new one. Forecasts and scale signals are not kept: the next
	// evaluation's supersede them. The Publisher does not close it.
	Outbox Outbox
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
	// Async makes Send hand the publishing to a goroutine of its own and
	// return at once, so an evaluation never waits on the broker; the
	// error of a publish that failed is returned by the next Send (and
	// Flush and Close report theirs). The daemon sets it.
	Async bool
}

// Publisher hands what rule evaluations produce to an Output, in order.
// A finding or an alert event the output does not acknowledge is kept and
// offered again with the next batch, so none is dropped silently; with an
// Outbox it is kept on disk too, and offered first by the next Publisher
// on the same outbox after a crash or a restart. A forecast or scale signal
// that fails is dropped and counted, since the next evaluation's
// supersedes it. Send never holds a lock while the output works: a slow
// broker delays the batch being sent, not the evaluations that queue the
// next ones, nor a /metrics scrape. Publishers share nothing.
type Publisher struct {
	o   PublisherOptions
	log *slog.Logger

	// sending is held (a token in it) by the one goroutine publishing; a
	// channel, so that Flush and Close wait for it only until their
	// context is done. mu guards queue only, and is never held across a
	// publish. storing is held while findings are appended to the outbox
	// and queued, so that the queue keeps the outbox's order. Lock order:
	// sending, storing, mu.
	sending chan struct{}
	storing sync.Mutex
	closed  bool // under storing
	mu      sync.Mutex
	queue   []item
	// queued counts the findings in queue, inflight those of the batch
	// being published.
	queued, inflight atomic.Int64

	// bg bounds the publishing of an Async Send; Close cancels it when its
	// own deadline passes. lastErr is the error of the last one that
	// failed, for the next Send.
	bg       context.Context
	bgCancel context.CancelFunc
	errMu    sync.Mutex
	lastErr  error

	dropRejected, dropOverflow *metrics.Counter
	dropSuperseded             map[string]*metrics.Counter
	outboxFailed               map[string]*metrics.Counter
}

// item is one event waiting to be published.
type item struct {
	subject string
	ev      Event
	class   string
	keep    bool   // a finding: kept until the output takes it
	seq     uint64 // its sequence number in the outbox; 0: not in one
	// who made it, for logs
	group, rule, series string
}

// NewPublisher checks o and fills its defaults. With an Outbox, it queues
// the findings the outbox holds, oldest first, at most MaxPending (the
// oldest past it are dropped, logged and counted): the next Send or Flush
// publishes them before anything new.
func NewPublisher(o PublisherOptions) (*Publisher, error) {
	if o.Output == nil {
		return nil, errors.New("alerting: PublisherOptions needs an Output")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultSubjectPrefix
	}
	if err := ValidSubject(o.Prefix); err != nil {
		return nil, fmt.Errorf("alerting: subject prefix: %w", err)
	}
	if o.Source == "" {
		o.Source = DefaultEventSource
	}
	if _, err := url.Parse(o.Source); err != nil {
		return nil, fmt.Errorf("alerting: cloudevents source %q is not a URI-reference: %w", o.Source, err)
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	p := &Publisher{o: o, log: o.Logger, sending: make(chan struct{}, 1)}
	p.bg, p.bgCancel = context.WithCancel(context.Background())
	set := o.Metrics
	p.dropRejected = set.GetOrCreateCounter(metricname.Name("inferwatch_findings_dropped_total", "reason", "rejected"))
	p.dropOverflow = set.GetOrCreateCounter(metricname.Name("inferwatch_findings_dropped_total", "reason", "overflow"))
	p.dropSuperseded = map[string]*metrics.Counter{}
	for _, c := range []string{ClassForecast, ClassScale} {
		p.dropSuperseded[c] = set.GetOrCreateCounter(metricname.Name("inferwatch_events_dropped_total", "kind", c))
	}
	set.GetOrCreateGauge("inferwatch_findings_pending", func() float64 { return float64(p.Pending()) })
	if o.Outbox != nil {
		p.outboxFailed = map[string]*metrics.Counter{}
		for _, op := range []string{"append", "ack"} {
			p.outboxFailed[op] = set.GetOrCreateCounter(metricname.Name("inferwatch_outbox_failures_total", "op", op))
		}
		if err := p.load(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// storedFinding is a finding as the outbox keeps it.
type storedFinding struct {
	Version int    `json:"v"`
	Subject string `json:"subject"`
	Class   string `json:"class"`
	Event   Event  `json:"event"`
	Group   string `json:"group,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Series  string `json:"series,omitempty"`
}

const storedVersion = 1

func encodeStored(it item) ([]byte, error) {
	return json.Marshal(storedFinding{Version: storedVersion, Subject: it.subject, Class: it.class, Event: it.ev,
		Group: it.group, Rule: it.rule, Series: it.series})
}

func decodeStored(rec []byte) (item, error) {
	var s storedFinding
	if err := json.Unmarshal(rec, &s); err != nil {
		return item{}, err
	}
	if s.Version != storedVersion {
		return item{}, fmt.Errorf("record version %d, this inferwatch reads version %d", s.Version, storedVersion)
	}
	if s.Subject == "" || s.Event.ID == "" {
		return item{}, errors.New("record has no subject or no event id")
	}
	return item{subject: s.Subject, ev: s.Event, class: s.Class, keep: true,
		group: s.Group, rule: s.Rule, series: s.Series}, nil
}

// load queues the findings the outbox holds.
func (p *Publisher) load() error {
	var items []item
	var bad []uint64
	err := p.o.Outbox.Replay(func(seq uint64, rec []byte) error {
		it, err := decodeStored(rec)
		if err != nil {
			bad = append(bad, seq)
			p.log.Error("dropping a record of the outbox that is no finding this inferwatch can read", "seq", seq, "err", err)
			return nil
		}
		it.seq = seq
		items = append(items, it)
		return nil
	})
	if err != nil {
		return fmt.Errorf("alerting: loading the findings kept in the outbox: %w", err)
	}
	p.dropRejected.Add(len(bad))
	p.ack(bad...)
	if over := len(items) - p.o.MaxPending; over > 0 {
		seqs := make([]uint64, over)
		for i, it := range items[:over] {
			seqs[i] = it.seq
		}
		p.dropOverflow.Add(over)
		p.log.Error("the outbox holds more findings than the publisher keeps; dropped the oldest",
			"dropped", over, "kept", p.o.MaxPending)
		p.ack(seqs...)
		items = items[over:]
	}
	if len(items) > 0 {
		p.log.Info("findings kept in the outbox from before; they are published first", "findings", len(items))
	}
	p.queue = items
	p.queued.Store(int64(len(items)))
	return nil
}

// store appends the findings of items to the outbox and gives each its
// sequence number; p.storing is held. When the outbox fails, the findings
// are kept in memory only, and the error says so.
func (p *Publisher) store(items []item) error {
	if p.o.Outbox == nil {
		return nil
	}
	var recs [][]byte
	var idx []int
	for i, it := range items {
		if !it.keep {
			continue
		}
		rec, err := encodeStored(it)
		if err != nil {
			p.outboxFailed["append"].Inc()
			p.log.Error("a finding cannot be kept in the outbox; it is kept in memory only", "group", it.group,
				"rule", it.rule, "series", it.series, "err", err)
			continue
		}
		recs = append(recs, rec)
		idx = append(idx, i)
	}
	if len(recs) == 0 {
		return nil
	}
	first, err := p.o.Outbox.Append(recs...)
	if err != nil {
		p.outboxFailed["append"].Add(len(recs))
		p.log.Error("the outbox failed; these findings are kept in memory only until published", "findings", len(recs), "err", err)
		return fmt.Errorf("keeping %d findings in the outbox (they are kept in memory only, and lost if the daemon stops before they are published): %w", len(recs), err)
	}
	for k, i := range idx {
		items[i].seq = first + uint64(k)
	}
	return nil
}

// ack marks findings done in the outbox; a failure means they are offered
// again at the next start, where JetStream drops what it already holds.
func (p *Publisher) ack(seqs ...uint64) {
	if p.o.Outbox == nil {
		return
	}
	seqs = slices.DeleteFunc(seqs, func(s uint64) bool { return s == 0 }) // not in the outbox
	if len(seqs) == 0 {
		return
	}
	if err := p.o.Outbox.Ack(seqs...); err != nil {
		p.outboxFailed["ack"].Add(len(seqs))
		p.log.Warn("acknowledging findings in the outbox failed; they are offered again at the next start",
			"findings", len(seqs), "err", err)
	}
}

// Pending is the number of findings kept for the next attempt.
func (p *Publisher) Pending() int { return int(p.queued.Load() + p.inflight.Load()) }

// Send queues the results of one evaluation and publishes what is queued,
// unless another goroutine is publishing already: that one takes them too.
// It returns the error that stopped publishing, with the findings kept.
// With an Outbox, the findings are in it before Send publishes anything.
func (p *Publisher) Send(ctx context.Context, b Batch) error {
	items := p.encode(b)
	p.storing.Lock()
	if p.closed {
		p.storing.Unlock()
		return ErrClosed
	}
	serr := p.store(items)
	if len(items) > 0 {
		p.mu.Lock()
		p.queue = append(p.queue, items...)
		p.bound()
		p.mu.Unlock()
	}
	p.storing.Unlock()
	select {
	case p.sending <- struct{}{}:
	default:
		return errors.Join(serr, p.takeErr())
	}
	if p.o.Async {
		go func() {
			if err := p.drain(p.bg); err != nil {
				p.errMu.Lock()
				p.lastErr = err
				p.errMu.Unlock()
			}
		}()
		return errors.Join(serr, p.takeErr())
	}
	return errors.Join(serr, p.drain(ctx))
}

// takeErr returns, once, the error of the last Async publish that failed.
func (p *Publisher) takeErr() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	err := p.lastErr
	p.lastErr = nil
	return err
}

// lockSending waits for the publish in progress, if any, until ctx is done.
func (p *Publisher) lockSending(ctx context.Context) error {
	select {
	case p.sending <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the publish in progress: %w", ctx.Err())
	}
}

func (p *Publisher) unlockSending() { <-p.sending }

// Flush publishes everything queued, waiting for a publish in progress
// first, and returns the error that stopped it.
func (p *Publisher) Flush(ctx context.Context) error {
	if err := p.lockSending(ctx); err != nil {
		return err
	}
	p.storing.Lock()
	closed := p.closed
	p.storing.Unlock()
	if closed {
		p.unlockSending()
		return ErrClosed
	}
	return p.drain(ctx)
}

// Close publishes what is queued, until ctx is done, and stops the
// Publisher: Send and Flush return ErrClosed after it. It returns how many
// findings were not published: with an Outbox they are kept in it for the
// next start; without one they are lost, and the error says so. Close
// does not close the Outbox: its owner does, after Close.
func (p *Publisher) Close(ctx context.Context) (kept int, err error) {
	p.storing.Lock()
	closed := p.closed
	p.closed = true
	p.storing.Unlock()
	if closed {
		return p.Pending(), nil
	}
	if err = p.lockSending(ctx); err == nil {
		err = p.drain(ctx)
	} else {
		p.bgCancel() // an Async publish still waiting on the broker gives up
	}
	kept = p.Pending()
	switch {
	case err == nil:
		return kept, nil
	case p.o.Outbox != nil:
		return kept, fmt.Errorf("closing the publisher: %d findings not published are kept in the outbox for the next start: %w", kept, err)
	default:
		return kept, fmt.Errorf("closing the publisher: %d findings not published are lost, as there is no outbox to keep them: %w", kept, err)
	}
}

// encode turns results into events; a finding that cannot be encoded is
// dropped here, logged and counted.
func (p *Publisher) encode(b Batch) []item {
	items := make([]item, 0, b.Len())
	for _, f := range b.Findings {
		ev, err := NewFindingEvent(f, p.o.Source)
		if err != nil {
			p.dropRejected.Inc()
			p.log.Error("dropping a finding that cannot be published", "group", f.Group, "rule", f.Rule, "series", f.Series, "err", err)
			continue
		}
		items = append(items, item{subject: FindingSubject(p.o.Prefix, f.Kind), ev: ev, class: ClassFinding, keep: true,
			group: f.Group, rule: f.Rule, series: f.Series})
	}
	for _, d := range b.Alerts {
		ev, err := NewAlertEvent(d, p.o.Source)
		if err != nil {
			p.dropRejected.Inc()
			p.log.Error("dropping an alert event that cannot be published", "group", d.Group, "rule", d.Rule, "series", d.Series, "err", err)
			continue
		}
		items = append(items, item{subject: AlertSubject(p.o.Prefix, d.Group, d.Rule), ev: ev, class: ClassAlert, keep: true,
			group: d.Group, rule: d.Rule, series: d.Series})
	}
	for _, d := range b.Incidents {
		ev, err := NewIncidentEvent(d, p.o.Source)
		if err != nil {
			p.dropRejected.Inc()
			p.log.Error("dropping an incident event that cannot be published", "group", d.Group, "incident", d.ID, "unit", d.Unit, "err", err)
			continue
		}
		items = append(items, item{subject: IncidentSubject(p.o.Prefix, d.Group), ev: ev, class: ClassIncident, keep: true,
			group: d.Group, series: d.Unit})
	}
	for _, d := range b.Forecasts {
		ev, err := NewForecastEvent(d, p.o.Source)
		if err != nil {
			p.dropSuperseded[ClassForecast].Inc()
			p.log.Error("dropping a forecast that cannot be encoded", "group", d.Group, "rule", d.Rule, "series", d.Series, "err", err)
			continue
		}
		items = append(items, item{subject: ForecastSubject(p.o.Prefix, d.Rule), ev: ev, class: ClassForecast,
			group: d.Group, rule: d.Rule, series: d.Series})
	}
	for _, d := range b.Scales {
		ev, err := NewScaleEvent(d, p.o.Source)
		if err != nil {
			p.dropSuperseded[ClassScale].Inc()
			p.log.Error("dropping a scale signal that cannot be encoded", "group", d.Group, "rule", d.Rule, "target", d.Target, "err", err)
			continue
		}
		items = append(items, item{subject: ScaleSubject(p.o.Prefix, d.Rule), ev: ev, class: ClassScale,
			group: d.Group, rule: d.Rule, series: d.Target})
	}
	return items
}

// bound drops the oldest findings past MaxPending; p.mu is held.
func (p *Publisher) bound() {
	n := 0
	for _, it := range p.queue {
		if it.keep {
			n++
		}
	}
	if over := n - p.o.MaxPending; over > 0 {
		kept := p.queue[:0]
		var seqs []uint64
		for _, it := range p.queue {
			if it.keep && over > 0 {
				over--
				p.dropOverflow.Inc()
				if it.seq != 0 {
					seqs = append(seqs, it.seq)
				}
				continue
			}
			kept = append(kept, it)
		}
		p.ack(seqs...)
		p.log.Error("the output has failed for too long; dropped the oldest pending findings",
			"dropped", n-p.o.MaxPending, "kept", p.o.MaxPending)
		clear(p.queue[len(kept):])
		p.queue = kept
		n = p.o.MaxPending
	}
	p.queued.Store(int64(n))
}

// drain publishes the queue until it is empty or the output fails; the
// caller holds p.sending, which drain releases.
func (p *Publisher) drain(ctx context.Context) error {
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			// Released under mu: a Send that queues after this check finds
			// sending free and publishes its items itself.
			p.unlockSending()
			p.mu.Unlock()
			return nil
		}
		batch := p.queue
		p.queue = nil
		p.inflight.Store(p.queued.Swap(0))
		p.mu.Unlock()

		// Findings the output took are acknowledged in the outbox a few
		// at a time: one write for many. A crash before the write means
		// they are offered again at the next start, where JetStream drops
		// them as the duplicates they are.
		var acks []uint64
		done := func(seq uint64) {
			if seq != 0 {
				if acks = append(acks, seq); len(acks) == ackEvery {
					p.ack(acks...)
					acks = acks[:0]
				}
			}
		}
		for i, it := range batch {
			err := p.o.Output.PublishEvent(ctx, it.subject, it.ev)
			switch {
			case err == nil:
				if it.keep {
					done(it.seq)
					p.inflight.Add(-1)
				}
				continue
			case errors.Is(err, ErrRejected):
				// The output can never take it: say so, count it, and go on
				// with the rest rather than block them behind it.
				if it.keep {
					done(it.seq)
					p.inflight.Add(-1)
					p.dropRejected.Inc()
				} else {
					p.dropSuperseded[it.class].Inc()
				}
				p.log.Error("the output rejected an event; dropping it", "kind", it.class, "group", it.group,
					"rule", it.rule, "series", it.series, "subject", it.subject, "id", it.ev.ID, "err", err)
				continue
			}
			p.ack(acks...)
			kept := p.requeue(batch[i:])
			return fmt.Errorf("publishing %s %d of %d (group %q, rule %q, series %s; %d findings kept for the next attempt): %w",
				it.class, i+1, len(batch), it.group, it.rule, it.series, kept, err)
		}
		p.ack(acks...)
	}
}

// ackEvery is how many published findings are acknowledged in the outbox
// at once.
const ackEvery = 256

// requeue puts the findings of rest back at the front of the queue, drops
// its forecasts and scale signals (counted), releases p.sending and
// returns how many findings are pending.
func (p *Publisher) requeue(rest []item) int {
	var keep []item
	superseded := map[string]int{}
	for _, it := range rest {
		if it.keep {
			keep = append(keep, it)
		} else {
			superseded[it.class]++
		}
	}
	for class, n := range superseded {
		p.dropSuperseded[class].Add(n)
		p.log.Warn("the output failed; dropped events the next evaluation supersedes", "kind", class, "dropped", n)
	}
	p.mu.Lock()
	p.inflight.Store(0)
	p.queue = append(keep, p.queue...)
	p.bound()
	n := p.queued.Load()
	p.unlockSending()
	p.mu.Unlock()
	return int(n)
}
