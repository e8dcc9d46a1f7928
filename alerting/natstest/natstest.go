// Package natstest starts a real NATS server with JetStream for tests and
// reads back what a subscriber of a stream sees.
package natstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
)

// Start runs an embedded NATS server with JetStream on a random port of
// 127.0.0.1, storing into t.TempDir(), and shuts it down when the test ends.
func Start(t testing.TB) *natsjs.Embedded {
	t.Helper()
	e, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{
		Listen:   "127.0.0.1:0",
		StoreDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("starting embedded NATS: %v", err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// JetStream connects to the server at url and opens JetStream on the
// connection, which is closed when the test ends.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name("natstest"))
	if err != nil {
		t.Fatalf("natstest: connecting to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: opening JetStream on %s: %v", url, err)
	}
	return js
}

// Collect connects to url and returns a function that reads messages on
// subject (wildcards allowed) from the start of the stream that captures
// it, through a JetStream ordered consumer, so nothing published before the
// first read is missed. Each call returns the next messages, at most n,
// waiting at most timeout for them; it returns fewer when fewer arrive.
// The stream needs to exist only by the first call. A read that finds no
// responder (a cluster between leaders) is retried until timeout. The
// connection is closed when the test ends.
func Collect(t testing.TB, url, subject string) func(n int, timeout time.Duration) []jetstream.Msg {
	t.Helper()
	js := JetStream(t, url)
	var (
		mu   sync.Mutex
		cons jetstream.Consumer
	)
	return func(n int, timeout time.Duration) []jetstream.Msg {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		deadline := time.Now().Add(timeout)
		if cons == nil {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			stream, err := js.StreamNameBySubject(ctx, subject)
			if err != nil {
				t.Fatalf("natstest: finding the stream that captures %s: %v", subject, err)
			}
			cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
				FilterSubjects: []string{subject},
				DeliverPolicy:  jetstream.DeliverAllPolicy,
			})
			if err != nil {
				t.Fatalf("natstest: creating an ordered consumer on %s for %s: %v", stream, subject, err)
			}
		}
		var got []jetstream.Msg
		for len(got) < n {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			// A cluster electing a leader answers no request for a while;
			// the ordered consumer resumes from its cursor.
			batch, err := cons.Fetch(n-len(got), jetstream.FetchMaxWait(left))
			if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
				time.Sleep(min(100*time.Millisecond, max(left, 0)))
				continue
			}
			if err != nil {
				t.Fatalf("natstest: asking for messages on %s: %v", subject, err)
			}
			for msg := range batch.Messages() {
				got = append(got, msg)
			}
			err = batch.Error()
			if errors.Is(err, nats.ErrNoResponders) {
				time.Sleep(min(100*time.Millisecond, max(time.Until(deadline), 0)))
				continue
			}
			if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
				t.Fatalf("natstest: reading %s: %v", subject, err)
			}
		}
		return got
	}
}
