package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// firingOf is the firing event of a preset rule's alert on pod p0 of
// model m, value against expected, with details.
func firingOf(rule string, value, expected float64, details map[string]any) alerting.AlertData {
	at := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	return alerting.AlertData{Status: alerting.StatusFiring, Group: "fleet", Rule: rule, Kind: "anomaly", Detector: "auto",
		Series: `{model="m", pod="p0"}`, Labels: map[string]string{"model": "m", "pod": "p0", "preset": "vllm"}, Severity: "warning",
		ActiveAt: at, FiredAt: &at, LastAnomalousAt: at, Time: at, Value: alerting.JSONFloat(value), Expected: alerting.JSONFloat(expected),
		Score: 2, Details: details}
}

// readings are the levels of unit m's signals, each read at the alerts'
// time.
type readings map[string]float64

func (r readings) Peak(unit, signal string, from, to time.Time) (alerting.Level, bool) {
	at := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	v, ok := r[signal]
	if !ok || unit != "model=m" || at.Before(from) || at.After(to) {
		return alerting.Level{}, false
	}
	return alerting.Level{Rule: signal, Series: `{model="m", pod="p0"}`, Time: at, Value: alerting.JSONFloat(v)}, true
}

// rollout is readings with a version change 30 minutes before the alerts.
type rollout struct{ readings }

func (rollout) Changes(unit string, from, to time.Time) []alerting.LabelChange {
	at := time.Date(2026, 11, 25, 13, 30, 0, 0, time.UTC)
	if unit != "model=m" || at.Before(from) || at.After(to) {
		return nil
	}
	return []alerting.LabelChange{{Label: "version", Old: "0.6.1", New: "0.6.2", Time: at, Series: `{model="m", pod="p0", version="0.6.2"}`}}
}

func (r readings) Changes(string, time.Time, time.Time) []alerting.LabelChange { return nil }

func (r readings) Scale(string, time.Time) (alerting.IncidentScale, bool) {
	return alerting.IncidentScale{}, false
}

func (r readings) Missed(string, time.Time, time.Time) (alerting.ForecastMiss, bool) {
	return alerting.ForecastMiss{}, false
}

// TestDefaultDiagnoses gives the default table, through the daemon's
// policy, one incident per diagnosis made of the preset rules' alerts
// and the levels of the unit's signals, and one that none fits.
func TestDefaultDiagnoses(t *testing.T) {
	p := rules.IncidentPolicy(&rulefmt.Config{})
	var levels alerting.Levels = readings{"gpu_util": 60}
	f := func(want string, alerts ...alerting.AlertData) {
		t.Helper()
		var inc alerting.Incident
		for _, d := range alerts {
			inc, _ = alerting.JoinIncident(inc, d, p, levels)
		}
		if inc.Diagnosis.Name != want {
			t.Errorf("diagnosis %s, want %s (levels %v):\n%s", inc.Diagnosis.Name, want, levels, inc.Diagnosis)
		}
	}
	ttft := firingOf("vllm_ttft_mean", 2.4, 0.3, nil)
	waiting := firingOf("vllm_requests_waiting", 12, 1, nil)
	f("traffic_surge", firingOf("vllm_request_rate", 9, 3, nil), ttft, waiting)
	f("regression", firingOf("vllm_decode_throughput_decay", 0.35, 0, map[string]any{"eta_current": 0.35}), ttft)
	f("gpu_saturation", firingOf("dcgm_gpu_util", 99, 70, nil), ttft, waiting)
	f("gpu_saturation", firingOf("vllm_gpu_saturation_latency_jitter", 0.8, 0, map[string]any{"x_max": 99.0}), ttft)
	f("kv_cache_pressure", firingOf("vllm_kv_cache_usage", 0.97, 0.5, nil), ttft, waiting)
	// Without requests waiting, a full cache with latency up fits a
	// stalled engine (whose running requests fill the cache) better.
	f("engine_stall", firingOf("vllm_kv_cache_usage", 0.97, 0.5, nil), ttft)
	f("host_bottleneck", firingOf("vllm_gpu_saturation_latency_jitter", 0.8, 0, map[string]any{"x_max": 75.0}))
	f("engine_stall", ttft, waiting)
	f(alerting.DiagnosisNone, firingOf("dcgm_fb_used", 80000, 75000, nil))
	// Latency falling is no stall.
	f(alerting.DiagnosisNone, firingOf("vllm_ttft_mean", 0.1, 0.3, nil))

	// Levels without alerts: a GPU at 95 % with latency and a queue up is
	// saturation; a KV cache at 95 % with the GPU below saturation is
	// KV-cache pressure (a stalled engine fits as well: the table prefers
	// the former); both low, a stalled engine.
	levels = readings{"gpu_util": 95, "kv_cache": 0.5}
	f("gpu_saturation", ttft, waiting)
	levels = readings{"gpu_util": 60, "kv_cache": 0.95}
	f("kv_cache_pressure", ttft, waiting)
	levels = readings{"gpu_util": 60, "kv_cache": 0.5}
	f("engine_stall", ttft, waiting)
	// With no reading of the GPU, a stall is not told from saturation by
	// it: one condition less holds.
	levels = readings(nil)
	f("engine_stall", ttft, waiting)
	// Latency up right after a new version is a regression, decay or not.
	levels = rollout{readings{"gpu_util": 60, "kv_cache": 0.5}}
	f("regression", ttft, waiting)
	f("regression", firingOf("vllm_decode_throughput_decay", 0.35, 0, map[string]any{"eta_current": 0.35}), ttft)
}

// TestTailShowsAnIncidentAsABlock: tail prints an incident as its head
// line, then what happened in order, the evidence and what to check.
func TestTailShowsAnIncidentAsABlock(t *testing.T) {
	p := rules.IncidentPolicy(&rulefmt.Config{})
	var inc alerting.Incident
	var evs []alerting.IncidentData
	for _, d := range []alerting.AlertData{firingOf("vllm_request_rate", 9, 3, nil), firingOf("vllm_ttft_mean", 2.4, 0.3, nil)} {
		var e []alerting.IncidentData
		inc, e = alerting.JoinIncident(inc, d, p, nil)
		evs = append(evs, e...)
	}
	ev, err := alerting.NewIncidentEvent(evs[1], "")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := (&tailPrinter{w: &out}).print("inferwatch.incidents.fleet", body); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, want := range []string{
		"2026-11-25T14:00:00Z  incident    warning   fleet/model=m  updated: traffic surge (confidence 0.50), 2 alerts, pod p0, from 2026-11-25T14:00:00Z",
		"    14:00:00  fired    vllm_request_rate up on {model=\"m\", pod=\"p0\"}: 9 against an expected 3 (score 2)",
		"    14:00:00  fired    vllm_ttft_mean up on {model=\"m\", pod=\"p0\"}: 2.4 against an expected 0.3 (score 2)",
		"    ✓ (request_rate up or load above the forecast's interval): vllm_request_rate up on",
		"    ✓ latency up: vllm_ttft_mean up on",
		"    ✗ queue up: no alert of it",
		"    ✗ kv_cache up: no alert of it",
		"    check: load is above what the detector expected",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: want %q:\n%s", i+1, want, out.String())
			break
		}
	}
}
