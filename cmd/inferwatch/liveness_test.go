package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// podSeries is one sample a second of load{pod=pod} from from to to, each
// valued by v.
func podSeries(pod string, from, to time.Time, v func(time.Time) float64) ingest.Series {
	s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "load"}, {Name: "pod", Value: pod}}}
	for ts := from; !ts.After(to); ts = ts.Add(time.Second) {
		s.Timestamps = append(s.Timestamps, ts.UnixMilli())
		s.Values = append(s.Values, v(ts))
	}
	return s
}

func steady(ts time.Time) float64 { return 10 + 0.1*float64(ts.Unix()%3) }

// alertEvent is what the tests read of an alert event.
type alertEvent struct {
	Status     string     `json:"status"`
	Series     string     `json:"series"`
	ActiveAt   time.Time  `json:"active_at"`
	Reason     string     `json:"reason"`
	LastSeenAt *time.Time `json:"last_seen_at"`
	LastValue  *float64   `json:"last_value"`
	Time       time.Time  `json:"time"`
}

// alertEvents reads the alert events a subscriber has received, waiting
// (bounded) until want says there are enough.
func alertEvents(t *testing.T, collect func(int, time.Duration) []jetstream.Msg, got []alertEvent, want func([]alertEvent) bool) []alertEvent {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for !want(got) && time.Now().Before(deadline) {
		for _, m := range collect(100, 500*time.Millisecond) {
			got = append(got, eventData[alertEvent](t, m, ""))
		}
	}
	return got
}

