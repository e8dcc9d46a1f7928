package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/internal/testbin"
)

// servingAddr waits (bounded) for the daemon started with
// --web.listen-address 127.0.0.1:0 to log the address it bound, and returns
// it: the kernel's choice, so no other process can take it in between.
func servingAddr(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	var addr string
	waitFor(t, "the daemon logs the address it serves HTTP on", func() bool {
		m := servingRE.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, stderr.String)
	return addr
}

var servingRE = regexp.MustCompile(`msg="serving HTTP" addr=(127\.0\.0\.1:\d+)`)

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
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	dir := t.TempDir()
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
	stderr := newSyncBuffer()
	cmd := exec.Command(bin, "run", "--config", cfg, "--nats.url", srv.ClientURL(), "--web.listen-address", "127.0.0.1:0")
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
	web := servingAddr(t, stderr)

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
	// The store is down: alive, but not ready, and /readyz says why.
	if code, body, err := get("http://" + web + "/readyz"); err != nil || code != 503 ||
		!strings.Contains(body, "store: ") || !strings.Contains(body, "127.0.0.1:1") || !strings.Contains(body, "nats: ok") {
		t.Fatalf("/readyz: %d %q %v", code, body, err)
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

// bin is the inferwatch binary the tests run.
var bin testbin.Binary

// TestMain gives the package's tests a state directory of their own
// (XDG_STATE_HOME, where a daemon on an external NATS keeps its outbox),
// so that they write nothing under the home directory, and removes it and
// the binary daemonBinary built (some 50 MB) once the tests are done.
func TestMain(m *testing.M) {
	state, err := os.MkdirTemp("", "inferwatch-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	bin.Remove()
	os.Exit(code)
}

// daemonBinary is the inferwatch binary, built once per test run.
func daemonBinary(t *testing.T) string { return bin.Path(t) }

// waitFor polls cond every 100ms until it holds or 30s have passed.
func waitFor(t *testing.T, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s\n%s", what, show())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SIGHUP keeps the running configuration on a bad file and adds a good one's group; SIGTERM removes the temporary store.
func TestDaemonReloadsOnSIGHUP(t *testing.T) {
	bin := daemonBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.yml")
	group := func(name string) string {
		return "  - name: " + name + "\n    interval: 1s\n    rules:\n      - name: up_rule\n        expr: up\n        step: 1s\n        lookback: 1m\n"
	}
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := "source:\n  url: http://127.0.0.1:1\n  timeout: 1s\nnats:\n  embedded:\n    listen: 127.0.0.1:0\ngroups:\n"
	write(head + group("first"))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	stderr := newSyncBuffer()
	cmd := exec.Command(bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0", "--log.level", "debug")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
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
	web := servingAddr(t, stderr)
	page := func() string { _, body, _ := get("http://" + web + "/metrics"); return body }
	show := func() string { return "stderr:\n" + stderr.String() + "\n/metrics:\n" + page() }
	waitFor(t, "the first group evaluated", func() bool {
		return counterAtLeast(page(), `inferwatch_group_evaluations_total{group="first"}`, 1)
	}, show)
	stores, _ := filepath.Glob(filepath.Join(tmp, "inferwatch-nats-*"))
	if len(stores) != 1 {
		t.Fatalf("temporary JetStream stores %v, want one under TMPDIR", stores)
	}

	// An invalid file: logged with its position, the old groups run on.
	broken := head + group("first") + "  - name: broken\n    interval: 1s\n    rules:\n      - name: x\n        expr: up\n        detector: nosuch\n"
	write(broken)
	badLine := strings.Count(broken[:strings.Index(broken, "nosuch")], "\n") + 1
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed reload logged", func() bool {
		return strings.Contains(stderr.String(), "reloading the configuration failed; the previous configuration keeps running")
	}, show)
	if log := stderr.String(); !strings.Contains(log, fmt.Sprintf("cfg.yml:%d:19", badLine)) || !strings.Contains(log, `unknown detector \"nosuch\"`) {
		t.Errorf("the failed reload does not name the position and the problem:\n%s", log)
	}
	if !counterAtLeast(page(), "inferwatch_config_last_reload_successful", 0) || strings.Contains(page(), "inferwatch_config_last_reload_successful 1") {
		t.Errorf("inferwatch_config_last_reload_successful is not 0 after a failed reload:\n%s", page())
	}
	before := 0
	fmt.Sscan(strings.TrimPrefix(grepLine(page(), `inferwatch_group_evaluations_total{group="first"} `), `inferwatch_group_evaluations_total{group="first"} `), &before)
	waitFor(t, "the first group still evaluated after the failed reload", func() bool {
		return counterAtLeast(page(), `inferwatch_group_evaluations_total{group="first"}`, before+2)
	}, show)

	// A valid file with a second group and an incidents section: both
	// groups run, and the incidents follow the new section.
	write(head + group("first") + group("second") + "incidents:\n  gap: 20m\n  diagnoses:\n    - name: engine_stall\n      disabled: true\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new group evaluated", func() bool {
		return strings.Contains(stderr.String(), `msg="group evaluated" group=second`)
	}, show)
	if log := stderr.String(); !strings.Contains(log, "configuration reloaded") || !strings.Contains(log, "rules_kept=1") ||
		!strings.Contains(log, `msg="incidents section applied" gap=20m0s diagnoses=5`) ||
		!strings.Contains(page(), "inferwatch_config_last_reload_successful 1") {
		t.Errorf("the reload was not reported:\n%s", show())
	}
	for _, want := range []string{`msg="rule evaluated" group=first rule=up_rule`, "rule evaluation failed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("debug log lacks %q", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGTERM\n%s", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "inferwatch-nats-*")); len(left) != 0 {
		t.Errorf("temporary JetStream store left behind: %v", left)
	}
}

func grepLine(page, prefix string) string {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
