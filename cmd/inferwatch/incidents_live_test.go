package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/alertmanager/amtest"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
)

// TestIncidentAcrossRestarts runs the daemon (`run --once`, one process per
// evaluation) over the latency of two pods of one model in a real
// VictoriaMetrics, with a real NATS keeping the state and a real
// Alertmanager. Both pods spike: one incident of the model lists both, on
// NATS and as one InferwatchIncident alert in Alertmanager. The daemon
// restarts while the spike goes on: the incident is restored, not opened
// again. The latency clears and the gap passes: it resolves, on NATS and
// in Alertmanager.
func TestIncidentAcrossRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics, NATS and Alertmanager")
	}
	vm := liveVM(t)
	srv := natstest.Start(t)
	am := amtest.Start(t)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`source:
  url: %s
  evaluation_delay: 0s
nats:
  url: %s
alertmanager:
  urls: [%s]
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
        labels: {signal: latency}
incidents:
  gap: 2s
`, vm.URL(), srv.ClientURL(), am)), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(from, to time.Time, v func(time.Time) float64) {
		t.Helper()
		for _, pod := range []string{"p0", "p1"} {
			s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "ttft"}, {Name: "model", Value: "m1"}, {Name: "pod", Value: pod}}}
			for ts := from; !ts.After(to); ts = ts.Add(time.Second) {
				s.Timestamps = append(s.Timestamps, ts.UnixMilli())
				s.Values = append(s.Values, v(ts))
			}
			importSeries(t, vm, s)
		}
	}
	normal := func(ts time.Time) float64 { return 10 + 0.1*float64(ts.Unix()%3) }
	spike := func(time.Time) float64 { return 50 }
	incidents := natstest.Collect(t, srv.ClientURL(), "inferwatch.incidents.>")
	events := func(want int) []alerting.IncidentData {
		t.Helper()
		var out []alerting.IncidentData
		for _, m := range incidents(want, 5*time.Second) {
			if m.Subject() != "inferwatch.incidents.latency" {
				t.Errorf("subject %q", m.Subject())
			}
			out = append(out, eventData[alerting.IncidentData](t, m, alerting.IncidentEventType))
		}
		return out
	}
	amIncident := func(what string, done func(n int, labels map[string]string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			a := amAlerts(t, am, alertmanager.IncidentAlertName)
			var labels map[string]string
			if len(a) > 0 && !strings.EqualFold(a[0].Status.State, "unprocessed") && a[0].EndsAt.After(time.Now()) {
				labels = a[0].Labels
			} else {
				a = nil
			}
			if done(len(a), labels) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Alertmanager holds %+v, want %s", a, what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	now := time.Now().Truncate(time.Second)
	write(now.Add(-11*time.Minute), now.Add(-7*time.Second), normal)
	write(now.Add(-6*time.Second), now, spike)
	waitPast(now)
	runOnce(t, cfg, "--backfill", "1m")
	got := events(2)
	if len(got) != 2 || got[0].Status != alerting.IncidentOpened || got[1].Status != alerting.IncidentUpdated || got[0].ID != got[1].ID {
		t.Fatalf("first run: incident events %+v, want opened and updated", got)
	}
	inc := got[1]
	if inc.Unit != "model=m1" || len(inc.Members) != 2 || !slices.Equal(inc.Where["pod"], []string{"p0", "p1"}) || inc.Diagnosis.Name != "engine_stall" {
		t.Fatalf("first run: incident %s with %d alerts, pods %v, diagnosis %s:\n%s", inc.Unit, len(inc.Members), inc.Where["pod"], inc.Diagnosis.Name, inc.Description)
	}
	amIncident("the incident firing", func(n int, l map[string]string) bool {
		return n == 1 && l["model"] == "m1" && l["diagnosis"] == "engine_stall" && l["incident_id"] == inc.ID
	})

	// The spike goes on while the daemon restarts: the incident is
	// restored, and nothing is opened again.
	next := time.Now().Truncate(time.Second)
	write(now.Add(time.Second), next, spike)
	waitPast(next)
	runOnce(t, cfg)
	if more := events(1); len(more) != 0 {
		t.Fatalf("after a restart with the spike going on: %+v, want nothing", more)
	}

	// The latency clears, and the gap (2s) and the settle time (the rule's
	// for, 4s) pass: the restarted daemon resolves the incident.
	clear := time.Now().Truncate(time.Second)
	write(next.Add(time.Second), clear.Add(9*time.Second), normal)
	waitPast(clear.Add(9 * time.Second))
	runOnce(t, cfg)
	got = events(1)
	if len(got) != 1 || got[0].Status != alerting.IncidentResolved || got[0].ID != inc.ID || got[0].ResolvedAt == nil {
		t.Fatalf("after clearing: %+v, want the incident resolved", got)
	}
	amIncident("no incident firing", func(n int, _ map[string]string) bool { return n == 0 })
}
