package natsjs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Feed is a work queue on JetStream through which every member of a set
// of replicas hands one member, the holder of a role, what that role
// needs: the members Put, the holder Takes the messages one at a time in
// the order they were put and acknowledges each once it is done with it.
// A message taken and not acknowledged (its holder stopped) is handed
// again after the ack wait, before any later one, so the next holder
// starts where the last one stopped.
type Feed struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	stream  string
	cons    jetstream.Consumer
}

// FeedOptions configure a Feed.
type FeedOptions struct {
	// Name names the feed: its stream is <stream>_<NAME>, its subject
	// <prefix>-<name>, outside the events' <prefix>.>.
	Name string
	// MaxAge is how long a message no holder takes is kept.
	MaxAge time.Duration
	// AckWait is how long a message taken and not acknowledged waits
	// before it is handed again: longer than the role's holder may go on
	// after it stopped renewing the role.
	AckWait time.Duration
}

// FeedStreamName is the stream of the feed name of stream.
func FeedStreamName(stream, name string) string {
	return stream + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Feed creates (or updates) the feed's stream, on as many servers as the
// events' stream, and its consumer.
func (j *JetStream) Feed(ctx context.Context, o FeedOptions) (*Feed, error) {
	js, err := jetstream.New(j.nc)
	if err != nil {
		return nil, err
	}
	f := &Feed{nc: j.nc, js: js, subject: j.o.Prefix + "-" + o.Name, stream: FeedStreamName(j.o.Stream, o.Name)}
	cfg := jetstream.StreamConfig{
		Name:        f.stream,
		Description: "inferwatch: what the members of a set hand the holder of the " + o.Name + " role",
		Subjects:    []string{f.subject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  2 * time.Minute,
		MaxAge:      o.MaxAge,
		Replicas:    cmp.Or(j.o.Replicas, 1),
	}
	var st jetstream.Stream
	for attempt := 0; ; attempt++ {
		st, err = js.CreateOrUpdateStream(ctx, cfg)
		if err == nil || attempt >= bucketRetries || ctx.Err() != nil {
			break
		}
		time.Sleep(backoffDelay(attempt, backoffBase, time.Second))
	}
	if err != nil {
		return nil, fmt.Errorf("creating the stream %s of the %s feed: %w", f.stream, o.Name, err)
	}
	// One message at a time: a message handed again comes before the
	// later ones.
	f.cons, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "holder", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.AckWait, MaxAckPending: 1, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("creating the consumer of the %s feed on %s: %w", o.Name, f.stream, err)
	}
	return f, nil
}

// ErrFeedDisconnected is Put's answer, at once, while NATS is away.
var ErrFeedDisconnected = errors.New("NATS is disconnected")

// Put adds data to the feed; id, when not empty, makes a second Put of it
// within two minutes a no-op (a batch sent again). While NATS is away it
// fails at once with ErrFeedDisconnected.
func (f *Feed) Put(ctx context.Context, data []byte, id string) error {
	if !f.nc.IsConnected() {
		return fmt.Errorf("putting on %s (stream %s): %w", f.subject, f.stream, ErrFeedDisconnected)
	}
	var opts []jetstream.PublishOpt
	if id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	if _, err := f.js.Publish(ctx, f.subject, data, opts...); err != nil {
		return fmt.Errorf("putting on %s (stream %s): %w", f.subject, f.stream, err)
	}
	return nil
}

// Take waits at most wait for the next message and returns it (nil when
// none came); the caller acknowledges it (jetstream.Msg's DoubleAck) once
// it is done with it, and no other is handed out until then or the ack
// wait.
func (f *Feed) Take(ctx context.Context, wait time.Duration) (jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	b, err := f.cons.Fetch(1, jetstream.FetchContext(ctx))
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, nil
		}
		return nil, fmt.Errorf("taking from %s: %w", f.stream, err)
	}
	for m := range b.Messages() {
		return m, nil
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("taking from %s: %w", f.stream, err)
	}
	return nil, nil
}
