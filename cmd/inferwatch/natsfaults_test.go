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

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// brokerFaults is the set-up of the NATS fault tests: a real
// VictoriaMetrics with a live series, a NATS server the test stops and
// starts on one port and store, and the daemon as a process.
type brokerFaults struct {
	t        *testing.T
	bin      string
	vm       *localvm.VM
	addr     string
	storeDir string
	srv      *natsjs.Embedded
	cfg      string
	t0       time.Time
	spikes   map[int64]bool
	written  int // the newest second written
}

func newBrokerFaults(t *testing.T) *brokerFaults {
	b := &brokerFaults{t: t, bin: daemonBinary(t), spikes: map[int64]bool{}}
	b.vm = liveVM(t)
	// The first start takes a port the kernel chooses; restarts reuse it,
	// as a broker that comes back does.
	b.addr, b.storeDir = "127.0.0.1:0", t.TempDir()
	b.startNATS()
	b.addr = b.srv.Addr()
	t.Cleanup(func() {
		if b.srv != nil {
			b.srv.Shutdown()
		}
	})
	dir := t.TempDir()
	b.cfg = filepath.Join(dir, "cfg.yml")
	if err := os.WriteFile(b.cfg, []byte(fmt.Sprintf(`source:
  url: %s
  evaluation_delay: 0s
nats:
  url: nats://%s
  outbox_dir: %s
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
`, b.vm.URL(), b.addr, filepath.Join(dir, "outbox"))), 0o644); err != nil {
		t.Fatal(err)
	}
	b.t0 = time.Now().Truncate(time.Second)
	liveSeries(t, b.vm, b.t0.Add(-11*time.Minute), b.t0, b.normal)
	return b
}

// now is the second (since t0) the live series has reached: the samples
// between the last one written and now are written as normal ones first.
func (b *brokerFaults) now() int {
	b.t.Helper()
	s := int(time.Since(b.t0) / time.Second)
	if s > b.written {
		liveSeries(b.t, b.vm, b.t0.Add(time.Duration(b.written+1)*time.Second), b.t0.Add(time.Duration(s)*time.Second), b.normal)
		b.written = s
	}
	return s
}

func (b *brokerFaults) normal(ts time.Time) float64 { return 10 + 0.1*float64(ts.Unix()%3) }

func (b *brokerFaults) startNATS() {
	b.t.Helper()
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: b.addr, StoreDir: b.storeDir})
	if err != nil {
		b.t.Fatalf("starting NATS on %s: %v", b.addr, err)
	}
	b.srv = srv
}

func (b *brokerFaults) stopNATS() {
	b.srv.Shutdown()
	b.srv = nil
}

// daemon starts the daemon; stop ends it with sig and waits (bounded).
func (b *brokerFaults) daemon() (stop func(sig os.Signal) string) {
	b.t.Helper()
	out := newSyncBuffer()
	cmd := exec.Command(b.bin, "run", "--config", b.cfg, "--web.listen-address", "")
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	b.t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-done
		}
	})
	return func(sig os.Signal) string {
		stopped = true
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			b.t.Errorf("the daemon did not stop within 30s of %v\n%s", sig, out.String())
		}
		return out.String()
	}
}

// live writes a sample a second from after t0+from up to t0+to, spiking at
// the offsets (seconds) in spikes, and calls at[s] when second s comes.
func (b *brokerFaults) live(from, to int, spikes []int, at map[int]func()) {
	b.t.Helper()
	isSpike := map[int]bool{}
	for _, s := range spikes {
		isSpike[s] = true
		b.spikes[b.t0.Add(time.Duration(s)*time.Second).Unix()] = true
	}
	for s := from + 1; s <= to; s++ {
		ts := b.t0.Add(time.Duration(s) * time.Second)
		time.Sleep(time.Until(ts))
		v := b.normal(ts)
		if isSpike[s] {
			v = 50
		}
		liveSeries(b.t, b.vm, ts, ts, func(time.Time) float64 { return v })
		b.written = s
		if f := at[s]; f != nil {
			f()
		}
	}
}

