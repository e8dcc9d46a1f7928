package natsjs_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// TestFollow replays what the stream stored since a time, on the subjects
// asked for only, then follows what is published next, and stops when the
// handler says so.
func TestFollow(t *testing.T) {
	srv := natstest.Start(t)
	js := natstest.JetStream(t, srv.ClientURL())
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ev.a.1", "ev.b.1", "ev.a.2"} {
		if _, err := js.Publish(ctx, s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- natsjs.Follow(ctx, natsjs.FollowOptions{URL: srv.ClientURL(), Name: "test", Stream: "EV", Subjects: []string{"ev.a.>"},
			Since: time.Now().Add(-time.Hour), Timeout: 5 * time.Second},
			func(subject string, data []byte) (bool, error) {
				if subject != string(data) {
					return true, errors.New("subject " + subject + " holds " + string(data))
				}
				got = append(got, subject)
				if len(got) == 2 {
					// What comes next arrives while following.
					_, err := js.Publish(ctx, "ev.a.3", []byte("ev.a.3"))
					return false, err
				}
				return len(got) == 3, nil
			})
	}()
	select {
	case err := <-done:
		if err != nil || !slices.Equal(got, []string{"ev.a.1", "ev.a.2", "ev.a.3"}) {
			t.Fatalf("Follow: %v, read %v; want ev.a.1, ev.a.2, ev.a.3", err, got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Follow did not stop; read %v", got)
	}

	// A cancelled context ends Follow without an error.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		done <- natsjs.Follow(cctx, natsjs.FollowOptions{URL: srv.ClientURL(), Name: "test", Stream: "EV", Subjects: []string{"ev.>"},
			Timeout: 5 * time.Second}, func(string, []byte) (bool, error) { cancel(); return false, nil })
	}()
	if _, err := js.Publish(ctx, "ev.c", []byte("ev.c")); err != nil {
		t.Fatal(err)
	}
	// The consumer may start after the publish: publish until it has read one.
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Follow after its context was cancelled: %v", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("Follow did not stop when its context was cancelled")
			}
			js.Publish(ctx, "ev.c", []byte("ev.c"))
		}
	}
}

// TestFollowErrors: what Follow says when it cannot read, typed where the
// caller says what to do.
func TestFollowErrors(t *testing.T) {
	srv := natstest.Start(t)
	js := natstest.JetStream(t, srv.ClientURL())
	ctx := context.Background()
	follow := func(url, stream string, subjects ...string) error {
		return natsjs.Follow(ctx, natsjs.FollowOptions{URL: url, Name: "test", Stream: stream, Subjects: subjects, Timeout: 2 * time.Second},
			func(string, []byte) (bool, error) { return true, nil })
	}
	var ce *natsjs.ConnectError
	if err := follow("nats://user:hunter2@127.0.0.1:1", "EV", "ev.>"); !errors.As(err, &ce) || ce.Refused ||
		!strings.Contains(ce.Reason, "connection refused") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("no server: %v, want a ConnectError saying the connection was refused, without the password", err)
	}
	var nf *natsjs.StreamNotFoundError
	if err := follow(srv.ClientURL(), "EV", "ev.>"); !errors.As(err, &nf) || nf.HeldBy != "" || len(nf.Streams) != 0 {
		t.Errorf("no stream at all: %v (%+v)", err, nf)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	if err := follow(srv.ClientURL(), "OTHER", "ev.>"); !errors.As(err, &nf) || nf.HeldBy != "EV" || nf.Subject != "ev.>" {
		t.Errorf("another stream holds the subject: %v (%+v)", err, nf)
	}
	if err := follow(srv.ClientURL(), "OTHER", "x.>"); !errors.As(err, &nf) || nf.HeldBy != "" || !slices.Equal(nf.Streams, []string{"EV"}) {
		t.Errorf("no stream holds the subject: %v (%+v)", err, nf)
	}
	var se *natsjs.SubjectError
	if err := follow(srv.ClientURL(), "EV", "ev.a", "x.>"); !errors.As(err, &se) || se.Subject != "x.>" || !slices.Equal(se.StreamSubjects, []string{"ev.>"}) {
		t.Errorf("a subject outside the stream: %v (%+v)", err, se)
	}
}
