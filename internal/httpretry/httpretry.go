// Package httpretry holds what the outputs that post to an HTTP peer
// (Alertmanager, the store's write-back) share: one request and what it
// came to (Do), and about retrying: the backoff
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
	"io"
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

// Result is what one request to a peer came to.
type Result struct {
	Err        error         // nil: delivered
	Retry      bool          // the same request may succeed later
	Cancelled  bool          // the sender gave up: not the peer's fault
	Code       int           // the answer's status code; 0 without an answer
	Status     string        // e.g. "503 Service Unavailable"; "" without an answer
	Body       string        // the first bytes of a failed answer
	RetryAfter time.Duration // before a retry, the peer's Retry-After; -1 when none
}

// MaxBody is how much of a failed answer's body a Result keeps.
const MaxBody = 512

// Do sends req with hc and says what it came to. A 2xx answer is
// delivered; 5xx and 429 are worth a retry, after the peer's Retry-After;
// other answers are not ("HTTP 400 Bad Request"). Without an answer: when
// stopping is done the sender gave up (Cancelled); when req's own context
// ended there was no answer within timeout (retried); a transport error is
// retried unless CannotSucceed. done is called when the answer or the
// error is in, with the status code (0 without an answer). The body is
// drained, up to 64 KiB, so the connection is reused.
func Do(stopping context.Context, hc *http.Client, req *http.Request, timeout time.Duration, done func(code int)) Result {
	resp, err := hc.Do(req)
	if err != nil {
		done(0)
		switch {
		case stopping.Err() != nil:
			return Result{Err: err, Cancelled: true}
		case req.Context().Err() != nil:
			return Result{Err: fmt.Errorf("no answer within the timeout of %v", timeout), Retry: true, RetryAfter: -1}
		case CannotSucceed(err):
			return Result{Err: TransportError(err)}
		}
		return Result{Err: TransportError(err), Retry: true, RetryAfter: -1}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	done(resp.StatusCode)
	if resp.StatusCode/100 == 2 {
		return Result{Code: resp.StatusCode}
	}
	r := Result{
		Code:       resp.StatusCode,
		Status:     resp.Status,
		Body:       strings.TrimSpace(strings.ToValidUTF8(string(head), "\uFFFD")),
		RetryAfter: -1,
		Err:        fmt.Errorf("HTTP %s", resp.Status),
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		r.Retry = true
		r.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}
