package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// TestWebPprof runs the daemon with and without --web.enable-pprof: the
// profiles are served on the web listener only when asked for, beside
// /metrics.
func TestWebPprof(t *testing.T) {
	bin := daemonBinary(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(`source:
  url: http://127.0.0.1:1
  timeout: 1s
groups:
  - name: g
    interval: 1h
    rules:
      - name: r
        expr: up
`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	f := func(enable bool, wantCode int, wantBody string) {
		t.Helper()
		args := []string{"run", "--config", cfg, "--nats.url", srv.ClientURL(), "--web.listen-address", "127.0.0.1:0"}
		if enable {
			args = append(args, "--web.enable-pprof")
		}
		stderr := newSyncBuffer()
		cmd := exec.Command(bin, args...)
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		web := servingAddr(t, stderr)
		waitFor(t, "/healthz answers", func() bool {
			code, _, err := get("http://" + web + "/healthz")
			return err == nil && code == 200
		}, stderr.String)
		for _, path := range []string{"/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
			code, body, err := get("http://" + web + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			if code != wantCode {
				t.Errorf("--web.enable-pprof=%v: GET %s: HTTP %d, want %d", enable, path, code, wantCode)
			}
			if wantBody != "" && path == "/debug/pprof/heap?debug=1" && !strings.Contains(body, wantBody) {
				t.Errorf("GET %s: body does not hold %q: %.200s", path, wantBody, body)
			}
		}
		if code, _, err := get("http://" + web + "/metrics"); err != nil || code != 200 {
			t.Errorf("GET /metrics beside the profiles: %d, %v", code, err)
		}
	}
	f(true, 200, "heap profile")
	f(false, 404, "")
}

func TestWebPprofNeedsListener(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"run", "--config", "x.yml", "--web.listen-address", "", "--web.enable-pprof"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--web.enable-pprof needs a --web.listen-address") {
		t.Fatalf("exit %d, stderr %q; want 2 and a usage error", code, stderr.String())
	}
}
