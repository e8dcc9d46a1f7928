package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/docs/schemas"
)

// Every event the daemon publishes over a week of the fleet matches docs/schemas; tail prints each of them.
func TestPublishedEventsMatchTheSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	ctx := context.Background()
	end := fleetEnd(t, time.Time{})
	vm, _ := backfillFleet(t, end)
	srv := natstest.Start(t)
	args := []string{"run", "--config", exampleConfig, "--once", "--backfill", fleetBackfill(end),
		"--source.url", vm.URL(), "--nats.url", srv.ClientURL(), "--web.listen-address", ""}
	if code, _, errOut := runCmd(t, ctx, args...); code != 0 {
		t.Fatalf("inferwatch run exited %d:\n%s", code, errOut)
	}
	st, err := natstest.JetStream(t, srv.ClientURL()).Stream(ctx, "INFERWATCH")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := int(info.State.Msgs)
	msgs := natstest.Collect(t, srv.ClientURL(), "inferwatch.>")(held, 30*time.Second)
	if len(msgs) != held || held == 0 {
		t.Fatalf("read %d of the %d messages the stream holds", len(msgs), held)
	}

	v, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]int{}
	statuses := map[string]int{}
	var bodies []string
	for _, m := range msgs {
		var ev struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Time time.Time       `json:"time"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatalf("%s: %v", m.Subject(), err)
		}
		bodies = append(bodies, string(m.Data()))
		byType[ev.Type]++
		if err := v.Validate(m.Data()); err != nil {
			t.Errorf("%s: %v\n%s", m.Subject(), err, m.Data())
			continue
		}
		if err := v.ValidateData(ev.Type, ev.Data); err != nil {
			t.Errorf("%s: %v", m.Subject(), err)
		}
		if got := m.Headers().Get("Content-Type"); got != alerting.CloudEventsContentType {
			t.Errorf("%s: Content-Type %q", m.Subject(), got)
		}
		if got := m.Headers().Get("Nats-Msg-Id"); got != ev.ID {
			t.Errorf("%s: Nats-Msg-Id %q, event id %q", m.Subject(), got, ev.ID)
		}
		// The subject follows from the data.
		var d struct{ Kind, Group, Rule, Status string }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			alerting.FindingEventType:  alerting.FindingSubject("inferwatch", d.Kind),
			alerting.AlertEventType:    alerting.AlertSubject("inferwatch", d.Group, d.Rule),
			alerting.ForecastEventType: alerting.ForecastSubject("inferwatch", d.Rule),
			alerting.ScaleEventType:    alerting.ScaleSubject("inferwatch", d.Rule),
			alerting.IncidentEventType: alerting.IncidentSubject("inferwatch", d.Group),
		}[ev.Type]
		if m.Subject() != want {
			t.Errorf("a %s event on %s, want %s", ev.Type, m.Subject(), want)
		}
		if ev.Type == alerting.AlertEventType {
			statuses[d.Status]++
		}
	}
	t.Logf("%d events validated: %v; alerts by status %v", len(msgs), byType, statuses)
	for typ := range schemas.DataFiles {
		if byType[typ] == 0 {
			t.Errorf("no %s event: the scenario should publish every type", typ)
		}
	}
	for _, s := range []alerting.Status{alerting.StatusPending, alerting.StatusFiring, alerting.StatusResolved} {
		if statuses[string(s)] == 0 {
			t.Errorf("no alert event with status %s", s)
		}
	}

	// tail replays what was published.
	n := fmt.Sprint(held)
	code, out, errOut := tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "1h", "--count", n, "--json")
	if want := strings.Join(bodies, "\n") + "\n"; code != 0 || out != want {
		t.Errorf("tail --json: exit %d, %d lines for %d messages; stderr:\n%s", code, strings.Count(out, "\n"), held, errOut)
	}
	code, out, errOut = tailCmd(t, "--nats.url", srv.ClientURL(), "--since", "1h", "--count", n)
	// One line an event; an incident's block goes on in indented lines.
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, "    ") {
			lines = append(lines, l)
		}
	}
	if code != 0 || len(lines) != held {
		t.Fatalf("tail: exit %d, %d lines for %d messages; stderr:\n%s", code, len(lines), held, errOut)
	}
	for i, l := range lines {
		var ev struct {
			Time time.Time `json:"time"`
		}
		json.Unmarshal([]byte(bodies[i]), &ev)
		if !strings.HasPrefix(l, ev.Time.UTC().Format(time.RFC3339)+"  ") || strings.Contains(l, "does not decode") {
			t.Errorf("line %d %q for\n%s", i+1, l, bodies[i])
		}
	}
	for _, l := range lines[:min(len(lines), 3)] {
		t.Log(l)
	}
}
