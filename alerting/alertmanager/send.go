package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/inferwatch/inferwatch/internal/httpretry"
)

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
	r := httpretry.Do(n.ctx, n.hc, req, n.o.Timeout, func(int) { t.latency.UpdateDuration(began) })
	if r.Status != "" {
		r.Err = fmt.Errorf("POST %s: %w", redactString(t.endpoint), r.Err)
	}
	return result{err: r.Err, retry: r.Retry, cancelled: r.Cancelled, status: r.Status, body: r.Body, retryAfter: r.RetryAfter}
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
