package httpretry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestBackoff(t *testing.T) {
	const maxWait = 2 * Base * 4
	for failures := range 10 {
		ceil := min(Base<<failures, maxWait)
		for range 50 {
			d := Backoff(failures, -1, maxWait)
			if d < ceil/2 || d > ceil {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", failures, d, ceil/2, ceil)
			}
		}
	}
	if d := Backoff(0, 3*maxWait, maxWait); d != maxWait {
		t.Fatalf("a long Retry-After is capped: got %v, want %v", d, maxWait)
	}
	if d := Backoff(0, maxWait*3/4, maxWait); d != maxWait*3/4 {
		t.Fatalf("a Retry-After longer than the backoff is honoured: got %v, want %v", d, maxWait*3/4)
	}
	if d := Backoff(0, 0, maxWait); d < Base/2 {
		t.Fatalf("Retry-After 0 shortens the backoff to %v", d)
	}
	// BackoffMax below the base.
	if d := Backoff(3, -1, Base/10); d > Base/10 {
		t.Fatalf("backoff above a small max: %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := mustTime(t, "2026-01-02T03:04:05Z")
	f := func(h string, want float64) {
		t.Helper()
		if got := ParseRetryAfter(h, now).Seconds(); got != want {
			t.Errorf("ParseRetryAfter(%q) = %vs, want %vs", h, got, want)
		}
	}
	f("", -1e-9)
	f("7", 7)
	f(" 0 ", 0)
	f("-3", -1e-9)
	f("soon", -1e-9)
	f("Fri, 02 Jan 2026 03:04:15 GMT", 10)
	f("Fri, 02 Jan 2026 03:00:00 GMT", 0) // in the past
}

func TestNotice(t *testing.T) {
	var c Notice
	t0 := mustTime(t, "2026-01-02T03:04:05Z")
	if k := c.Add(2, t0); k != 2 {
		t.Fatalf("first add reports %d, want 2", k)
	}
	if k := c.Add(3, t0.Add(NoticeEvery/2)); k != 0 {
		t.Fatalf("add within the interval reports %d, want 0", k)
	}
	if k := c.Add(1, t0.Add(NoticeEvery)); k != 4 {
		t.Fatalf("add after the interval reports %d, want the 4 since the last line", k)
	}
}

func TestFlush(t *testing.T) {
	// A worker that returns only when abandoned.
	stuck := func() (*sync.WaitGroup, func(), *bool) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-stop
		}()
		abandoned := new(bool)
		return &wg, func() { *abandoned = true; close(stop) }, abandoned
	}

	var idle sync.WaitGroup
	if why := Flush(context.Background(), &idle, time.Hour, func() { t.Error("abandoned workers that had finished") }); why != "" {
		t.Errorf("finished workers: why %q, want none", why)
	}

	wg, abandon, abandoned := stuck()
	if why := Flush(context.Background(), wg, 10*time.Millisecond, abandon); why != "the flush timeout of 10ms passed" || !*abandoned {
		t.Errorf("timeout: why %q, abandoned %v", why, *abandoned)
	}

	wg, abandon, abandoned = stuck()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if why := Flush(ctx, wg, time.Hour, abandon); why != "the shutdown was forced (context canceled)" || !*abandoned {
		t.Errorf("forced: why %q, abandoned %v", why, *abandoned)
	}
}

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "7")
			http.Error(w, "  busy\n", http.StatusServiceUnavailable)
		case "/bad":
			http.Error(w, "bad request", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	f := func(path string, want Result) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		code := -1
		got := Do(context.Background(), srv.Client(), req, time.Second, func(c int) { code = c })
		if got.Retry != want.Retry || got.Code != want.Code || got.Status != want.Status || got.Body != want.Body ||
			got.RetryAfter != want.RetryAfter || (got.Err == nil) != (want.Err == nil) || code != want.Code {
			t.Errorf("%s: %+v (done with %d), want %+v", path, got, code, want)
		}
		if want.Err != nil && got.Err.Error() != want.Err.Error() {
			t.Errorf("%s: error %q, want %q", path, got.Err, want.Err)
		}
	}
	f("/", Result{Code: 200})
	f("/busy", Result{Code: 503, Status: "503 Service Unavailable", Body: "busy", Retry: true, RetryAfter: 7 * time.Second,
		Err: errors.New("HTTP 503 Service Unavailable")})
	f("/bad", Result{Code: 400, Status: "400 Bad Request", Body: "bad request", RetryAfter: -1, Err: errors.New("HTTP 400 Bad Request")})
}
