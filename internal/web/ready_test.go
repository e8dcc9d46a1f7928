package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadiness(t *testing.T) {
	r := NewReadiness("config", "nats", "store")
	get := func() (int, string) {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		return w.Code, w.Body.String()
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "store: starting") {
		t.Fatalf("before start: %d %q", code, body)
	}
	r.Set("config", func(context.Context) error { return nil })
	r.Set("nats", func(context.Context) error { return nil })
	storeErr := errors.New("query_range http://vm:8428: connection refused")
	r.Set("store", func(context.Context) error { return storeErr })
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "store: query_range http://vm:8428: connection refused") ||
		!strings.Contains(body, "nats: ok") {
		t.Fatalf("store down: %d %q", code, body)
	}
	r.Set("store", func(context.Context) error { return nil })
	clear(r.cachedAt)
	if code, body := get(); code != http.StatusOK || !strings.HasPrefix(body, "ready\n") {
		t.Fatalf("all up: %d %q", code, body)
	}
}
