package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager/amtest"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
)

// An alert goes pending, firing and resolved on NATS and in Alertmanager, and a restart does not fire it again.
func TestAlertLifecycleAcrossRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and Alertmanager")
	}
	vm := liveVM(t)
	srv := natstest.Start(t)
	am := amtest.Start(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  evaluation_delay: 0s
nats:
  url: %s
alertmanager:
  urls: [%s]
  external_url: http://inferwatch.example:9464/alerts
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
        for: 4s
        labels: {team: serving}
`, vm.URL(), srv.ClientURL(), am)), 0o644); err != nil {
		t.Fatal(err)
	}
	normal := func(ts time.Time) float64 { return 10 + 0.1*float64(ts.Unix()%3) }
	spike := func(time.Time) float64 { return 50 }
	alerts := natstest.Collect(t, srv.ClientURL(), "inferwatch.alerts.>")
	findings := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")
	statuses := func(want int) []alerting.AlertData {
		t.Helper()
		var out []alerting.AlertData
		for _, m := range alerts(want, 5*time.Second) {
			if m.Subject() != "inferwatch.alerts.latency.ttft_spike" {
				t.Errorf("subject %q", m.Subject())
			}
			out = append(out, eventData[alerting.AlertData](t, m, alerting.AlertEventType))
		}
		return out
	}

	// Eleven minutes of normal latency, then a spike: the last 6 seconds.
	// (A sustained spike becomes the detector's new normal as it fills the
	// window: the 10m lookback keeps it anomalous for the test's minute.)
	now := time.Now().Truncate(time.Second)
	start := now.Add(-11 * time.Minute)
	liveSeries(t, vm, start, now.Add(-7*time.Second), normal)
	liveSeries(t, vm, now.Add(-6*time.Second), now, spike)
	waitPast(now)
	runOnce(t, cfg, "--backfill", "1m")
	got := statuses(2)
	if len(got) != 2 || got[0].Status != alerting.StatusPending || got[1].Status != alerting.StatusFiring ||
		got[1].Labels["team"] != "serving" || got[1].Series != `ttft{pod="p0"}` || got[1].Severity != "critical" ||
		!got[1].ActiveAt.Equal(now.Add(-6*time.Second)) || got[1].FiredAt == nil || !got[1].FiredAt.Equal(now.Add(-2*time.Second)) {
		t.Fatalf("first run: alert events %+v", got)
	}
	if fs := findings(2, time.Second); len(fs) != 1 {
		t.Fatalf("first run: %d findings, want 1", len(fs))
	}
	deadline := time.Now().Add(20 * time.Second)
	for a := amAlerts(t, am, "ttft_spike"); len(a) != 1 || a[0].Status.State != "active" || a[0].Labels["pod"] != "p0" ||
		a[0].Labels["inferwatch_group"] != "latency" || a[0].Labels["severity"] != "critical"; a = amAlerts(t, am, "ttft_spike") {
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager holds %+v, want the firing alert", a)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The spike goes on while the daemon restarts: not fired again.
	next := time.Now().Truncate(time.Second)
	liveSeries(t, vm, now.Add(time.Second), next, spike)
	waitPast(next)
	runOnce(t, cfg)
	if more := statuses(1); len(more) != 0 {
		t.Fatalf("after a restart with the spike going on: %+v, want nothing (the alert fires already)", more)
	}

	// The latency clears: the restarted daemon resolves the alert.
	clear := time.Now().Truncate(time.Second)
	liveSeries(t, vm, next.Add(time.Second), clear.Add(2*time.Second), normal)
	waitPast(clear.Add(2 * time.Second))
	runOnce(t, cfg)
	got = statuses(1)
	if len(got) != 1 || got[0].Status != alerting.StatusResolved || got[0].ResolvedAt == nil ||
		got[0].ResolvedAt.Before(next) || !got[0].ActiveAt.Equal(now.Add(-6*time.Second)) {
		t.Fatalf("after clearing: %+v, want the alert resolved", got)
	}
	deadline = time.Now().Add(20 * time.Second)
	for a := amAlerts(t, am, "ttft_spike"); len(a) != 0 && !strings.EqualFold(a[0].Status.State, "unprocessed") && !a[0].EndsAt.Before(time.Now().Add(time.Second)); a = amAlerts(t, am, "ttft_spike") {
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager still holds %+v after the resolution", a)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOverriddenLabelKeepsSeriesApart: two series that differ only in a
// label the rule's labels override are two findings with their own ids:
// neither is dropped by JetStream as a duplicate of the other.
func TestOverriddenLabelKeepsSeriesApart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	vm := liveVM(t)
	srv := natstest.Start(t)
	now := time.Now().Truncate(time.Second)
	for _, team := range []string{"a", "b"} {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "pod", Value: "p0"}, {Name: "team", Value: team}}}
		for ts := now.Add(-11 * time.Minute); !ts.After(now); ts = ts.Add(time.Second) {
			v := 10 + 0.1*float64(ts.Unix()%3)
			if ts.Equal(now.Add(-2 * time.Second)) {
				v = 50
			}
			s.Timestamps, s.Values = append(s.Timestamps, ts.UnixMilli()), append(s.Values, v)
		}
		importSeries(t, vm, s)
	}
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source: {url: %s, evaluation_delay: 0s}
nats: {url: %s, outbox_dir: none}
groups:
  - name: latency
    interval: 1s
    rules:
      - name: ttft_spike
        expr: ttft
        step: 1s
        lookback: 10m
        detector: {name: sigma, k: 4, min_points: 30}
        labels: {team: serving}
`, vm.URL(), srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	waitPast(now)
	runOnce(t, cfg, "--backfill", "1m")
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.findings.>")(3, 3*time.Second)
	series := map[string]bool{}
	ids := map[string]bool{}
	for _, m := range msgs {
		id, f := eventOf[alerting.Finding](t, m, alerting.FindingEventType)
		series[f.Series], ids[id] = true, true
		if f.Labels["team"] != "serving" {
			t.Errorf("the rule's label did not override: %v", f.Labels)
		}
	}
	t.Logf("two series differing only in an overridden label: findings expected 2, received %d, duplicated %d", len(series), len(msgs)-len(series))
	if len(msgs) != 2 || len(series) != 2 || len(ids) != 2 {
		t.Fatalf("%d findings (series %v, ids %v), want 2 with their own ids", len(msgs), series, ids)
	}
}
