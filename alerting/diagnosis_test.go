package alerting

import (
	"strings"
	"testing"
)

func ptr(x float64) *float64 { return &x }

// member is an incident member of signal, value against expected.
func member(rule, signal string, value, expected float64) IncidentMember {
	return IncidentMember{Rule: rule, Signal: signal, Series: "{pod=\"p0\"}", Value: JSONFloat(value), Expected: JSONFloat(expected),
		Score: 2, Direction: direction(value, expected)}
}

func TestDiagnose(t *testing.T) {
	rules := []DiagnosisRule{
		{Name: "surge", Title: "surge", When: []Condition{{Signal: "rate", Is: IsUp}}, Also: []Condition{{Signal: "latency", Is: IsUp}}},
		{Name: "hot", Title: "hot", Check: "scale out",
			When: []Condition{{Any: []Condition{{Signal: "gpu", Above: ptr(90)}, {Signal: "jitter", Detail: "x_max", Above: ptr(90)}}}},
			Also: []Condition{{Signal: "latency", Is: IsUp}, {Signal: "rate", Is: IsNormal}}},
		{Name: "cool", Title: "cool", When: []Condition{{Signal: "gpu", Below: ptr(50)}}},
	}
	f := func(name, want string, held, total int, others string, ms ...IncidentMember) {
		t.Helper()
		inc := Incident{Members: ms}
		d := Diagnose(&inc, rules)
		if d.Name != want || d.Held != held || d.Total != total || strings.Join(d.Others, ",") != others {
			t.Errorf("%s: %s %d/%d others %v, want %s %d/%d others %s\n%s", name, d.Name, d.Held, d.Total, d.Others, want, held, total, others, d)
		}
		if d.Name == DiagnosisNone && len(d.Evidence) != len(ms) {
			t.Errorf("%s: no diagnosis lists %d pieces of evidence, want one per alert (%d)", name, len(d.Evidence), len(ms))
		}
	}
	f("surge with latency", "surge", 2, 2, "", member("r", "rate", 9, 3), member("l", "latency", 2, 1))
	// The rate falling is not a surge.
	f("rate down", DiagnosisNone, 0, 0, "", member("r", "rate", 1, 3))
	// A hot GPU read from its value or, through any, from the
	// correlation's x_max.
	f("hot gpu", "hot", 3, 3, "", member("g", "gpu", 97, 70), member("l", "latency", 2, 1))
	jitter := member("j", "jitter", 0.8, 0)
	jitter.Details = map[string]any{"x_max": 99.0}
	f("hot by correlation", "hot", 2, 3, "", jitter)
	jitter.Details = map[string]any{"x_max": 80.0}
	f("jitter below saturation", DiagnosisNone, 0, 0, "", jitter)
	// Both apply: the higher confidence wins; the other is listed.
	f("surge on a hot gpu", "surge", 2, 2, "hot (0.67)", member("r", "rate", 9, 3), member("l", "latency", 2, 1), member("g", "gpu", 95, 70))
	// Below asks every alert of the signal to read under it.
	f("cool", "cool", 1, 1, "", member("g", "gpu", 10, 60))
	f("not all cool", DiagnosisNone, 0, 0, "", member("g", "gpu", 10, 60), member("g2", "gpu", 70, 60))
	// An alert without a known signal is evidence only.
	f("unknown signal", DiagnosisNone, 0, 0, "", member("x", "", 5, 1))

	inc := Incident{Members: []IncidentMember{member("g", "gpu", 97, 70)}}
	s := Diagnose(&inc, rules).String()
	for _, want := range []string{"Diagnosis: hot (confidence 0.67, 2 of 3 conditions hold)", "✓ (gpu value ≥ 90 or jitter x_max ≥ 90): g up on", "✗ latency up: no alert of it", "✓ rate normal: no alert of it", "Check: scale out"} {
		if !strings.Contains(s, want) {
			t.Errorf("the diagnosis lacks %q:\n%s", want, s)
		}
	}
}
