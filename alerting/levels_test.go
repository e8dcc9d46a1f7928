package alerting

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var levelT0 = time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)

func levelAt(min float64) int64 {
	return levelT0.Add(time.Duration(min * float64(time.Minute))).UnixMilli()
}

func TestReadingsAdd(t *testing.T) {
	var r Readings
	// Spans of five minutes from 14:00: the highest of each, with its time.
	for _, p := range []struct{ min, v float64 }{{0, 50}, {1, 70}, {2, math.NaN()}, {4.5, 60}, {5, 40}, {9, 45}, {10, math.Inf(1)}, {12, 30}} {
		r.Add(levelAt(p.min), p.v)
	}
	wantT := []int64{levelAt(1), levelAt(9), levelAt(12)}
	wantV := []float64{70, 45, 30}
	if !slices.Equal(r.T, wantT) || !slices.Equal(r.V, wantV) {
		t.Errorf("readings %v %v, want %v %v", r.T, r.V, wantT, wantV)
	}
}

func TestLevelStore(t *testing.T) {
	p := IncidentPolicy{Signals: map[string]string{"gpu": "gpu_util", "kv": "kv_cache"}}
	s := NewLevelStore(LevelOptions{Policy: p, Retain: time.Hour})
	reading := func(rule, pod string, labels map[string]string, pts ...float64) Readings {
		r := Readings{Group: "g", Rule: rule, Series: `{model="m", pod="` + pod + `"}`, Labels: map[string]string{"model": "m", "pod": pod}}
		for k, v := range labels {
			r.Labels[k] = v
		}
		for i := 0; i+1 < len(pts); i += 2 {
			r.T, r.V = append(r.T, levelAt(pts[i])), append(r.V, pts[i+1])
		}
		return r
	}
	s.Record(&Batch{Readings: []Readings{
		reading("gpu", "p0", nil, 0, 60, 5, 80, 10, 96, 15, 70),
		reading("gpu", "p1", nil, 0, 91, 5, 85),
		// The signal label names the signal of a rule the policy does not know.
		reading("waiting", "p0", map[string]string{"signal": "queue"}, 5, 12),
		// A rule without a signal is not kept.
		reading("other", "p0", nil, 5, 1e9),
	}})
	f := func(signal string, from, to float64, want float64, wantAt float64, series string) {
		t.Helper()
		l, ok := s.Peak("model=m", signal, levelT0.Add(time.Duration(from*float64(time.Minute))), levelT0.Add(time.Duration(to*float64(time.Minute))))
		if math.IsNaN(want) {
			if ok {
				t.Errorf("%s [%g, %g]: %+v, want none", signal, from, to, l)
			}
			return
		}
		if !ok || float64(l.Value) != want || l.Time.UnixMilli() != levelAt(wantAt) || !strings.Contains(l.Series, series) {
			t.Errorf("%s [%g, %g]: %+v %v, want %g at %g on %s", signal, from, to, l, ok, want, wantAt, series)
		}
	}
	f("gpu_util", 0, 15, 96, 10, `pod="p0"`)
	f("gpu_util", 0, 9, 91, 0, `pod="p1"`)
	f("gpu_util", 1, 9, 85, 5, `pod="p1"`)
	f("gpu_util", 16, 30, math.NaN(), 0, "")
	f("queue", 0, 15, 12, 5, `pod="p0"`)
	f("kv_cache", 0, 15, math.NaN(), 0, "")
	if _, ok := s.Peak("model=m", "", levelT0, levelT0.Add(time.Hour)); ok {
		t.Error("a rule without a signal was kept")
	}
	// A later batch adds after the newest held and keeps the higher of a
	// span; one starting at 70 minutes forgets what lies more than Retain
	// (an hour) before, up to 10 minutes.
	s.Record(&Batch{Readings: []Readings{reading("gpu", "p0", nil, 15, 75, 16, 99, 20, 50)}})
	f("gpu_util", 11, 19, 99, 16, `pod="p0"`)
	s.Record(&Batch{Readings: []Readings{reading("gpu", "p0", nil, 70, 40)}})
	f("gpu_util", 0, 9, math.NaN(), 0, "")
	f("gpu_util", 0, 12, 96, 10, `pod="p0"`)
	f("gpu_util", 17, 70, 50, 20, `pod="p0"`)
}

