package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/httpretry"
)

// maxBodyInLog is how much of a refusing Alertmanager's answer is logged.
const maxBodyInLog = 512

// userAgent identifies inferwatch to Alertmanager.
const userAgent = "inferwatch"

// run drains t's queue until Close: one batch at a time, retrying a batch
// that can succeed on retry and dropping one that cannot.
func (n *Notifier) run(t *target) {
	defer n.wg.Done()
	failures := 0 // consecutive failed attempts
	for {
		batch := t.q.popFront(n.o.MaxBatch)
		if len(batch) == 0 {
			select {
			case <-n.draining:
				return // Close asked for it and everything is delivered
			default:
			}
			select {
			case <-t.q.wake:
			case <-n.draining:
			case <-n.ctx.Done():
				return
			}
			continue
		}
		res := n.post(t, batch)
		switch {
		case res.cancelled:
			t.requeue(batch, n.o.QueueCapacity)
			return
		case res.err == nil:
			t.sent.Add(len(batch))
			if failures > 0 {
				t.log.Info("Alertmanager takes alerts again", "failed_attempts", failures)
			}
			failures = 0
			continue
		}
		t.errors.Inc()
		if !res.retry {
			t.rejected.Add(len(batch))
			t.log.Error("Alertmanager refused a batch of alerts; dropped it, retrying cannot help",
				"alerts", len(batch), "first", firstAlertName(batch[0]), "status", res.status, "body", res.body, "err", res.err)
			failures = 0
			continue
		}
		wait := httpretry.Backoff(failures, res.retryAfter, n.o.BackoffMax)
		failures++
		t.log.Warn("sending alerts to Alertmanager failed; retrying", "alerts", len(batch),
			"attempt", failures, "wait", wait, "status", res.status, "body", res.body, "err", res.err)
		// Put it back first: while waiting, newer alerts may push its
		// oldest out, and Close counts what is queued.
		t.requeue(batch, n.o.QueueCapacity)
		if httpretry.Sleep(n.ctx, wait) != nil {
			return
		}
	}
}

// requeue puts an undelivered batch back at the head of the queue.
func (t *target) requeue(batch [][]byte, capacity int) {
	if k := t.q.pushFront(batch); k > 0 {
		t.dropFull(k, capacity)
	}
}

// result is the outcome of one POST.
type result struct {
	err        error  // nil: delivered
	retry      bool   // the same request may succeed later
	cancelled  bool   // Close gave up: not the Alertmanager's fault
	status     string // e.g. "503 Service Unavailable", "" without an answer
	body       string // first bytes of a failed answer
	retryAfter time.Duration
}

// post sends one batch as a JSON array to t's endpoint.
func (n *Notifier) post(t *target, batch [][]byte) result {
	var body bytes.Buffer
	body.Grow(2 + len(batch)*256)
	body.WriteByte('[')
	for i, b := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(b)
	}
	body.WriteByte(']')

	ctx, cancel := context.WithTimeout(n.ctx, n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body.Bytes()))
	if err != nil {
		return result{err: fmt.Errorf("building the request to %s: %w", t.url, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)

	began := time.Now()
	resp, err := n.hc.Do(req)
	if err != nil {
		t.latency.UpdateDuration(began)
		switch {
		case n.ctx.Err() != nil:
			return result{err: err, cancelled: true}
		case ctx.Err() != nil:
			return result{err: fmt.Errorf("no answer within the timeout of %v", n.o.Timeout), retry: true, retryAfter: -1}
		case httpretry.CannotSucceed(err):
			return result{err: httpretry.TransportError(err)}
		}
		return result{err: httpretry.TransportError(err), retry: true, retryAfter: -1}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyInLog))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	t.latency.UpdateDuration(began)
	if resp.StatusCode/100 == 2 {
		return result{}
	}
	r := result{
		status:     resp.Status,
		body:       strings.TrimSpace(strings.ToValidUTF8(string(head), "\uFFFD")),
		retryAfter: -1,
		err:        fmt.Errorf("POST %s: HTTP %s", redactString(t.endpoint), resp.Status),
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		r.retry = true
		r.retryAfter = httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}

// firstAlertName is the alertname of an encoded alert, for logs.
func firstAlertName(b []byte) string {
	var a struct {
		Labels map[string]string `json:"labels"`
	}
	if json.Unmarshal(b, &a) != nil {
		return ""
	}
	return a.Labels["alertname"]
}
