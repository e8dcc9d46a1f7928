package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting/natstest"
)

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
