package writeback

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/inferwatch/inferwatch/internal/httpclient"
	"github.com/inferwatch/inferwatch/internal/httpretry"
)

// userAgent identifies inferwatch to the store.
const userAgent = "inferwatch"

// run drains the queue until Close: one request at a time.
func (w *Writer) run() {
	defer w.wg.Done()
	failures := 0 // consecutive failed attempts
	for w.waitBatch() {
		batch := merge(w.q.popFront(w.o.MaxSamplesPerSend))
		if len(batch) == 0 {
			continue
		}
		if !w.deliver(batch, &failures) {
			return
		}
	}
}

// waitBatch waits until a request is due: MaxSamplesPerSend samples are
// queued, the oldest has waited BatchDeadline, or Close asked to flush and
// something is queued. It returns false when the worker is to stop: Close
// asked and the queue is empty, or Close gave up.
func (w *Writer) waitBatch() bool {
	for {
		n, oldest := w.q.state()
		draining := false
		select {
		case <-w.draining:
			draining = true
		default:
		}
		if n == 0 {
			if draining {
				return false
			}
			select {
			case <-w.q.wake:
			case <-w.draining:
			case <-w.ctx.Done():
				return false
			}
			continue
		}
		if w.ctx.Err() != nil {
			return false
		}
		if draining || n >= w.o.MaxSamplesPerSend {
			return true
		}
		wait := w.o.BatchDeadline - time.Since(oldest)
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-w.q.wake:
		case <-w.draining:
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// merge joins the parts of each series in ss, which the queue holds oldest
// first, into one series per identity, in the order they first appear.
func merge(ss []*series) []*series {
	if len(ss) < 2 {
		return ss
	}
	idx := make(map[string]int, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		i, ok := idx[s.key]
		if !ok {
			idx[s.key] = len(out)
			out = append(out, &series{key: s.key, labels: s.labels, t: s.t, v: s.v, at: s.at})
			continue
		}
		m := out[i]
		m.t, m.v = append(m.t[:len(m.t):len(m.t)], s.t...), append(m.v[:len(m.v):len(m.v)], s.v...)
		if s.at.Before(m.at) {
			m.at = s.at
		}
	}
	return out
}

func samples(ss []*series) int {
	n := 0
	for _, s := range ss {
		n += len(s.t)
	}
	return n
}

// deliver writes batch: it retries what can succeed on retry (after a
// backoff, putting the batch back at the head of the queue first) and
// splits a refused request in halves by series to drop only the series
// refused. It returns false when Close gave up.
func (w *Writer) deliver(batch []*series, failures *int) bool {
	parts := [][]*series{batch} // a stack: the last is sent next
	requests := 0
	for len(parts) > 0 {
		part := parts[len(parts)-1]
		parts = parts[:len(parts)-1]
		res := w.post(part)
		requests++
		switch {
		case res.cancelled:
			w.requeue(slices.Concat(part, flatten(parts)))
			return false
		case res.err == nil:
			w.sent.Add(samples(part))
			if *failures > 0 {
				w.log.Info("the store takes samples again", "failed_attempts", *failures)
			}
			*failures = 0
			continue
		}
		w.errors.Inc()
		if res.retry {
			wait := httpretry.Backoff(*failures, res.retryAfter, w.o.BackoffMax)
			*failures++
			w.retries.Inc()
			w.log.Warn("writing samples back failed; retrying", "samples", samples(part), "attempt", *failures,
				"wait", wait, "status", res.status, "body", res.body, "err", res.err)
			// Put it back first: while waiting, newer samples may push its
			// oldest out, and Close counts what is queued.
			w.requeue(slices.Concat(part, flatten(parts)))
			return httpretry.Sleep(w.ctx, wait) == nil
		}
		*failures = 0
		if res.split && len(part) > 1 && requests+len(parts)+2 <= maxRequestsPerBatch {
			h := len(part) / 2
			parts = append(parts, part[h:], part[:h])
			w.log.Debug("the store refused a request; sending its halves apart to find the series it refuses",
				"series", len(part), "status", res.status, "body", res.body)
			continue
		}
		n := samples(part)
		w.dropped[ReasonRejected].Add(n)
		if k := w.refusedNotice.Add(n, time.Now()); k > 0 {
			w.log.Error("the store refused samples; dropped them, retrying cannot help",
				"samples", k, "series", describe(part), "status", res.status, "body", res.body, "err", res.err)
		}
	}
	return true
}

func flatten(parts [][]*series) []*series {
	var out []*series
	for i := len(parts) - 1; i >= 0; i-- { // in the order they would be sent
		out = append(out, parts[i]...)
	}
	return out
}

// requeue puts undelivered series back at the head of the queue.
func (w *Writer) requeue(ss []*series) {
	if k := w.q.pushFront(ss); k > 0 {
		w.dropFull(k)
	}
}

// result is the outcome of one request.
type result struct {
	err        error  // nil: written
	retry      bool   // the same request may succeed later
	split      bool   // refused for its content: its parts may pass
	cancelled  bool   // Close gave up: not the store's fault
	status     string // e.g. "503 Service Unavailable", "" without an answer
	body       string // first bytes of a failed answer
	retryAfter time.Duration
}

// post sends ss in one request.
func (w *Writer) post(ss []*series) result {
	var body []byte
	if w.o.Protocol == RemoteWrite {
		body = encodeRemoteWrite(ss)
	} else {
		body = appendImport(nil, ss)
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.endpoint, bytes.NewReader(body))
	if err != nil {
		return result{err: fmt.Errorf("building the request to %s: %s", w.url, httpclient.ParseReason(err))}
	}
	req.Header.Set("User-Agent", userAgent)
	if w.o.Protocol == RemoteWrite {
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	} else {
		req.Header.Set("Content-Type", "application/json")
	}

	began := time.Now()
	r := httpretry.Do(w.ctx, w.hc, req, w.o.Timeout, func(code int) {
		if code == 0 {
			w.observe("error", began)
		} else {
			w.observe(strconv.Itoa(code), began)
		}
	})
	if !r.Cancelled && r.Err != nil {
		r.Err = fmt.Errorf("POST %s: %w", w.url, r.Err)
	}
	c := r.Code
	return result{err: r.Err, retry: r.Retry, cancelled: r.Cancelled, status: r.Status, body: r.Body, retryAfter: r.RetryAfter,
		split: c == http.StatusBadRequest || c == http.StatusRequestEntityTooLarge || c == http.StatusUnprocessableEntity}
}

// observe counts a request by its outcome and times it.
func (w *Writer) observe(code string, began time.Time) {
	w.set.GetOrCreateCounter(`inferwatch_writeback_requests_total{code="` + code + `"}`).Inc()
	w.latency.UpdateDuration(began)
}
