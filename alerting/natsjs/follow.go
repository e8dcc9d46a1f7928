package natsjs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/internal/redact"
)

// FollowOptions configure Follow.
type FollowOptions struct {
	// URL is the server (or comma-separated servers); Options
	// authenticate the client and set up TLS.
	URL     string
	Options []nats.Option
	// Name is the client's name on the server.
	Name string
	// Stream is the stream read, Subjects what of it (at least one
	// subject; wildcards allowed).
	Stream   string
	Subjects []string
	// Since, when not zero, replays what the stream stored from then on
	// before following; otherwise only what is published from now on.
	Since time.Time
	// Timeout bounds connecting and looking the stream up.
	Timeout time.Duration
	// Disconnected is told why the connection dropped (credentials
	// redacted), Reconnected when it is back; nil: not told.
	Disconnected func(reason string)
	Reconnected  func()
}

// ConnectError is Follow's error when NATS cannot be reached or refuses
// the client.
type ConnectError struct {
	// Refused says the server refused the credentials.
	Refused bool
	// Reason is the client's error, or the dial's when no server could be
	// reached, with credentials redacted.
	Reason string
	Err    error
}

func (e *ConnectError) Error() string { return "connecting to NATS: " + e.Reason }
func (e *ConnectError) Unwrap() error { return e.Err }

// StreamNotFoundError is Follow's error when the server has no such
// stream: HeldBy names the stream holding the first subject, if one
// does; otherwise Streams are the streams it has (buckets left out).
type StreamNotFoundError struct {
	Stream, Subject string
	HeldBy          string
	Streams         []string
}

func (e *StreamNotFoundError) Error() string { return "no stream " + e.Stream }

// SubjectError is Follow's error when a subject asked for cannot match
// any subject of the stream: the consumer would wait forever.
type SubjectError struct {
	Subject        string
	StreamSubjects []string
}

func (e *SubjectError) Error() string {
	return fmt.Sprintf("subject %s matches none of the stream's %s", e.Subject, strings.Join(e.StreamSubjects, ", "))
}

// Follow reads the stream through an ordered consumer, which acknowledges
// and removes nothing, and hands each message to handle, until ctx is done
// (it returns nil), handle says stop or fails (its error is returned), or
// the stream cannot be read. The connection reconnects forever.
func Follow(ctx context.Context, o FollowOptions, handle func(subject string, data []byte) (stop bool, err error)) error {
	shown := redact.URL(o.URL)
	nc, err := nats.Connect(o.URL, append([]nats.Option{
		nats.Name(o.Name),
		nats.Timeout(o.Timeout),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if o.Disconnected != nil && !nc.IsClosed() && !nc.IsDraining() {
				o.Disconnected(redactErr(err, o.URL))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			if o.Reconnected != nil {
				o.Reconnected()
			}
		}),
	}, o.Options...)...)
	if err != nil {
		return connectError(o.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("opening JetStream on %s: %w", shown, err)
	}
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	st, err := js.Stream(sctx, o.Stream)
	if err != nil {
		return streamError(sctx, js, o, shown, err)
	}
	for _, s := range o.Subjects {
		if !collidesAny(s, st.CachedInfo().Config.Subjects) {
			return &SubjectError{Subject: s, StreamSubjects: st.CachedInfo().Config.Subjects}
		}
	}
	// The server removes the consumer this long after the follower
	// stopped (heartbeats keep it while it runs).
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: o.Subjects, DeliverPolicy: jetstream.DeliverNewPolicy,
		InactiveThreshold: 30 * time.Second}
	if !o.Since.IsZero() {
		start := o.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	cons, err := js.OrderedConsumer(sctx, o.Stream, cfg)
	if err != nil {
		return fmt.Errorf("reading stream %s on %s: %w", o.Stream, shown, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("reading stream %s on %s for %s: %w", o.Stream, shown, strings.Join(o.Subjects, ", "), err)
	}
	defer it.Stop()
	cancel()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("reading stream %s on %s: %w", o.Stream, shown, err)
		}
		if stop, err := handle(msg.Subject(), msg.Data()); err != nil || stop {
			return err
		}
	}
}

func collidesAny(subject string, subjects []string) bool {
	for _, s := range subjects {
		if server.SubjectsCollide(subject, s) {
			return true
		}
	}
	return false
}

// connectError says why NATS at u could not be reached: when no server
// could be, the dial's error, as nats.go keeps it to itself.
func connectError(u string, err error) error {
	msg := redactErr(err, u)
	e := &ConnectError{Reason: msg, Err: err,
		Refused: errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(msg), "authorization")}
	if !e.Refused && errors.Is(err, nats.ErrNoServers) {
		if p, perr := url.Parse(strings.TrimSpace(strings.Split(u, ",")[0])); perr == nil && p.Host != "" {
			if c, derr := net.DialTimeout("tcp", p.Host, time.Second); derr != nil {
				e.Reason = redactErr(derr, u)
			} else {
				c.Close()
			}
		}
	}
	return e
}

// streamError says what went wrong looking the stream up: no JetStream,
// or no such stream (and which stream holds the subjects, or which
// exist).
func streamError(ctx context.Context, js jetstream.JetStream, o FollowOptions, shown string, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("NATS at %s has no JetStream: run nats-server with -js (the daemon's embedded server has it)", shown)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("looking up stream %s on %s: %w", o.Stream, shown, err)
	}
	e := &StreamNotFoundError{Stream: o.Stream, Subject: o.Subjects[0]}
	if name, err := js.StreamNameBySubject(ctx, e.Subject); err == nil && name != "" {
		e.HeldBy = name
		return e
	}
	for n := range js.StreamNames(ctx).Name() {
		if !strings.HasPrefix(n, "KV_") && !strings.HasPrefix(n, "OBJ_") {
			e.Streams = append(e.Streams, n)
		}
	}
	return e
}

func redactErr(err error, u string) string {
	if err == nil {
		return ""
	}
	return redact.Text(err.Error(), u)
}
