package alerting

import (
	"fmt"
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

func (f fixedLevels) Changes(string, time.Time, time.Time) []LabelChange { return nil }
func (f fixedLevels) Scale(string, time.Time) (IncidentScale, bool)      { return IncidentScale{}, false }
func (f fixedLevels) Missed(string, time.Time, time.Time) (ForecastMiss, bool) {
	return ForecastMiss{}, false
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

func TestLabelChanges(t *testing.T) {
	p := IncidentPolicy{Signals: map[string]string{"lat": "latency"}}
	s := NewLevelStore(LevelOptions{Policy: p, Retain: 3 * time.Hour})
	reading := func(pod, version, image string, from, to float64) Readings {
		r := Readings{Group: "g", Rule: "lat", Series: `{model="m", pod="` + pod + `", version="` + version + `"}`,
			Labels: map[string]string{"model": "m", "pod": pod, "version": version}}
		if image != "" {
			r.Labels["image"] = image
		}
		for m := from; m <= to; m += 5 {
			r.Add(levelAt(m), 1)
		}
		return r
	}
	// v1 on both pods; a rolling update brings v2 on p1 at 30 minutes and
	// on p0 at 40; the image changes with it on p1 only.
	s.Record(&Batch{Readings: []Readings{reading("p0", "v1", "", 0, 35), reading("p1", "v1", "img:1", 0, 25)}})
	s.Record(&Batch{Readings: []Readings{reading("p1", "v2", "img:2", 30, 60), reading("p0", "v2", "", 40, 60)}})
	f := func(from, to float64, want ...string) {
		t.Helper()
		var got []string
		for _, c := range s.Changes("model=m", levelT0.Add(time.Duration(from*float64(time.Minute))), levelT0.Add(time.Duration(to*float64(time.Minute)))) {
			got = append(got, fmt.Sprintf("%s %s→%s %s %s", c.Label, c.Old, c.New, c.Time.Format("15:04"), c.Series))
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("changes in [%g, %g]: %q, want %q", from, to, got, want)
		}
	}
	f(0, 60, `version v1→v2 14:30 {model="m", pod="p1", version="v2"}`, `image img:1→img:2 14:30 {model="m", pod="p1", version="v2"}`)
	f(31, 60)
	// The first values seen are no change.
	f(0, 29)
	if c := s.Changes("model=other", levelT0, levelT0.Add(time.Hour)); len(c) != 0 {
		t.Errorf("another unit: %v", c)
	}
	// Only the labels asked for are watched.
	p.ChangeLabels = []string{}
	none := NewLevelStore(LevelOptions{Policy: p})
	none.Record(&Batch{Readings: []Readings{reading("p0", "v1", "", 0, 5), reading("p1", "v2", "", 10, 15)}})
	if c := none.Changes("model=m", levelT0, levelT0.Add(time.Hour)); len(c) != 0 {
		t.Errorf("no change labels: %v", c)
	}
}

// changed is a Levels with one label change and no readings.
type changed LabelChange

func (c changed) Peak(string, string, time.Time, time.Time) (Level, bool) { return Level{}, false }
func (c changed) Scale(string, time.Time) (IncidentScale, bool)           { return IncidentScale{}, false }
func (c changed) Missed(string, time.Time, time.Time) (ForecastMiss, bool) {
	return ForecastMiss{}, false
}
func (c changed) Changes(unit string, from, to time.Time) []LabelChange {
	if c.Time.Before(from) || c.Time.After(to) {
		return nil
	}
	return []LabelChange{LabelChange(c)}
}

func TestDiagnoseOnLabelChanges(t *testing.T) {
	rules := []DiagnosisRule{
		{Name: "rollout", Title: "rollout", When: []Condition{{Signal: "latency", Is: IsUp}, {LabelChanged: true, Labels: []string{"version"}}}},
		{Name: "any", Title: "any", When: []Condition{{Signal: "latency", Is: IsUp}, {LabelChanged: true}}},
	}
	p := IncidentPolicy{ChangeWithin: time.Hour, Signals: map[string]string{"lat": "latency"}, Diagnoses: rules}
	alert := AlertData{Group: "g", Rule: "lat", Series: `{model="m", pod="p0"}`, Labels: map[string]string{"model": "m", "pod": "p0"},
		Status: StatusFiring, Time: levelT0, ActiveAt: levelT0, LastAnomalousAt: levelT0, Value: 3, Expected: 1, Score: 2}
	f := func(name string, c changed, want, evidence string) {
		t.Helper()
		inc, _ := JoinIncident(Incident{}, alert, p, c)
		if inc.Diagnosis.Name != want || !strings.Contains(inc.Diagnosis.String(), evidence) {
			t.Errorf("%s: diagnosis %s, want %s with %q\n%s", name, inc.Diagnosis.Name, want, evidence, inc.Diagnosis)
		}
	}
	f("version", changed{Label: "version", Old: "v1", New: "v2", Time: levelT0.Add(-50 * time.Minute), Series: "s"}, "rollout",
		"✓ version changed: version v1 → v2 at 2026-11-20T13:10:00Z, on s")
	f("image", changed{Label: "image", Old: "a", New: "b", Time: levelT0.Add(-50 * time.Minute)}, "any", "✓ a label changed: image a → b")
	f("too early", changed{Label: "version", Old: "v1", New: "v2", Time: levelT0.Add(-70 * time.Minute)}, DiagnosisNone, "")
}

func TestForecastMisses(t *testing.T) {
	s := NewLevelStore(LevelOptions{Retain: time.Hour})
	miss := func(model string, min, value, upper float64) ForecastMiss {
		at := levelT0.Add(time.Duration(min * float64(time.Minute)))
		return ForecastMiss{Group: "fc", Rule: "rate", Labels: map[string]string{"model": model}, Series: `{model="` + model + `"}`,
			Time: at, Value: JSONFloat(value), Upper: JSONFloat(upper), Origin: at.Add(-time.Minute)}
	}
	// 30 over 20 is 50 % above the bound, 70 over 50 40 %: the former is
	// the furthest above.
	s.Record(&Batch{Misses: []ForecastMiss{miss("m", 5, 30, 20), miss("m", 10, 70, 50), miss("other", 6, 100, 1)}})
	f := func(from, to float64, want float64) {
		t.Helper()
		m, ok := s.Missed("model=m", levelT0.Add(time.Duration(from*float64(time.Minute))), levelT0.Add(time.Duration(to*float64(time.Minute))))
		if math.IsNaN(want) {
			if ok {
				t.Errorf("[%g, %g]: %+v, want none", from, to, m)
			}
			return
		}
		if !ok || float64(m.Value) != want {
			t.Errorf("[%g, %g]: %+v %v, want the miss of value %g", from, to, m, ok, want)
		}
	}
	f(0, 20, 30)
	f(6, 20, 70)
	f(11, 20, math.NaN())
	// A batch 71 minutes on forgets those more than an hour before it.
	s.Record(&Batch{Misses: []ForecastMiss{miss("m", 71, 11, 10)}})
	f(0, 60, math.NaN())
	f(0, 80, 11)

	rules := []DiagnosisRule{{Name: "surge", Title: "surge", When: []Condition{{Any: []Condition{{Signal: "rate", Is: IsUp}, {ForecastMissed: true}}}}}}
	p := IncidentPolicy{Gap: 10 * time.Minute, Signals: map[string]string{"lat": "latency"}, Diagnoses: rules}
	alert := AlertData{Group: "g", Rule: "lat", Series: `{model="m", pod="p0"}`, Labels: map[string]string{"model": "m", "pod": "p0"},
		Status: StatusFiring, Time: levelT0.Add(75 * time.Minute), ActiveAt: levelT0.Add(72 * time.Minute),
		LastAnomalousAt: levelT0.Add(75 * time.Minute), Value: 3, Expected: 1, Score: 2}
	inc, _ := JoinIncident(Incident{}, alert, p, s)
	want := "✓ (rate up or load above the forecast's interval): rate on {model=\"m\"} read 11 at 2026-11-20T15:11:00Z, above the upper bound 10 of its forecast from 2026-11-20T15:10:00Z"
	if inc.Diagnosis.Name != "surge" || inc.ForecastMiss == nil || !strings.Contains(inc.Diagnosis.String(), want) {
		t.Errorf("diagnosis %s, miss %+v, want surge with %q:\n%s", inc.Diagnosis.Name, inc.ForecastMiss, want, inc.Diagnosis)
	}
	alert.ActiveAt, alert.Time, alert.LastAnomalousAt = levelT0.Add(95*time.Minute), levelT0.Add(95*time.Minute), levelT0.Add(95*time.Minute)
	if inc, _ := JoinIncident(Incident{}, alert, p, s); inc.Diagnosis.Name != DiagnosisNone || inc.ForecastMiss != nil {
		t.Errorf("a miss more than the gap before the start counts: %s %+v", inc.Diagnosis.Name, inc.ForecastMiss)
	}
}

// TestLevelStoreReads: the levels wanted are those of rules whose signal
// a diagnosis asks the level of, by the policy or the rule's signal
// label, and of series with a change label.
func TestLevelStoreReads(t *testing.T) {
	above := 90.0
	p := IncidentPolicy{Signals: map[string]string{"gpu": "gpu_util", "ttft": "ttft"},
		Diagnoses: []DiagnosisRule{{Name: "x", When: []Condition{{Signal: "gpu_util", LevelAbove: &above}, {Signal: "ttft", Is: IsUp}}}}}
	s := NewLevelStore(LevelOptions{Policy: p})
	for _, tc := range []struct {
		rule   string
		labels map[string]string
		want   bool
	}{
		{"gpu", nil, true},
		{"ttft", nil, false},  // asked of its direction only
		{"other", nil, false}, // no signal
		{"other", map[string]string{"signal": "gpu_util"}, true},
	} {
		if got := s.Reads(tc.rule, tc.labels); got != tc.want {
			t.Errorf("Reads(%s, %v) = %v, want %v", tc.rule, tc.labels, got, tc.want)
		}
	}
	if got := s.ChangeLabels(); !slices.Equal(got, DefaultChangeLabels) {
		t.Errorf("change labels %v, want the defaults %v", got, DefaultChangeLabels)
	}
}

// TestScaleInDiagnosis: the newest scale signal of the unit, by the
// policy's grouping labels, is the incident's and its diagnosis quotes
// its desired replicas; one newer than the incident is not.
func TestScaleInDiagnosis(t *testing.T) {
	p := IncidentPolicy{By: []string{"model"}}
	s := NewLevelStore(LevelOptions{Policy: p})
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	sig := func(desired, current int, t time.Time) ScaleData {
		return ScaleData{Group: "g", Rule: "deploy", Target: `{model="m"}`, Labels: map[string]string{"model": "m"}, Time: t,
			DesiredReplicas: desired, CurrentReplicas: current, CurrentKnown: true}
	}
	s.Record(&Batch{Scales: []ScaleData{sig(5, 3, at), sig(4, 3, at.Add(-time.Minute))}})
	got, ok := s.Scale("model=m", at)
	if !ok || got.DesiredReplicas != 5 || got.CurrentReplicas == nil || *got.CurrentReplicas != 3 || got.Rule != "deploy" {
		t.Fatalf("Scale = %+v, %v; want the newest, 5 desired and 3 running", got, ok)
	}
	if _, ok := s.Scale("model=m", at.Add(-time.Second)); ok {
		t.Error("a signal newer than asked for was given")
	}
	if _, ok := s.Scale("model=other", at); ok {
		t.Error("another unit's signal was given")
	}
	above := 90.0
	inc := &Incident{Unit: "model=m", Scale: &got, Members: []IncidentMember{{Signal: "gpu_util", Direction: IsUp, Value: 97}}}
	d := Diagnose(inc, []DiagnosisRule{{Name: "gpu_saturation", Title: "GPU saturation", When: []Condition{{Signal: "gpu_util", Is: IsUp, Above: &above}}}})
	want := "the scale signal asks for 5 replicas of {model=\"m\"} (3 running; rule deploy at 2026-12-06T12:00:00Z)"
	if d.Name != "gpu_saturation" || !slices.Contains(d.Evidence, want) {
		t.Errorf("diagnosis %s with evidence %q; want %q among it", d.Name, d.Evidence, want)
	}
}
