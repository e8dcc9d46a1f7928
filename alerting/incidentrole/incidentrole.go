// Package incidentrole makes the incidents of a set of replicas on one of
// them: each replica hands what the incidents need of its batches to a
// JetStream work queue ([Sender]), and the replica that holds the
// incidents role takes them in order and runs them through the incidents
// as a single process runs its own ([Holder]).
package incidentrole

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/cluster"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
)

// Role is the role of the member of a set of replicas that makes the
// incidents of every member's alerts.
const Role = "incidents"

// Sender hands what the incidents need of each batch to the feed, for
// the member that holds the incidents role. It is the last step of a
// replica's pipeline in place of its own incidents. The batches NATS has
// not taken wait, in order, in memory (at most feedPending of them, the
// oldest dropped past that), and go with the next batch.
type Sender struct {
	feed    *natsjs.Feed
	dropped *metrics.Counter
	log     *slog.Logger

	mu      sync.Mutex
	pending []feedItem
}

type feedItem struct {
	data []byte
	id   string
}

// feedPending bounds the batches waiting for NATS in a Sender: at one
// batch a group each 30 s, an outage of about an hour for 100 groups.
const feedPending = 10_000

// feedPutTimeout bounds one put on the feed.
const feedPutTimeout = 2 * time.Second

// NewSender returns a Sender to feed that counts the batches it drops in
// set's inferwatch_incident_feed_dropped_total.
func NewSender(feed *natsjs.Feed, logger *slog.Logger, set *metrics.Set) *Sender {
	return &Sender{feed: feed, log: logger, dropped: set.GetOrCreateCounter("inferwatch_incident_feed_dropped_total")}
}

// Send queues b's part and puts what waits on the feed, in order, until
// NATS refuses one; a batch sent again (a retry) is put once. It fails
// only on a batch it cannot encode: the others wait for NATS.
func (s *Sender) Send(ctx context.Context, b alerting.Batch) error {
	data, err := alerting.EncodeFeed(&b)
	if err != nil {
		s.dropped.Inc()
		return err
	}
	id := ""
	if !b.At.IsZero() {
		id = "batch:" + b.Group + ":" + strconv.FormatInt(b.At.UnixNano(), 10)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, feedItem{data: data, id: id})
	if n := len(s.pending) - feedPending; n > 0 {
		s.dropped.Add(n)
		s.log.Warn("batches for the incidents dropped: too many waited for NATS", "dropped", n)
		s.pending = slices.Delete(s.pending, 0, n)
	}
	for len(s.pending) > 0 {
		pctx, cancel := context.WithTimeout(ctx, feedPutTimeout)
		err := s.feed.Put(pctx, s.pending[0].data, s.pending[0].id)
		cancel()
		if err != nil {
			s.log.Debug("batches for the incidents wait for NATS", "waiting", len(s.pending), "err", err)
			return nil
		}
		s.pending[0] = feedItem{}
		s.pending = s.pending[1:]
	}
	return nil
}

// Holder makes the incidents of a set of replicas while its
// member holds the incidents role: on taking it, it restores the
// incidents from the state bucket; then it takes the members' batches
// from the feed in order and runs each through the levels and the
// incidents, as a single process runs its own, and sends the incident
// events to out; on losing the role it forgets them.
type Holder struct {
	Member    *cluster.Member
	Feed      *natsjs.Feed
	Incidents *alerting.Incidents
	Levels    *alerting.LevelStore
	// Out receives the incident events; Forwarder, when set, is among
	// them and forgets the incidents of a role given up.
	Out       []alerting.Receiver
	Forwarder *alertmanager.Forwarder
	// Expect makes the incidents wait for each group's first batch, after
	// they are restored on taking the role.
	Expect func()
	// Poll is how often the role is checked while not held, and the
	// longest a take waits.
	Poll   time.Duration
	Logger *slog.Logger

	held bool
	term uint64
}

// Run makes the incidents while the member holds the role, until ctx ends.
func (h *Holder) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if !h.check(ctx) {
			select {
			case <-ctx.Done():
			case <-time.After(h.Poll):
			}
			continue
		}
		msg, err := h.Feed.Take(ctx, h.Poll)
		if err != nil {
			h.Logger.Warn("taking the members' batches for the incidents failed; trying again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(h.Poll):
			}
			continue
		}
		if msg == nil {
			continue
		}
		if !h.check(ctx) {
			// Handed again to the next holder once the ack wait passes.
			msg.Nak()
			continue
		}
		b, err := alerting.DecodeFeed(msg.Data())
		if err != nil {
			h.Logger.Warn("skipping a message of the incidents' feed that is not a batch", "err", err)
			msg.Term()
			continue
		}
		h.Levels.Record(&b)
		h.Incidents.Process(ctx, &b)
		if len(b.Incidents) > 0 {
			out := alerting.Batch{Group: b.Group, At: b.At, Incidents: b.Incidents}
			for _, r := range h.Out {
				if err := r.Send(ctx, out); err != nil {
					h.Logger.Warn("sending incident events failed", "group", b.Group, "err", err)
				}
			}
		}
		if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
			h.Logger.Warn("acknowledging a batch of the incidents' feed failed; it may be taken again", "group", b.Group, "err", err)
		}
	}
	if h.held {
		h.lose()
	}
}

// check follows the role: it takes up the incidents on gaining it (a new
// term) and drops them on losing it, and reports whether it is held.
func (h *Holder) check(ctx context.Context) bool {
	term, ok := h.Member.Holds(Role)
	switch {
	case ok && (!h.held || term != h.term):
		h.gain(ctx, term)
	case !ok && h.held:
		h.lose()
	}
	return h.held
}

func (h *Holder) gain(ctx context.Context, term uint64) {
	h.Incidents.Reset()
	n, err := h.Incidents.Restore(ctx)
	if err != nil {
		h.Logger.Error("incidents could not be restored on taking the incidents role; they start afresh", "err", err)
	}
	h.Expect()
	if h.Forwarder != nil {
		h.Forwarder.ForgetIncidents()
		h.Forwarder.SeedIncidents(h.Incidents.Open())
	}
	h.held, h.term = true, term
	h.Logger.Info("this replica makes the incidents of the set now", "role", Role, "member", h.Member.Name(), "open", n)
}

func (h *Holder) lose() {
	h.Incidents.Reset()
	if h.Forwarder != nil {
		h.Forwarder.ForgetIncidents()
	}
	h.held = false
	h.Logger.Info("another replica makes the incidents of the set now", "role", Role, "member", h.Member.Name())
}
