package natsjs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		attempt   int
		base, max time.Duration
		want      time.Duration
	}{
		{0, 100 * ms, 10 * time.Second, 100 * ms},
		{1, 100 * ms, 10 * time.Second, 200 * ms},
		{3, 100 * ms, 10 * time.Second, 800 * ms},
		{6, 100 * ms, 10 * time.Second, 6400 * ms},
		{7, 100 * ms, 10 * time.Second, 10 * time.Second},
		{1000, 100 * ms, 10 * time.Second, 10 * time.Second},
		{0, 100 * ms, 50 * ms, 50 * ms},
		{2, 0, time.Second, 0},
	} {
		if got := backoffDelay(tc.attempt, tc.base, tc.max); got != tc.want {
			t.Errorf("backoffDelay(%d, %v, %v) = %v, want %v", tc.attempt, tc.base, tc.max, got, tc.want)
		}
	}
}

func TestRetriable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("no ack within 5s: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{nats.ErrReconnectBufExceeded, true},
		{io.EOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("nats: %w", &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}), true},
		{fmt.Errorf("nats: %w", &jetstream.APIError{Code: 400, Description: "message size exceeds maximum allowed"}), false},
		{nats.ErrConnectionClosed, false},
		{nats.ErrConnectionDraining, false},
		{nats.ErrMaxPayload, false},
		{errors.New("something else"), false},
	} {
		if got := retriable(tc.err); got != tc.want {
			t.Errorf("retriable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                            "nats://127.0.0.1:4222",
		"nats://user:secret@h:4222":                        "nats://user:xxxxx@h:4222",
		"nats://s3cr3t-token@h:4222":                       "nats://xxxxx@h:4222",
		"nats://a:b@h1:4222, nats://h2:4222":               "nats://a:xxxxx@h1:4222,nats://h2:4222",
		"tls://u:p@nats.example:4443,tls://u:p@n2.example": "tls://u:xxxxx@nats.example:4443,tls://u:xxxxx@n2.example",
	} {
		got := redactURL(in)
		if got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "s3cr3t") {
			t.Errorf("redactURL(%q) leaks a credential: %q", in, got)
		}
	}
}

func TestOptionsFill(t *testing.T) {
	o := Options{URL: "nats://127.0.0.1:4222", Prefix: "acme.infer-watch"}
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	if o.Stream != "ACME_INFER_WATCH" || o.DuplicateWindow != 24*time.Hour ||
		o.Name != "inferwatch" || o.ConnectBackoffMax != 10*time.Second || o.AckTimeout != 5*time.Second ||
		o.MaxPublishRetries != 5 || o.Logger == nil || o.Metrics == nil {
		t.Errorf("defaults not filled: %+v", o)
	}
	o = Options{URL: "nats://127.0.0.1:4222"}
	if err := o.fill(); err != nil || o.Prefix != "inferwatch" || o.Stream != "INFERWATCH" {
		t.Errorf("default prefix and stream: %v, %q, %q", err, o.Prefix, o.Stream)
	}

	bad := func(o Options, wantErr string) {
		t.Helper()
		err := o.fill()
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("fill(%+v) = %v, want it to contain %q", o, err, wantErr)
		}
	}
	bad(Options{}, "url is empty")
	bad(Options{URL: "nats://h", Prefix: "a..b"}, `subject prefix: subject "a..b": token 2`)
	bad(Options{URL: "nats://h", Prefix: "a.>"}, `token 2 (">")`)
	bad(Options{URL: "nats://h", Stream: "A.B"}, `stream name "A.B"`)
	bad(Options{URL: "nats://h", MaxPublishRetries: -1}, "max publish retries is -1")
}
