package main

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
	"github.com/inferwatch/inferwatch/rules"
)

// roleIncidents is the role of the member of a set of replicas that makes
// the incidents of every member's alerts.
const roleIncidents = "incidents"

// feedSender hands what the incidents need of each batch to the feed, for
// the member that holds the incidents role. It is the last step of a
// replica's pipeline in place of its own incidents. The batches NATS has
// not taken wait, in order, in memory (at most feedPending of them, the
// oldest dropped past that), and go with the next batch.
type feedSender struct {
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

// feedPending bounds the batches waiting for NATS in a feedSender: at one
// batch a group each 30 s, an outage of about an hour for 100 groups.
const feedPending = 10_000

// feedPutTimeout bounds one put on the feed.
const feedPutTimeout = 2 * time.Second

func newFeedSender(feed *natsjs.Feed, logger *slog.Logger, set *metrics.Set) *feedSender {
	return &feedSender{feed: feed, log: logger, dropped: set.GetOrCreateCounter("inferwatch_incident_feed_dropped_total")}
}

// Send queues b's part and puts what waits on the feed, in order, until
// NATS refuses one; a batch sent again (a retry) is put once. It fails
// only on a batch it cannot encode: the others wait for NATS.
func (s *feedSender) Send(ctx context.Context, b alerting.Batch) error {
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

// incidentHolder makes the incidents of a set of replicas while its
// member holds the incidents role: on taking it, it restores the
// incidents from the state bucket; then it takes the members' batches
// from the feed in order and runs each through the levels and the
// incidents, as a single process runs its own, and sends the incident
// events to out; on losing the role it forgets them.
type incidentHolder struct {
	member    *cluster.Member
	feed      *natsjs.Feed
	incidents *alerting.Incidents
	levels    *alerting.LevelStore
	out       []alerting.Receiver
	fwd       *alertmanager.Forwarder // nil without one
	groups    func() []*rules.Group
	poll      time.Duration
	logger    *slog.Logger

	held bool
	term uint64
}

// run makes the incidents while the member holds the role, until ctx ends.
func (h *incidentHolder) run(ctx context.Context) {
	for ctx.Err() == nil {
		if !h.check(ctx) {
			select {
			case <-ctx.Done():
			case <-time.After(h.poll):
			}
			continue
		}
		msg, err := h.feed.Take(ctx, h.poll)
		if err != nil {
			h.logger.Warn("taking the members' batches for the incidents failed; trying again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(h.poll):
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
			h.logger.Warn("skipping a message of the incidents' feed that is not a batch", "err", err)
			msg.Term()
			continue
		}
		h.levels.Record(&b)
		h.incidents.Process(ctx, &b)
		if len(b.Incidents) > 0 {
			out := alerting.Batch{Group: b.Group, At: b.At, Incidents: b.Incidents}
			for _, r := range h.out {
				if err := r.Send(ctx, out); err != nil {
					h.logger.Warn("sending incident events failed", "group", b.Group, "err", err)
				}
			}
		}
		if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
			h.logger.Warn("acknowledging a batch of the incidents' feed failed; it may be taken again", "group", b.Group, "err", err)
		}
	}
	if h.held {
		h.lose()
	}
}

// check follows the role: it takes up the incidents on gaining it (a new
// term) and drops them on losing it, and reports whether it is held.
func (h *incidentHolder) check(ctx context.Context) bool {
	term, ok := h.member.Holds(roleIncidents)
	switch {
	case ok && (!h.held || term != h.term):
		h.gain(ctx, term)
	case !ok && h.held:
		h.lose()
	}
	return h.held
}

func (h *incidentHolder) gain(ctx context.Context, term uint64) {
	h.incidents.Reset()
	n, err := h.incidents.Restore(ctx)
	if err != nil {
		h.logger.Error("incidents could not be restored on taking the incidents role; they start afresh", "err", err)
	}
	expectFirstBatches(h.incidents, h.groups())
	if h.fwd != nil {
		h.fwd.ForgetIncidents()
		h.fwd.SeedIncidents(h.incidents.Open())
	}
	h.held, h.term = true, term
	h.logger.Info("this replica makes the incidents of the set now", "role", roleIncidents, "member", h.member.Name(), "open", n)
}

func (h *incidentHolder) lose() {
	h.incidents.Reset()
	if h.fwd != nil {
		h.fwd.ForgetIncidents()
	}
	h.held = false
	h.logger.Info("another replica makes the incidents of the set now", "role", roleIncidents, "member", h.member.Name())
}