// fixedLevels answers every signal with one reading per unit.
type fixedLevels map[string]Level

func (f fixedLevels) Peak(unit, signal string, from, to time.Time) (Level, bool) {
	l, ok := f[unit+"/"+signal]
	if !ok || l.Time.Before(from) || l.Time.After(to) {
		return Level{}, false
	}
	return l, true
}

func TestDiagnoseOnLevels(t *testing.T) {
	rules := []DiagnosisRule{
		{Name: "hot", Title: "hot", When: []Condition{{Signal: "latency", Is: IsUp}, {Signal: "gpu", LevelAbove: ptr(90)}}},
		{Name: "cool", Title: "cool", When: []Condition{{Signal: "latency", Is: IsUp}, {Signal: "gpu", LevelBelow: ptr(90)}}},
	}
	p := IncidentPolicy{Gap: 10 * time.Minute, Signals: map[string]string{"lat": "latency"}, Diagnoses: rules}
	alert := AlertData{Group: "g", Rule: "lat", Series: `{model="m", pod="p0"}`, Labels: map[string]string{"model": "m", "pod": "p0"},
		Status: StatusFiring, Time: levelT0, ActiveAt: levelT0.Add(-2 * time.Minute), LastAnomalousAt: levelT0, Value: 3, Expected: 1, Score: 2}
	f := func(name string, lv Levels, want string) Incident {
		t.Helper()
		inc, evs := JoinIncident(Incident{}, alert, p, lv)
		if inc.Diagnosis.Name != want || len(evs) != 1 || evs[0].Diagnosis.Name != want {
			t.Errorf("%s: diagnosis %s, want %s\n%s", name, inc.Diagnosis.Name, want, inc.Diagnosis)
		}
		return inc
	}
	// The GPU at 95 raises no alert; its level is evidence.
	at := levelT0.Add(-5 * time.Minute)
	hot := f("hot", fixedLevels{"model=m/gpu": {Rule: "gpu_util", Series: `{model="m", pod="p0"}`, Time: at, Value: 95}}, "hot")
	if hot.Levels["gpu"].Value != 95 {
		t.Errorf("the incident keeps the levels it was diagnosed on: %+v", hot.Levels)
	}
	want := `✓ gpu reads ≥ 90: gpu_util on {model="m", pod="p0"} read 95 at 2026-11-20T13:55:00Z`
	if s := hot.Diagnosis.String(); !strings.Contains(s, want) {
		t.Errorf("the evidence lacks %q:\n%s", want, s)
	}
	f("cool", fixedLevels{"model=m/gpu": {Time: at, Value: 60}}, "cool")
	// A reading from before the gap ahead of the start does not count, and
	// with no reading neither level condition holds.
	f("too early", fixedLevels{"model=m/gpu": {Time: levelT0.Add(-13 * time.Minute), Value: 95}}, DiagnosisNone)
	f("no levels", nil, DiagnosisNone)
	// The incident keeps its levels when it is diagnosed again without a
	// store (restored after a restart): it resolves as hot.
	resolved := alert
	resolved.Status, resolved.Time = StatusResolved, levelT0.Add(time.Minute)
	next, _ := JoinIncident(hot, resolved, p, nil)
	next, evs := TickIncident(next, levelT0.Add(time.Hour), p, nil)
	if next.ResolvedAt == nil || len(evs) != 1 || evs[0].Diagnosis.Name != "hot" {
		t.Errorf("resolved without a store: %v %d events, diagnosis %s", next.ResolvedAt, len(evs), next.Diagnosis.Name)
	}
}
