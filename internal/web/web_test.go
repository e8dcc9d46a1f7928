package web

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

// TestServe serves the metrics set with the process' metrics, /healthz,
// /readyz and an added handler, and refuses an address taken.
func TestServe(t *testing.T) {
	set := metrics.NewSet()
	set.NewCounter("inferwatch_test_total").Add(3)
	ready := NewReadiness("store")
	srv, err := Serve(Options{Addr: "127.0.0.1:0", Metrics: set, Ready: ready,
		Handlers: map[string]http.Handler{"/extra": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "extra\n") })}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path string
		code int
		has  []string
	}{
		{"/metrics", 200, []string{"inferwatch_test_total 3\n", "# TYPE process_start_time_seconds gauge\n"}},
		{"/healthz", 200, []string{"ok\n"}},
		{"/readyz", 503, []string{"not ready\n", "store: starting\n"}},
		{"/extra", 200, []string{"extra\n"}},
		{"/nothing", 404, nil},
	} {
		code, body := get(c.path)
		if code != c.code {
			t.Errorf("GET %s: %d, want %d (%q)", c.path, code, c.code, body)
		}
		for _, h := range c.has {
			if !strings.Contains(body, h) {
				t.Errorf("GET %s: %q does not hold %q", c.path, body, h)
			}
		}
	}
	ready.Set("store", func(context.Context) error { return nil })
	if code, body := get("/readyz"); code != 200 || body != "ready\nstore: ok\n" {
		t.Errorf("GET /readyz once the store answers: %d %q", code, body)
	}
	if _, err := Serve(Options{Addr: srv.Addr()}); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("a second listener on %s: %v, want address already in use", srv.Addr(), err)
	}
}