// count reads the whole stream, waiting (bounded) until every spike has a
// finding, and returns expected, received and duplicated, and what it saw.
func (b *brokerFaults) count() (expected, received, duplicated int, seen string) {
	b.t.Helper()
	collect := natstest.Collect(b.t, "nats://"+b.addr, "inferwatch.findings.>")
	got := map[int64]int{}
	var extra []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && len(got) < len(b.spikes) {
		for _, m := range collect(100, time.Second) {
			end := eventData[alerting.Finding](b.t, m, alerting.FindingEventType).WindowEnd
			s := end.Unix()
			if !b.spikes[s] {
				extra = append(extra, end.UTC().Format(time.TimeOnly))
				continue
			}
			got[s]++
		}
	}
	for s := range b.spikes {
		if n := got[s]; n > 0 {
			received++
			duplicated += n - 1
		}
	}
	if len(extra) > 0 {
		b.t.Errorf("findings outside the spikes: %v", extra)
	}
	return len(b.spikes), received, duplicated, fmt.Sprint(got)
}

func (b *brokerFaults) check(name string) {
	b.t.Helper()
	e, r, d, seen := b.count()
	b.t.Logf("%s: findings expected %d, received %d, duplicated %d", name, e, r, d)
	if r != e || d != 0 {
		b.t.Errorf("%s: findings expected %d, received %d, duplicated %d (seen %s)", name, e, r, d, seen)
	}
}

// TestNATSOutageLosesNoFinding stops the NATS server for 30 s while the
// daemon runs and anomalies happen, and starts it again with the same
// store: every finding arrives, once.
func TestNATSOutageLosesNoFinding(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	b := newBrokerFaults(t)
	stop := b.daemon()
	b.live(0, 48, []int{4, 14, 24, 34, 44}, map[int]func(){
		8:  b.stopNATS,
		38: b.startNATS,
	})
	log := stop(syscall.SIGTERM)
	b.check("NATS stopped for 30s")
	if !strings.Contains(log, "NATS disconnected") || !strings.Contains(log, "NATS reconnected") {
		t.Errorf("the log does not tell the outage:\n%s", log)
	}
}

// TestKilledDaemonLosesNoFinding: findings made while NATS is down wait in
// the outbox; the daemon is killed (SIGKILL) with them unacknowledged,
// NATS comes back, the daemon is started again and delivers them, once.
func TestKilledDaemonLosesNoFinding(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	b := newBrokerFaults(t)
	stop := b.daemon()
	b.live(0, 20, []int{4, 12, 16}, map[int]func(){8: b.stopNATS})
	stop(syscall.SIGKILL)
	b.startNATS()
	stop = b.daemon()
	now := b.now()
	b.live(now, now+8, []int{now + 4}, nil)
	stop(syscall.SIGTERM)
	b.check("SIGKILL with findings unacknowledged")
}

// TestTerminatedDuringOutageLosesNoFinding: SIGTERM while NATS is down
// ends the daemon within a bounded time, saying how many findings it keeps;
// the next start delivers them, once.
func TestTerminatedDuringOutageLosesNoFinding(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	b := newBrokerFaults(t)
	stop := b.daemon()
	b.live(0, 20, []int{4, 12, 16}, map[int]func(){8: b.stopNATS})
	began := time.Now()
	log := stop(syscall.SIGTERM)
	took := time.Since(began)
	if !strings.Contains(log, "findings kept in the outbox for the next start") {
		t.Errorf("SIGTERM during the outage does not say what it keeps:\n%s", log)
	}
	t.Logf("SIGTERM during the outage: stopped in %s", took.Round(100*time.Millisecond))
	b.startNATS()
	stop = b.daemon()
	now := b.now()
	b.live(now, now+8, []int{now + 4}, nil)
	log = stop(syscall.SIGTERM)
	b.check("SIGTERM during a NATS outage")
	if t.Failed() {
		t.Logf("the restarted daemon's log:\n%s", log)
	}
}
