package alertmanager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/alertmanager/amtest"
)

// gettableAlert is the part of Alertmanager's GET /api/v2/alerts answer the
// test reads.
type gettableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Status       struct {
		State       string   `json:"state"`
		SilencedBy  []string `json:"silencedBy"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// TestRealAlertmanager forwards an alert to a real Alertmanager, reads it
// back through Alertmanager's own API, silences it, and resolves it.
func TestRealAlertmanager(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	base := amtest.Start(t)

	set := metrics.NewSet()
	n, err := alertmanager.New(alertmanager.Options{
		URLs:       []string{base},
		Timeout:    10 * time.Second,
		BackoffMax: 200 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Metrics:    set,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })

	const name = "InferwatchIntegration"
	firing := alertmanager.Alert{
		Labels: map[string]string{
			"alertname": name,
			"severity":  "warning",
			"model":     "llama-3-70b",
			"instance":  "vllm-0:8000",
		},
		Annotations: map[string]string{
			"summary":     "time to first token p99 is 4.2σ above its baseline",
			"description": "queue depth rose with it",
		},
		// Alertmanager answers with millisecond precision.
		StartsAt:     time.Now().Add(-2 * time.Minute).Truncate(time.Millisecond),
		GeneratorURL: "http://inferwatch.example/rules?group=latency&rule=ttft",
	}
	n.Send(firing)

	// Alertmanager marks a new alert "unprocessed" until its dispatcher
	// has seen it.
	got := waitAlert(t, base, name, "firing and active", func(a *gettableAlert) bool {
		return a != nil && a.Status.State == "active"
	})
	if !maps.Equal(got.Labels, firing.Labels) {
		t.Errorf("labels %v, want %v", got.Labels, firing.Labels)
	}
	if !maps.Equal(got.Annotations, firing.Annotations) {
		t.Errorf("annotations %v, want %v", got.Annotations, firing.Annotations)
	}
	if !got.StartsAt.Equal(firing.StartsAt) {
		t.Errorf("startsAt %s, want %s", got.StartsAt, firing.StartsAt)
	}
	if got.GeneratorURL != firing.GeneratorURL {
		t.Errorf("generatorURL %q, want %q", got.GeneratorURL, firing.GeneratorURL)
	}
	if !got.EndsAt.After(time.Now()) {
		t.Errorf("endsAt %s of a firing alert is not in the future", got.EndsAt)
	}

	// A silence on its alertname suppresses it.
	id := createSilence(t, base, name)
	got = waitAlert(t, base, name, "suppressed by silence "+id, func(a *gettableAlert) bool {
		return a != nil && a.Status.State == "suppressed" && len(a.Status.SilencedBy) > 0
	})
	if got.Status.SilencedBy[0] != id {
		t.Errorf("silenced by %v, want [%s]", got.Status.SilencedBy, id)
	}

	// Resolved, it is no longer listed among the active (or silenced) ones.
	resolved := firing
	resolved.EndsAt = time.Now()
	n.Send(resolved)
	waitAlert(t, base, name, "resolved (not listed)", func(a *gettableAlert) bool { return a == nil })

	left, err := n.Close(context.Background())
	if left != 0 || err != nil {
		t.Fatalf("Close: %d left, %v", left, err)
	}
	label := fmt.Sprintf("{alertmanager=%q}", base)
	if sent := set.GetOrCreateCounter("inferwatch_alertmanager_alerts_sent_total" + label).Get(); sent != 2 {
		t.Errorf("sent %d, want 2", sent)
	}
	if errs := set.GetOrCreateCounter("inferwatch_alertmanager_errors_total" + label).Get(); errs != 0 {
		t.Errorf("errors %d, want 0", errs)
	}
}

// waitAlert polls GET /api/v2/alerts for the alert named name among the
// active, silenced, inhibited and unprocessed ones (resolved alerts are
// never listed) until done says so, at most 30s. done gets nil when the
// alert is not listed.
func waitAlert(t *testing.T, base, name, what string, done func(*gettableAlert) bool) *gettableAlert {
	t.Helper()
	q := url.Values{
		"filter":      {fmt.Sprintf("alertname=%q", name)},
		"active":      {"true"},
		"silenced":    {"true"},
		"inhibited":   {"true"},
		"unprocessed": {"true"},
	}
	deadline := time.Now().Add(30 * time.Second)
	var last []gettableAlert
	for {
		var alerts []gettableAlert
		getJSON(t, base+"/api/v2/alerts?"+q.Encode(), &alerts)
		last = alerts
		var a *gettableAlert
		switch len(alerts) {
		case 0:
		case 1:
			a = &alerts[0]
		default:
			t.Fatalf("Alertmanager lists %d alerts named %s, want at most 1: %+v", len(alerts), name, alerts)
		}
		if done(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s not %s within 30s; Alertmanager lists %+v", name, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createSilence silences alerts named name for an hour and returns the
// silence's ID.
func createSilence(t *testing.T, base, name string) string {
	t.Helper()
	now := time.Now()
	body, _ := json.Marshal(map[string]any{
		"matchers":  []map[string]any{{"name": "alertname", "value": name, "isRegex": false, "isEqual": true}},
		"startsAt":  now.Add(-time.Second),
		"endsAt":    now.Add(time.Hour),
		"createdBy": "inferwatch integration test",
		"comment":   "checks that forwarded alerts can be silenced",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v2/silences", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("creating a silence: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/silences: %s: %s", resp.Status, b)
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.SilenceID == "" {
		t.Fatalf("POST /api/v2/silences answered %s (%v); want a silenceID", b, err)
	}
	return out.SilenceID
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: decoding %s: %v", u, b, err)
	}
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// TestIncidentInRealAlertmanager forwards an incident to a real
// Alertmanager as one alert, and the incidents only: it opens with one
// diagnosis, is updated with another (the alert under the old labels ends,
// so one is listed), and resolves.
func TestIncidentInRealAlertmanager(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	base := amtest.Start(t)
	n, err := alertmanager.New(alertmanager.Options{URLs: []string{base}, Timeout: 10 * time.Second, BackoffMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	fwd, err := alertmanager.NewForwarder(alertmanager.ForwarderOptions{Notifier: n, Incidents: true})
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now().Add(-5 * time.Minute).Truncate(time.Millisecond)
	d := alerting.IncidentData{Status: alerting.IncidentOpened, Time: opened, Incident: alerting.Incident{
		ID: "0123456789abcdef0123456789abcdef", Group: "fleet", Unit: "model=llama-3-70b",
		UnitLabels: map[string]string{"model": "llama-3-70b"}, Where: map[string][]string{"pod": {"vllm-0", "vllm-1"}},
		OpenedAt: opened, Members: []alerting.IncidentMember{{Rule: "vllm_ttft_mean", Severity: "warning"}},
		Diagnosis: alerting.Diagnosis{Name: "engine_stall", Title: "stalled engine", Check: "the pods' logs"},
	}, Summary: "model=llama-3-70b opened", Description: "what happened"}
	member := alerting.AlertData{Status: alerting.StatusFiring, Group: "fleet", Rule: "vllm_ttft_mean", Series: `{model="llama-3-70b"}`,
		Labels: map[string]string{"model": "llama-3-70b"}, Severity: "warning", FiredAt: &opened}
	send := func(d alerting.IncidentData) {
		t.Helper()
		b := alerting.Batch{Group: "fleet", Alerts: []alerting.AlertData{member}, Incidents: []alerting.IncidentData{d}}
		if err := fwd.Send(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	send(d)
	got := waitAlert(t, base, alertmanager.IncidentAlertName, "firing with its first diagnosis", func(a *gettableAlert) bool {
		return a != nil && a.Status.State == "active" && a.Labels["diagnosis"] == "engine_stall"
	})
	if got.Labels["model"] != "llama-3-70b" || got.Labels["inferwatch_kind"] != "incident" || got.Annotations["pod"] != "vllm-0, vllm-1" ||
		got.Annotations["check"] != "the pods' logs" || !got.StartsAt.Equal(opened) {
		t.Errorf("the incident's alert: %+v", got)
	}
	// The member alert, sent in the same batch, is not forwarded.
	waitAlert(t, base, "vllm_ttft_mean", "not forwarded", func(a *gettableAlert) bool { return a == nil })
	d.Status, d.Members = alerting.IncidentUpdated, append(d.Members, alerting.IncidentMember{Rule: "vllm_request_rate", Severity: "critical"})
	d.Diagnosis = alerting.Diagnosis{Name: "traffic_surge", Title: "traffic surge"}
	send(d)
	got = waitAlert(t, base, alertmanager.IncidentAlertName, "firing with its new diagnosis alone", func(a *gettableAlert) bool {
		return a != nil && a.Labels["diagnosis"] == "traffic_surge"
	})
	if got.Labels["severity"] != "critical" || got.Annotations["alerts"] != "2" {
		t.Errorf("the updated incident's alert: %+v", got)
	}
	resolved := time.Now()
	d.Status, d.ResolvedAt = alerting.IncidentResolved, &resolved
	send(d)
	waitAlert(t, base, alertmanager.IncidentAlertName, "resolved (not listed)", func(a *gettableAlert) bool { return a == nil })
}
