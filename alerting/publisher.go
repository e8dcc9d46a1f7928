package alerting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
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
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Publisher hands what rule evaluations produce to an Output, in order.
// A finding or an alert event the output does not acknowledge is kept and
// offered again with the next batch, so none is dropped silently; a forecast or scale signal
// that fails is dropped and counted, since the next evaluation's
// supersedes it. Send never holds a lock while the output works: a slow
// broker delays the batch being sent, not the evaluations that queue the
// next ones, nor a /metrics scrape. Publishers share nothing.
type Publisher struct {
	o   PublisherOptions
	log *slog.Logger

	// sending is held by the one goroutine publishing; mu guards queue
	// only, and is never held across a publish. Lock order: sending, mu.
	sending sync.Mutex
	mu      sync.Mutex
	queue   []item
	// queued counts the findings in queue, inflight those of the batch
	// being published.
	queued, inflight atomic.Int64

	dropRejected, dropOverflow *metrics.Counter
	dropSuperseded             map[string]*metrics.Counter
}

// item is one event waiting to be published.
type item struct {
	subject string
	ev      Event
	class   string
	keep    bool // a finding: kept until the output takes it
	// who made it, for logs
	group, rule, series string
}

// NewPublisher checks o and fills its defaults.
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
	p := &Publisher{o: o, log: o.Logger}
	set := o.Metrics
	p.dropRejected = set.GetOrCreateCounter(metricname.Name("inferwatch_findings_dropped_total", "reason", "rejected"))
	p.dropOverflow = set.GetOrCreateCounter(metricname.Name("inferwatch_findings_dropped_total", "reason", "overflow"))
	p.dropSuperseded = map[string]*metrics.Counter{}
	for _, c := range []string{ClassForecast, ClassScale} {
		p.dropSuperseded[c] = set.GetOrCreateCounter(metricname.Name("inferwatch_events_dropped_total", "kind", c))
	}
	set.GetOrCreateGauge("inferwatch_findings_pending", func() float64 { return float64(p.Pending()) })
	return p, nil
}

// Pending is the number of findings kept for the next attempt.
func (p *Publisher) Pending() int { return int(p.queued.Load() + p.inflight.Load()) }

// Send queues the results of one evaluation and publishes what is queued,
// unless another goroutine is publishing already: that one takes them too.
// It returns the error that stopped publishing, with the findings kept.
func (p *Publisher) Send(ctx context.Context, b Batch) error {
	items := p.encode(b)
	if len(items) > 0 {
		p.mu.Lock()
		p.queue = append(p.queue, items...)
		p.bound()
		p.mu.Unlock()
	}
	if !p.sending.TryLock() {
		return nil
	}
	return p.drain(ctx)
}

// Flush publishes everything queued, waiting for a publish in progress
// first, and returns the error that stopped it.
func (p *Publisher) Flush(ctx context.Context) error {
	p.sending.Lock()
	return p.drain(ctx)
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
		for _, it := range p.queue {
			if it.keep && over > 0 {
				over--
				p.dropOverflow.Inc()
				continue
			}
			kept = append(kept, it)
		}
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
			p.sending.Unlock()
			p.mu.Unlock()
			return nil
		}
		batch := p.queue
		p.queue = nil
		p.inflight.Store(p.queued.Swap(0))
		p.mu.Unlock()

		for i, it := range batch {
			err := p.o.Output.PublishEvent(ctx, it.subject, it.ev)
			switch {
			case err == nil:
				if it.keep {
					p.inflight.Add(-1)
				}
				continue
			case errors.Is(err, ErrRejected):
				// The output can never take it: say so, count it, and go on
				// with the rest rather than block them behind it.
				if it.keep {
					p.inflight.Add(-1)
					p.dropRejected.Inc()
				} else {
					p.dropSuperseded[it.class].Inc()
				}
				p.log.Error("the output rejected an event; dropping it", "kind", it.class, "group", it.group,
					"rule", it.rule, "series", it.series, "subject", it.subject, "id", it.ev.ID, "err", err)
				continue
			}
			kept := p.requeue(batch[i:])
			return fmt.Errorf("publishing %s %d of %d (group %q, rule %q, series %s; %d findings kept for the next attempt): %w",
				it.class, i+1, len(batch), it.group, it.rule, it.series, kept, err)
		}
	}
}

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
	p.sending.Unlock()
	p.mu.Unlock()
	return int(n)
}
