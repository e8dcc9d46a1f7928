package ingest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueryRangeConcurrentRequests: the time chunks of a long range are in
// flight together, up to MaxConcurrentRequests and never more, and are
// joined as if they had come one after another. The server holds the first
// answers until as many requests as allowed have arrived: a client that
// sent fewer at once would never get them (the test would time out).
func TestQueryRangeConcurrentRequests(t *testing.T) {
	const limit = 3
	var (
		mu       sync.Mutex
		calls    []string
		inflight atomic.Int32
		most     atomic.Int32
		arrived  atomic.Int32
		all      = make(chan struct{})
	)
	serve := rangeHandler(t, false, &calls)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if arrived.Add(1) == limit {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			t.Error("the client never had three requests in flight")
		}
		mu.Lock()
		defer mu.Unlock()
		serve(w, r)
	})
	c, _ := newTestClient(t, ClientOptions{URL: srv.URL, MaxPointsPerSeries: 10, MaxConcurrentRequests: limit})
	const step = 15 * time.Second
	start := time.UnixMilli(1600000000000)
	end := start.Add(99 * step) // 100 points: 10 requests
	ss, err := c.QueryRange(context.Background(), `vllm:num_requests_waiting{model="m"}`, start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 10 || most.Load() != limit {
		t.Fatalf("%d requests, at most %d in flight; want 10 and %d", len(calls), most.Load(), limit)
	}
	for s, series := range ss {
		if len(series.Timestamps) != 100 {
			t.Fatalf("series %d has %d points, want 100", s, len(series.Timestamps))
		}
		for i, ts := range series.Timestamps {
			if want := start.UnixMilli() + int64(i)*step.Milliseconds(); ts != want || series.Values[i] != float64(want/1000+int64(s)) {
				t.Fatalf("series %d point %d = (%d, %v), want (%d, %d)", s, i, ts, series.Values[i], want, want/1000+int64(s))
			}
		}
	}
}

// TestQueryRangePartsInOrder: parts come oldest chunk first whatever order
// the answers arrive in, each chunk's last part marked Done with the
// chunk's end; stopping early cancels what is in flight; an error ends the
// parts after those before it.
func TestQueryRangePartsInOrder(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	serve := rangeHandler(t, false, &calls)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		// The later chunks answer first.
		if r.Form.Get("start") == "1600000000.000" {
			time.Sleep(50 * time.Millisecond)
		}
		if r.Form.Get("start") == "1600000300.000" && r.Form.Get("query") == "fail" {
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"no"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		serve(w, r)
	})
	c, _ := newTestClient(t, ClientOptions{URL: srv.URL, MaxPointsPerSeries: 10})
	const step = 15 * time.Second
	start := time.UnixMilli(1600000000000)
	end := start.Add(39 * step)
	var dones []time.Time
	for p, err := range c.QueryRangeParts(context.Background(), "up", start, end, step) {
		if err != nil {
			t.Fatal(err)
		}
		first := p.Series[0].Timestamps[0]
		if want := start.Add(time.Duration(len(dones)*10) * step).UnixMilli(); first != want {
			t.Fatalf("part %d starts at %d, want %d", len(dones), first, want)
		}
		dones = append(dones, p.Done)
	}
	if len(dones) != 4 || !dones[3].Equal(end) || !dones[0].Equal(start.Add(9*step)) {
		t.Fatalf("parts done at %v", dones)
	}
	n := 0
	for _, err := range c.QueryRangeParts(context.Background(), "fail", start, end, step) {
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || n != 2 {
				t.Fatalf("after %d parts: %v; want the API's error after 2", n, err)
			}
			break
		}
		n++
	}
	for range c.QueryRangeParts(context.Background(), "up", start, end, step) {
		break // the other requests are cancelled and waited for
	}
}