// statuses lists the events of series pod as "status" or "status(reason)".
func statuses(evs []alertEvent, pod string) string {
	var out []string
	for _, e := range evs {
		if strings.Contains(e.Series, `pod="`+pod+`"`) {
			s := e.Status
			if e.Reason != "" {
				s += "(" + e.Reason + ")"
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// Samples that reach the store 1.5 s late are asked for again and judged a step behind; the spike is reported.
func TestDaemonJudgesSamplesThatReachTheStoreLate(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  timeout: 2s
  evaluation_delay: 0s
nats:
  url: %s
groups:
  - name: late
    interval: 1s
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 2m
        detector: {name: sigma, k: 4, min_points: 30}
`, vm.URL(), srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second)
	importSeries(t, vm, podSeries("a", t0.Add(-3*time.Minute), t0.Add(-2*time.Second), steady))
	log, _, stop := daemon(t, bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0", "--outbox.dir", t.TempDir())
	web := servingAddr(t, log)
	spike := t0.Add(20 * time.Second)
	for ts := t0.Add(-time.Second); ts.Before(t0.Add(30 * time.Second)); ts = ts.Add(time.Second) {
		time.Sleep(time.Until(ts.Add(1500 * time.Millisecond))) // the sample of ts reaches the store 1.5 s late
		v := steady(ts)
		if ts.Equal(spike) {
			v = 50
		}
		importSeries(t, vm, podSeries("a", ts, ts, func(time.Time) float64 { return v }))
	}
	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.alerts.>")
	evs := alertEvents(t, collect, nil, func(evs []alertEvent) bool { return len(evs) > 0 })
	_, metrics, _ := get("http://" + web + "/metrics")
	stop()
	if len(evs) == 0 || evs[0].Status != "firing" || !evs[0].ActiveAt.Equal(spike) {
		t.Fatalf("alert events %+v, want the spike at %v firing\n%s", evs, spike.UTC(), log.String())
	}
	scored := grepLine(metrics, "inferwatch_samples_scored_total ")
	newest := grepLine(metrics, `inferwatch_rule_newest_sample_timestamp_seconds{group="late",rule="load"} `)
	var n, at float64
	fmt.Sscan(strings.TrimPrefix(scored, "inferwatch_samples_scored_total "), &n)
	fmt.Sscan(newest[strings.LastIndexByte(newest, ' ')+1:], &at)
	if n < 120+20 || time.Since(time.UnixMilli(int64(at*1000))) > 10*time.Second {
		t.Errorf("%v samples judged, the newest at %v: want the history and a sample a second since\n%s", n, at, metrics)
	}
	if !strings.Contains(log.String(), "samples reach the store after the rule first asks for them") {
		t.Errorf("the log does not say that samples came late:\n%s", log.String())
	}
}

// Alerts of series that vanish resolve as absent, across a restart too; a series that comes back starts a new episode.
func TestDaemonEndsAlertsOfVanishedSeries(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  timeout: 2s
  evaluation_delay: 1s
nats:
  url: %s
groups:
  - name: pods
    interval: 1s
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 2m
        resolve_after_absent: 5s
        detector: {name: sigma, k: 4, min_points: 30}
`, vm.URL(), srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second).Add(3 * time.Second)
	spikeAt := func(at time.Time) func(time.Time) float64 {
		return func(ts time.Time) float64 {
			if ts.Equal(at) {
				return 50
			}
			return steady(ts)
		}
	}
	importSeries(t, vm, podSeries("a", t0.Add(-3*time.Minute), t0, steady), podSeries("b", t0.Add(-3*time.Minute), t0, steady))
	collect := natstest.Collect(t, srv.ClientURL(), "inferwatch.alerts.>")
	outbox := t.TempDir()
	log, _, stop := daemon(t, bin, "run", "--config", cfg, "--web.listen-address", "", "--outbox.dir", outbox)
	// a: a spike at +5 s, its last sample; b: a spike at +9 s, its last.
	for ts := t0.Add(time.Second); !ts.After(t0.Add(9 * time.Second)); ts = ts.Add(time.Second) {
		time.Sleep(time.Until(ts))
		if !ts.After(t0.Add(5 * time.Second)) {
			importSeries(t, vm, podSeries("a", ts, ts, spikeAt(t0.Add(5*time.Second))))
		}
		importSeries(t, vm, podSeries("b", ts, ts, spikeAt(t0.Add(9*time.Second))))
	}
	evs := alertEvents(t, collect, nil, func(evs []alertEvent) bool {
		return statuses(evs, "a") == "firing resolved(absent)" && statuses(evs, "b") == "firing"
	})
	stop()
	if statuses(evs, "a") != "firing resolved(absent)" || statuses(evs, "b") != "firing" {
		t.Fatalf("before the restart: a %q, b %q\n%s", statuses(evs, "a"), statuses(evs, "b"), log.String())
	}
	for _, e := range evs {
		if e.Status == "resolved" && !lastSeen(e, t0.Add(5*time.Second)) {
			t.Errorf("a's resolved event: last value %v at %v, want 50 at %v", e.LastValue, e.LastSeenAt, t0.Add(5*time.Second))
		}
	}
	// a comes back at +14 s; the daemon starts again at +16 s, when b has
	// had no sample for seven seconds; a spikes again at +24 s.
	for ts := t0.Add(14 * time.Second); !ts.After(t0.Add(28 * time.Second)); ts = ts.Add(time.Second) {
		time.Sleep(time.Until(ts))
		importSeries(t, vm, podSeries("a", ts, ts, spikeAt(t0.Add(24*time.Second))))
		if ts.Equal(t0.Add(16 * time.Second)) {
			log, _, stop = daemon(t, bin, "run", "--config", cfg, "--web.listen-address", "", "--outbox.dir", outbox)
		}
	}
	evs = alertEvents(t, collect, evs, func(evs []alertEvent) bool {
		return statuses(evs, "a") == "firing resolved(absent) firing resolved(normal)" && statuses(evs, "b") == "firing resolved(absent)"
	})
	stop()
	if statuses(evs, "a") != "firing resolved(absent) firing resolved(normal)" || statuses(evs, "b") != "firing resolved(absent)" {
		t.Fatalf("after the restart: a %q, b %q\n%s", statuses(evs, "a"), statuses(evs, "b"), log.String())
	}
	for _, e := range evs {
		t.Logf("%s %s %s reason=%q last_value=%v last_seen_at=%v active_at=%s", e.Time.Sub(t0), e.Series, e.Status, e.Reason,
			deref(e.LastValue), e.LastSeenAt, e.ActiveAt.Sub(t0))
	}
	for _, e := range evs {
		switch {
		case strings.Contains(e.Series, `"b"`) && e.Status == "resolved" && !lastSeen(e, t0.Add(9*time.Second)):
			t.Errorf("b's resolved event after the restart: last value %v at %v, want 50 at %v", e.LastValue, e.LastSeenAt, t0.Add(9*time.Second))
		case strings.Contains(e.Series, `"a"`) && e.Status == "firing" && e.Time.After(t0.Add(10*time.Second)) && !e.ActiveAt.Equal(t0.Add(24*time.Second)):
			t.Errorf("a's new episode is active at %v, want %v", e.ActiveAt, t0.Add(24*time.Second))
		}
	}
}

func deref(x *float64) any {
	if x == nil {
		return nil
	}
	return *x
}

// lastSeen reports whether a resolved event gives the spike of 50 at last
// as the series' last value: at last, or at a point up to five steps later
// that VictoriaMetrics filled from it (a range of more than one point
// fills up to five scrape intervals of a second).
func lastSeen(e alertEvent, last time.Time) bool {
	return e.LastValue != nil && *e.LastValue == 50 && e.LastSeenAt != nil &&
		!e.LastSeenAt.Before(last) && !e.LastSeenAt.After(last.Add(5*time.Second))
}

// TestDaemonSaysItWasPaused: a daemon stopped (SIGSTOP) for four of its
// one-second intervals says, once it runs again, that it did not evaluate
// for that long because it was paused or the clock jumped — not that an
// evaluation overran — and counts the pause.
func TestDaemonSaysItWasPaused(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := localvm.Run(t)
	srv := natstest.Start(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
nats:
  url: %s
groups:
  - name: paused
    interval: 1s
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 1m
        detector: sigma
`, vm.URL(), srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	log, pid, stop := daemon(t, bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0", "--log.level", "debug", "--outbox.dir", t.TempDir())
	web := servingAddr(t, log)
	waitFor(t, "two evaluations", func() bool { return strings.Count(log.String(), `msg="group evaluated"`) >= 2 }, log.String)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pause logged", func() bool { return strings.Contains(log.String(), "process paused or clock jumped") }, log.String)
	_, metrics, _ := get("http://" + web + "/metrics")
	stop()
	if strings.Contains(log.String(), "overran") {
		t.Errorf("the pause was reported as an overrun:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "no evaluation for 4s") && !strings.Contains(log.String(), "no evaluation for 5s") {
		t.Errorf("the log does not say how long no evaluation ran:\n%s", log.String())
	}
	if !counterAtLeast(metrics, "inferwatch_evaluation_pauses_total", 1) || !counterAtLeast(metrics, `inferwatch_group_missed_iterations_total{group="paused"}`, 3) {
		t.Errorf("the pause is not counted:\n%s", metrics)
	}
}

// TestDaemonForgetsSeriesThatStopped: 20 steady pods and 100 that live
// three seconds each: the series the daemon tracks rise with them and come
// back to the 20 within forget_after of the last one's last sample, each
// forgotten one counted.
func TestDaemonForgetsSeriesThatStopped(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU
	bin := daemonBinary(t)
	vm := liveVM(t)
	srv := natstest.Start(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  timeout: 2s
  evaluation_delay: 1s
nats:
  url: %s
groups:
  - name: churn
    interval: 1s
    rules:
      - name: load
        expr: load
        step: 1s
        lookback: 1m
        resolve_after_absent: 3s
        forget_after: 5s
        detector: {name: sigma, min_points: 10}
`, vm.URL(), srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second)
	var hist []ingest.Series
	for i := range 20 {
		hist = append(hist, podSeries(fmt.Sprint("steady-", i), t0.Add(-time.Minute), t0, steady))
	}
	importSeries(t, vm, hist...)
	log, _, stop := daemon(t, bin, "run", "--config", cfg, "--web.listen-address", "127.0.0.1:0", "--outbox.dir", t.TempDir())
	web := servingAddr(t, log)
	gauge := func(name string) float64 {
		_, page, _ := get("http://" + web + "/metrics")
		line := grepLine(page, name+" ")
		var v float64
		fmt.Sscan(strings.TrimPrefix(line, name+" "), &v)
		return v
	}
	peak := 0.0
	// Pods burst-0…99 start two a second from +2 s and live 3 s each.
	last := t0.Add(2*time.Second + 49*time.Second + 2*time.Second)
	for ts := t0.Add(time.Second); !ts.After(last.Add(12 * time.Second)); ts = ts.Add(time.Second) {
		time.Sleep(time.Until(ts))
		var now []ingest.Series
		for i := range 20 {
			now = append(now, podSeries(fmt.Sprint("steady-", i), ts, ts, steady))
		}
		for i := range 100 {
			born := t0.Add(2*time.Second + time.Duration(i/2)*time.Second)
			if !ts.Before(born) && ts.Before(born.Add(3*time.Second)) {
				now = append(now, podSeries(fmt.Sprint("burst-", i), ts, ts, steady))
			}
		}
		importSeries(t, vm, now...)
		peak = max(peak, gauge("inferwatch_series_tracked"))
	}
	tracked, forgotten := gauge("inferwatch_series_tracked"), gauge("inferwatch_series_forgotten_total")
	stop()
	if peak < 25 || tracked != 20 || forgotten != 100 {
		t.Fatalf("tracked at most %v, %v at the end with %v forgotten; want more than the 20 steady ones during the burst, then 20, and the 100 forgotten\n%s",
			peak, tracked, forgotten, log.String())
	}
}
