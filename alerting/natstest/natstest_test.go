package natstest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

func TestStartAndCollect(t *testing.T) {
	srv := natstest.Start(t)
	js := natstest.JetStream(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			subject := "t.a"
			if i%2 == 1 {
				subject = "t.b" // filtered out below
			}
			if _, err := js.Publish(ctx, subject, fmt.Appendf(nil, "%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Published before the collector exists: still seen.
	publish(0, 6)
	collect := natstest.Collect(t, srv.ClientURL(), "t.a")
	publish(6, 8)

	check := func(got []jetstream.Msg, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %d messages, want %v", len(got), want)
		}
		for i, m := range got {
			if string(m.Data()) != want[i] || m.Subject() != "t.a" {
				t.Errorf("message %d = %s %q, want t.a %q", i, m.Subject(), m.Data(), want[i])
			}
		}
	}
	check(collect(2, 5*time.Second), "0", "2")
	check(collect(10, 300*time.Millisecond), "4", "6")
	check(collect(1, 100*time.Millisecond))
	publish(8, 9)
	check(collect(1, 5*time.Second), "8")
}
