// Package jsread reads what the daemon published from its JetStream
// stream, for reports: an ordered, ephemeral consumer over the subjects
// asked for, from a start time to the end of the stream. It implements
// report.EventReader, so a report can be made against a live stream by a
// process other than the daemon.
package jsread

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/report"
)

// Options configure a Reader.
type Options struct {
	// URL of the NATS server; required.
	URL string
	// Stream is the JetStream stream holding <prefix>.>; required.
	Stream string
	// Timeout bounds the connection and each fetch (default 10s).
	Timeout time.Duration
	// MaxEvents bounds what one read takes in (default 2,000,000).
	MaxEvents int
	// Auth is how the reader proves who it is (as the daemon's output);
	// TLS how it checks the server (nil: plain, or the system's roots for
	// tls:// URLs).
	Auth natsjs.Auth
	TLS  *tls.Config
}

// Reader reads events from one stream.
type Reader struct {
	o  Options
	nc *nats.Conn
	js jetstream.JetStream
}

// Open connects to NATS.
func Open(o Options) (*Reader, error) {
	if o.URL == "" || o.Stream == "" {
		return nil, errors.New("jsread: the NATS URL and the stream are required")
	}
	o.Timeout = cmp.Or(o.Timeout, 10*time.Second)
	o.MaxEvents = cmp.Or(o.MaxEvents, 2_000_000)
	opts := []nats.Option{nats.Name("inferwatch-report"), nats.Timeout(o.Timeout)}
	switch a := o.Auth; {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("jsread: the NKey seed file %s: %w", a.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if o.TLS != nil {
		opts = append(opts, nats.Secure(o.TLS))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s to read stream %s: %w", redact(o.URL), o.Stream, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream on %s: %w", redact(o.URL), err)
	}
	return &Reader{o: o, nc: nc, js: js}, nil
}

// Close closes the connection.
func (r *Reader) Close() { r.nc.Close() }

// ReadEvents returns the events on subjects published since since, oldest
// first, reading to the end of the stream as it was when the read began.
func (r *Reader) ReadEvents(ctx context.Context, subjects []string, since time.Time) ([]report.Received, error) {
	where := fmt.Sprintf("stream %s on %s", r.o.Stream, redact(r.o.URL))
	st, err := r.js.Stream(ctx, r.o.Stream)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", where, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", where, err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	lastSeq := info.State.LastSeq
	start := since.UTC()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: subjects,
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", where, start.Format(time.RFC3339), err)
	}
	var out []report.Received
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(r.o.Timeout))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", where, err)
		}
		n := 0
		done := false
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", where, err)
			}
			var ev alerting.Event
			if err := json.Unmarshal(msg.Data(), &ev); err == nil {
				out = append(out, report.Received{Subject: msg.Subject(), Event: ev})
			}
			if meta.NumPending == 0 || meta.Sequence.Stream >= lastSeq {
				done = true
			}
			if len(out) > r.o.MaxEvents {
				return nil, fmt.Errorf("reading %s: more than %d events since %s; read a shorter span", where, r.o.MaxEvents, start.Format(time.RFC3339))
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("reading %s: %w", where, err)
		}
		if done || n == 0 {
			return out, nil
		}
	}
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
