package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// TestFeedHandsOneAtATimeInOrder: two processes put on a feed; its holder
// takes the messages in the order they were put; one taken and not
// acknowledged (its holder stopped) is taken again, by another holder,
// once the ack wait has passed, before the later ones; a message put
// twice with one id is taken once.
func TestFeedHandsOneAtATimeInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv := natstest.Start(t)
	ctx := context.Background()
	open := func() *natsjs.Feed {
		f, err := connect(t, natsjs.Options{URL: srv.ClientURL()}).Feed(ctx, natsjs.FeedOptions{Name: "incidents", MaxAge: time.Hour, AckWait: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := open(), open()
	for i, f := range []*natsjs.Feed{a, b, a, a} {
		id := string(rune('1' + i))
		if err := f.Put(ctx, []byte(id), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Put(ctx, []byte("4"), "4"); err != nil { // sent again
		t.Fatal(err)
	}
	m, err := a.Take(ctx, time.Second)
	if err != nil || m == nil || string(m.Data()) != "1" {
		t.Fatalf("first take: %v %v", m, err)
	}
	// Not acknowledged: nothing else is handed out until the ack wait.
	if m2, err := b.Take(ctx, 200*time.Millisecond); err != nil || m2 != nil {
		t.Fatalf("a second take while one is out: %v %v", m2, err)
	}
	var got []string
	for len(got) < 4 {
		m, err := b.Take(ctx, 2*time.Second)
		if err != nil || m == nil {
			t.Fatalf("after %v: %v %v", got, m, err)
		}
		got = append(got, string(m.Data()))
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := "1234"; got[0]+got[1]+got[2]+got[3] != want {
		t.Errorf("taken %v, want %s", got, want)
	}
	if m, err := a.Take(ctx, 300*time.Millisecond); err != nil || m != nil {
		t.Errorf("the feed holds %v after all were taken (%v)", m, err)
	}
}
