package main

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

// natsClient starts a NATS server for the test and connects to it; the
// connection closes when the test ends, before the server stops.
func natsClient(t testing.TB) (*natsjs.Embedded, *nats.Conn) {
	t.Helper()
	srv := natstest.Start(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

// fleetWeek is how much of the generated fleet a test imports.
const fleetWeek = 7 * 24 * time.Hour

// backfillFleet starts a VictoriaMetrics for the test and imports a week of
// the generated fleet (seed 1, 30 s steps) ending at end.
func backfillFleet(t *testing.T, end time.Time) (*localvm.VM, *fleet.Fleet) {
	t.Helper()
	vm := localvm.Run(t)
	f := importFleet(t, vm, fleet.Options{Seed: 1, End: end, Duration: fleetWeek, Step: 30 * time.Second})
	return vm, f
}

// fleetEnd is when a test's generated week ends: now, to the minute (its
// 30 s samples on the minute and the half), so each run sees the fleet at
// another hour of the day, or fixed when it is not zero (a test whose
// verdict must not depend on the hour), or the RFC 3339 time in
// INFERWATCH_FLEET_END (e.g. 2026-11-29T12:07:30Z) to replay a given one.
func fleetEnd(t *testing.T, fixed time.Time) time.Time {
	s := os.Getenv("INFERWATCH_FLEET_END")
	switch {
	case s == "" && !fixed.IsZero():
		return fixed
	case s == "":
		return time.Now().Truncate(time.Minute)
	}
	end, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("INFERWATCH_FLEET_END: %v", err)
	}
	return end
}

// quietWeekEnd ends the week TestPresetsOnTheFleet judges. The injected
// incidents are found in any week, but whether the default detector raises
// a borderline finding (score 1.06 to 1.15) on the quiet model's request
// rate at a low-traffic hour depends on where the week falls (it does for
// the weeks ending 2026-11-30 12:00 UTC and at 07:44 to 07:51 UTC on
// 2026-12-06, not for this one), which a test cannot leave to the clock.
var quietWeekEnd = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fleetBackfill is the --backfill that reaches back to the start of a
// generated week ending at end: 7d when the week ends now, more when
// INFERWATCH_FLEET_END replays one that ended days ago, since the daemon
// counts its backfill back from its own clock.
func fleetBackfill(end time.Time) string {
	return (fleetWeek + time.Since(end).Round(time.Second)).String()
}

// runOnceCollecting subscribes nc to inferwatch.findings.>, runs the daemon
// once with args, and returns the findings and the raw CloudEvents the
// subscriber received. Each event's Nats-Msg-Id must be its id.
func runOnceCollecting(t *testing.T, nc *nats.Conn, args ...string) ([]alerting.Finding, []map[string]any) {
	t.Helper()
	var (
		mu       sync.Mutex
		findings []alerting.Finding
		events   []map[string]any
	)
	sub, err := nc.Subscribe("inferwatch.findings.>", func(m *nats.Msg) {
		var ev map[string]any
		var body struct {
			Data alerting.Finding `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Errorf("undecodable event: %v", err)
			return
		}
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Errorf("undecodable finding: %v", err)
			return
		}
		if m.Header.Get("Nats-Msg-Id") != ev["id"] {
			t.Errorf("Nats-Msg-Id %q differs from the event id %v", m.Header.Get("Nats-Msg-Id"), ev["id"])
		}
		mu.Lock()
		findings = append(findings, body.Data)
		events = append(events, ev)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if code, _, errOut := runCmd(t, context.Background(), args...); code != 0 {
		t.Fatalf("inferwatch run exited %d:\n%s", code, errOut)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(findings) == 0 {
		t.Fatal("no finding received")
	}
	return append([]alerting.Finding(nil), findings...), append([]map[string]any(nil), events...)
}

// checkLatencySpikesFound asserts that each injected latency spike of f gave
// a finding of one of rules on its model and pod, inside the spike (give or
// take three minutes at the end), and that f injected at least two.
func checkLatencySpikesFound(t *testing.T, f *fleet.Fleet, findings []alerting.Finding, rules ...string) {
	t.Helper()
	spikes := 0
	for _, inc := range f.Incidents {
		if inc.Kind != fleet.LatencySpike {
			continue
		}
		spikes++
		found := false
		for _, fd := range findings {
			if !slices.Contains(rules, fd.Rule) || fd.Labels["model"] != inc.Model || fd.Labels["pod"] != inc.Pod {
				continue
			}
			if !fd.WindowStart.Before(inc.Start) && !fd.WindowEnd.After(inc.End.Add(3*time.Minute)) {
				found = true
			}
		}
		if !found {
			t.Errorf("latency spike on %s/%s %v–%v produced no finding of %v on that pod in that time", inc.Model, inc.Pod, inc.Start, inc.End, rules)
		}
	}
	if spikes < 2 {
		t.Fatalf("the fleet injected %d latency spikes, want at least 2", spikes)
	}
}
