package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/internal/testbin"
	"github.com/nats-io/nats.go/jetstream"
)

// The helpers the daemon tests share: the binary, running it (once, or as
// a daemon), waiting for the wall clock and for its log, writing series
// into the store, and reading its events back from the stream.

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

func grepLine(page, prefix string) string {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// daemon runs the binary with args, its log in the returned buffer; it is
// killed when the test ends unless stop was called. stop sends SIGTERM and
// waits (bounded) for a clean exit.
func daemon(t *testing.T, bin string, args ...string) (log *syncBuffer, pid int, stop func()) {
	t.Helper()
	log = newSyncBuffer()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", err, log.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("still running 30s after SIGTERM\n%s", log.String())
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stopped = true
			cmd.Process.Kill()
			<-done
		}
	})
	return log, cmd.Process.Pid, stop
}

func runCmd(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// importSeries writes the series into vm.
func importSeries(t testing.TB, vm *localvm.VM, ss ...ingest.Series) {
	t.Helper()
	var body bytes.Buffer
	for _, s := range ss {
		if err := ingest.WriteImportJSONL(&body, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := vm.Import(context.Background(), &body); err != nil {
		t.Fatal(err)
	}
}

// liveSeries writes one series with a sample a second from from to to
// (inclusive) into vm, value v(t).
func liveSeries(t *testing.T, vm *localvm.VM, from, to time.Time, v func(time.Time) float64) {
	t.Helper()
	s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: "p0"}}}
	for ts := from; !ts.After(to); ts = ts.Add(time.Second) {
		s.Timestamps = append(s.Timestamps, ts.UnixMilli())
		s.Values = append(s.Values, v(ts))
	}
	importSeries(t, vm, s)
}

// amAlerts reads the alerts Alertmanager holds for alertname.
func amAlerts(t *testing.T, base, alertname string) []struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   time.Time         `json:"endsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
} {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts?filter=" + "alertname%3D%22" + alertname + "%22")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []struct {
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
		EndsAt   time.Time         `json:"endsAt"`
		Status   struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// runOnce runs inferwatch run --once on cfg in this process, without the
// HTTP listener, with extra flags, and fails the test unless it exits 0.
func runOnce(t *testing.T, cfg string, extra ...string) {
	t.Helper()
	args := append([]string{"run", "--config", cfg, "--once", "--web.listen-address", ""}, extra...)
	if code, _, errOut := runCmd(t, context.Background(), args...); code != 0 {
		t.Fatalf("inferwatch run exited %d:\n%s", code, errOut)
	}
}

// waitPast waits until the wall clock has passed ts by 1.1s, so that an
// evaluation started then reaches the sample of ts.
func waitPast(ts time.Time) { time.Sleep(time.Until(ts.Add(1100 * time.Millisecond))) }

// eventOf decodes the event m holds: its id, and its data into T; the
// event must be of evType unless it is "".
func eventOf[T any](t testing.TB, m jetstream.Msg, evType string) (id string, data T) {
	t.Helper()
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data T      `json:"data"`
	}
	if err := json.Unmarshal(m.Data(), &ev); err != nil || (evType != "" && ev.Type != evType) {
		t.Fatalf("event on %s, want type %q: %v: %s", m.Subject(), evType, err, m.Data())
	}
	return ev.ID, ev.Data
}

// eventData is the data of the event m holds (eventOf).
func eventData[T any](t testing.TB, m jetstream.Msg, evType string) T {
	t.Helper()
	_, d := eventOf[T](t, m, evType)
	return d
}

// liveVM starts VictoriaMetrics for a test of the live daemon: samples are
// visible at once and answers are not cached, so what a test writes is
// what the next evaluation reads.
func liveVM(t *testing.T) *localvm.VM {
	return localvm.Run(t, "-search.latencyOffset=0s", "-search.disableCache")
}

// importFleet generates the fleet of opts and imports its series into vm.
func importFleet(t *testing.T, vm *localvm.VM, opts fleet.Options) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := f.WriteImportJSONL(pw)
		pw.CloseWithError(err)
	}()
	if err := vm.Import(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	return f
}
