package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestSetAsideIsCountedAndLogged: a sample of 1e308 that auto leaves out of
// what defines normal and sigma clips is counted per rule on the metrics
// page and logged at info with its series and value, once per evaluation
// of each rule; an evaluation that sets nothing aside logs nothing.
func TestSetAsideIsCountedAndLogged(t *testing.T) {
	store := &memStore{series: []ingest.Series{minuteSeries("ttft", 400, map[int]float64{300: 1e308})}}
	now := t0.Add(399 * time.Minute)
	rule := func(name, det string) rulefmt.Rule {
		return rulefmt.Rule{Name: name, Expr: "ttft", Step: time.Minute, Lookback: 5 * time.Hour,
			Kind: rulefmt.KindAnomaly, Spec: &rulefmt.Detector{Name: det}}
	}
	groups, err := Build([]rulefmt.Group{{Name: "g", Interval: time.Minute, Rules: []rulefmt.Rule{rule("a", "auto"), rule("s", "sigma")}}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	set := metrics.NewSet()
	m, err := NewManager(ManagerOptions{Querier: store, Sink: &testSink{o: testOptions{Output: &recorder{}}, life: alerting.NewLifecycle(alerting.LifecycleOptions{})},
		Backfill: 7 * time.Hour, Now: func() time.Time { return now }, Metrics: set,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}, groups)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	set.WritePrometheus(&b)
	page := b.String()
	for _, want := range []string{
		`inferwatch_rule_samples_set_aside_total{group="g",rule="a"} 1`,
		`inferwatch_rule_samples_set_aside_total{group="g",rule="s"} 1`,
		`inferwatch_rule_shifts_accepted_total{group="g",rule="a"} 0`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the metrics page lacks %s:\n%s", want, page)
		}
	}
	lines := asideLogs(t, &logs)
	if len(lines) != 2 {
		t.Fatalf("%d set-aside log lines, want 2 (one a rule): %v", len(lines), lines)
	}
	for _, l := range lines {
		if l["series"] != `ttft{pod="p0"}` || l["value"] != 1e308 || l["samples"] != 1.0 || l["level"] != "INFO" {
			t.Errorf("log line %v, want the series, the value 1e308 and 1 sample at info", l)
		}
	}
	// The next evaluation judges an ordinary sample: nothing to log.
	store.series = []ingest.Series{minuteSeries("ttft", 401, map[int]float64{300: 1e308})}
	now = now.Add(time.Minute)
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lines := asideLogs(t, &logs); len(lines) != 0 {
		t.Errorf("an evaluation without extremes logged %v", lines)
	}
}

// asideLogs returns the set-aside lines logged since the last call.
func asideLogs(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, "set aside") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	logs.Reset()
	return out
}
