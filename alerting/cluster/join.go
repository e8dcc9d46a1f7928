package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// MemberName is a process' name in the set: its host and a hash of the
// directory only it holds (its outbox), so that a replica restarted on
// the same host and disk takes its leases back at once; random without a
// directory.
func MemberName(host, dir string) string {
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	var id []byte
	if dir != "" {
		h := sha256.Sum256([]byte(host + "\x00" + dir))
		id = h[:4]
	} else {
		id = make([]byte, 4)
		rand.Read(id)
	}
	if host == "" {
		host = "inferwatch"
	}
	return host + "-" + hex.EncodeToString(id)
}

// StartOptions configure Start.
type StartOptions struct {
	// Member configures the member; its Bucket is left out and opened by
	// OpenBucket at each attempt.
	Member Options
	// OpenBucket opens (or creates) the members' bucket; BucketName names
	// it in errors.
	OpenBucket func(ctx context.Context) (Bucket, error)
	BucketName string
	// Wait is how long Start retries what can succeed on retry.
	Wait time.Duration
}

// Start makes a new member join the set and runs it. It retries opening
// the bucket and joining, once a second, until o.Wait has passed; it
// does not retry ErrEmbedded. stop ends the heartbeats and leaves the set
// (releasing the leases); call it once, when the work under the leases
// has finished (more calls do nothing).
func Start(ctx context.Context, o StartOptions) (m *Member, stop func(), err error) {
	logger := o.Member.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	deadline := time.Now().Add(o.Wait)
	for {
		bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		o.Member.Bucket, err = o.OpenBucket(bctx)
		if err == nil {
			if m, err = New(o.Member); err != nil {
				cancel()
				return nil, nil, err
			}
			err = m.Join(bctx)
		}
		cancel()
		if err == nil || errors.Is(err, ErrEmbedded) || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		logger.Warn("joining the set of members failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("joining the set of members in bucket %s: %w", o.BucketName, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(rctx)
	}()
	var once sync.Once
	return m, func() {
		once.Do(func() {
			cancel()
			<-done
			lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer lcancel()
			m.Leave(lctx)
		})
	}, nil
}
