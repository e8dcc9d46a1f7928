package natsjs

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
)

// FollowEvents hands handle every event of the stream on the subject filters
// (e.g. "inferwatch.scale.>") published from since on, then each as it is
// published, until ctx ends; it returns ctx's error. Messages that are not
// events are skipped. While the stream cannot be read (NATS away, the
// stream not yet made) it tries again with a backoff from the newest
// message handled, so an event may be handed twice but none is skipped.
func (j *JetStream) FollowEvents(ctx context.Context, subjects []string, since time.Time, handle func(subject string, ev alerting.Event)) error {
	js, err := jetstream.New(j.nc)
	if err != nil {
		return err
	}
	start := since.UTC()
	for attempt := 0; ; attempt++ {
		if n, err := j.follow(ctx, js, subjects, &start, handle); err != nil && ctx.Err() == nil {
			if n > 0 {
				attempt = 0
			}
			j.o.Logger.Debug("following the stream failed; trying again", "stream", j.o.Stream, "subjects", subjects, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoffDelay(attempt, backoffBase, j.o.ConnectBackoffMax)):
		}
	}
}

// follow reads the stream from *start until ctx ends or reading fails,
// moving *start to each message handled; it returns how many it handled.
func (j *JetStream) follow(ctx context.Context, js jetstream.JetStream, subjects []string, start *time.Time,
	handle func(string, alerting.Event)) (int, error) {
	from := *start
	cons, err := js.OrderedConsumer(ctx, j.o.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: subjects,
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &from})
	if err != nil {
		return 0, err
	}
	it, err := cons.Messages()
	if err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	n := 0
	for {
		msg, err := it.Next()
		if err != nil {
			return n, err
		}
		if meta, err := msg.Metadata(); err == nil {
			*start = meta.Timestamp
		}
		if ev, err := alerting.DecodeEvent(msg.Data()); err == nil {
			handle(msg.Subject(), ev)
			n++
		}
	}
}
