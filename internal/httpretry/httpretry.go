// Package httpretry holds what the outputs that post to an HTTP peer
// (Alertmanager, the store's write-back) share about retrying: the backoff
// with the peer's Retry-After, which transport errors no retry mends, a
// wait that ends with its context, the flush at shutdown, and a rate limit
// for log lines about counts. The store client reads Retry-After with it too, and the
// JetStream output waits with its Sleep.
package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Base is the first wait of Backoff.
const Base = 100 * time.Millisecond

// NoticeEvery is the least time between two log lines of a Notice.
const NoticeEvery = 30 * time.Second

// Backoff is the wait before retry number failures+1: a capped exponential
// from Base with jitter over its upper half, or the server's Retry-After
// (given when >= 0) if that is longer; capped at ceiling. A Retry-After of
// 0 thus never makes a retry loop spin.
func Backoff(failures int, retryAfter, ceiling time.Duration) time.Duration {
	d := min(Base, ceiling)
	for i := 0; i < failures && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	d = d/2 + rand.N(d/2+1)
	return min(max(d, retryAfter), ceiling)
}

// ParseRetryAfter reads delay-seconds or an HTTP date; -1 when absent or bad.
func ParseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return -1
		}
		return time.Duration(min(n, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// CannotSucceed reports transport errors that the same request meets again
// however often it is retried: a server certificate that does not verify.
// Everything else without an answer (refused, reset, DNS, timeouts) may
// pass next time.
func CannotSucceed(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// TransportError drops the *url.Error wrapper, whose message holds the
// URL unredacted (and repeats the method and URL a logger carries).
func TransportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Sleep waits for d or until ctx is done, whichever is first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Flush waits for the workers in wg to deliver what is queued until they
// finish, ctx is done or timeout has passed, whichever is first. When it
// gives up it calls abandon, which must make the workers return (by
// cancelling their requests), and waits for them. It returns why it gave
// up, to be named in the error about what was left, or "" when the
// workers finished.
func Flush(ctx context.Context, wg *sync.WaitGroup, timeout time.Duration, abandon func()) (why string) {
	flush, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return ""
	case <-flush.Done():
	}
	why = fmt.Sprintf("the flush timeout of %v passed", timeout)
	if ctx.Err() != nil {
		why = fmt.Sprintf("the shutdown was forced (%v)", ctx.Err())
	}
	abandon()
	<-done
	return why
}

// Notice rate-limits a log line about a count of events: Add returns the
// events since the last line when a line is due, else 0. Its zero value
// is ready.
type Notice struct {
	mu      sync.Mutex
	last    time.Time
	pending int
}

// Add counts k events at now.
func (c *Notice) Add(k int, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending += k
	if !c.last.IsZero() && now.Sub(c.last) < NoticeEvery {
		return 0
	}
	c.last = now
	k, c.pending = c.pending, 0
	return k
}
