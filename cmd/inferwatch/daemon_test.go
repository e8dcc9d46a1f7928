package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for a process writing while a test reads.
type syncBuffer struct {
	mu chan struct{}
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestDaemonKeepsRunningThroughStoreFailuresAndStopsOnSIGTERM runs the real
// binary as a daemon against a store that refuses connections: evaluations
// fail and are counted on /metrics, the daemon keeps running, and SIGTERM
// makes it finish and exit 0.
func TestDaemonKeepsRunningThroughStoreFailuresAndStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "inferwatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "cfg.yml")
	// Two groups on a one-second interval against a store that is down:
	// each evaluation fails, is logged and counted, and the daemon runs on.
	if err := os.WriteFile(cfg, []byte(`source:
  url: http://127.0.0.1:1
  timeout: 1s
groups:
  - name: fast
    interval: 1s
    rules:
      - name: up_rule
        expr: up
        step: 1s
        lookback: 1m
  - name: other
    interval: 1s
    rules:
      - name: other_rule
        expr: sum(up)
        step: 1s
        lookback: 1m
`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	web := freeAddr(t)
	stderr := newSyncBuffer()
	cmd := exec.Command(bin, "run", "--config", cfg, "--nats.url", srv.ClientURL(), "--web.listen-address", web)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()

	// Wait (bounded) for both groups to have failed at least twice.
	var metrics string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no repeated failures counted in 30s; /metrics:\n%s\nstderr:\n%s", metrics, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
		code, body, err := get("http://" + web + "/metrics")
		if err != nil || code != 200 {
			continue
		}
		metrics = body
		if counterAtLeast(metrics, `inferwatch_group_evaluation_failures_total{group="fast"}`, 2) &&
			counterAtLeast(metrics, `inferwatch_group_evaluation_failures_total{group="other"}`, 2) {
			break
		}
	}
	if code, body, err := get("http://" + web + "/healthz"); err != nil || code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q %v", code, body, err)
	}
	for _, want := range []string{"inferwatch_group_evaluations_total", "inferwatch_group_missed_iterations_total",
		"inferwatch_group_evaluation_duration_seconds", `inferwatch_events_published_total{kind="finding"}`, "inferwatch_findings_pending",
		"inferwatch_publish_retries_total", `inferwatch_source_requests_total{path="/api/v1/query_range",code="error"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGTERM\nstderr:\n%s", stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"127.0.0.1:1", "rule=up_rule", "rule=other_rule", "stopping"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func counterAtLeast(metrics, name string, n int) bool {
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v int
			if _, err := fmt.Sscan(rest, &v); err == nil && v >= n {
				return true
			}
		}
	}
	return false
}
