package rules

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

type eventRecorder struct {
	mu       sync.Mutex
	subjects []string
	events   []alerting.Event
	fail     bool
}

func (r *eventRecorder) PublishEvent(_ context.Context, subject string, ev alerting.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return context.DeadlineExceeded
	}
	if err := ev.Validate(); err != nil {
		return err
	}
	r.subjects = append(r.subjects, subject)
	r.events = append(r.events, ev)
	return nil
}

func (r *eventRecorder) take() ([]string, []alerting.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, e := r.subjects, r.events
	r.subjects, r.events = nil, nil
	return s, e
}

// hourly is a per-minute request rate with an hourly cycle between 20 and
// 40 req/s for model m, from t0 for n minutes, times surge in [from, to).
func hourly(m string, n int, surge float64, from, to int) ingest.Series {
	s := ingest.Series{Labels: ingest.Labels{{Name: "model", Value: m}}}
	for i := range n {
		v := 30 + 10*math.Sin(2*math.Pi*float64(i)/60)
		if i >= from && i < to {
			v *= surge
		}
		s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.Values = append(s.Values, v)
	}
	return s
}

func constant(labels ingest.Labels, n int, v float64) ingest.Series {
	s := ingest.Series{Labels: labels}
	for i := range n {
		s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.Values = append(s.Values, v)
	}
	return s
}

func forecastGroups() []rulefmt.Group {
	return []rulefmt.Group{{Name: "fc", Interval: time.Minute, Rules: []rulefmt.Rule{
		{Name: "rate", Expr: "rate", Step: time.Minute, Lookback: 7 * time.Hour, Labels: map[string]string{"team": "serving"},
			Kind: rulefmt.KindForecast, Spec: &rulefmt.Forecast{Expr: "rate", Step: time.Minute, History: 7 * time.Hour, Horizon: 10 * time.Minute,
				Model: "auto", Level: 0.9, Period: time.Hour}},
		{Name: "deploy", Expr: "replicas", Step: time.Minute, Lookback: time.Hour,
			Kind: rulefmt.KindScale, Spec: &rulefmt.Scale{Forecast: "rate", On: []string{"model"}, Replicas: "replicas", Waiting: "waiting",
				CapacityPerReplica: 10, MinReplicas: 1, MaxReplicas: 20, ScaleDownStableIntervals: 3, ScaleDownMargin: rulefmt.DefaultScaleDownMargin, Cooldown: 5 * time.Minute,
				GPUMemoryHigh: 0.8, WaitingPerReplica: 5, P99Near: 0.9}},
	}}}
}

func TestForecastRulePublishesTheOutlook(t *testing.T) {
	n := 8 * 60
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": {hourly("a", n, 1, 0, 0)}}}
	events := &eventRecorder{}
	now := t0.Add(time.Duration(n-2) * time.Minute)
	e, err := newTestManager(testOptions{Groups: forecastGroups()[:1], Querier: store, Output: &recorder{}, Events: events,
		EventPrefix: "iw", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	subjects, evs := events.take()
	if len(evs) != 1 || subjects[0] != "iw.forecasts.rate" || evs[0].Type != alerting.ForecastEventType {
		t.Fatalf("subjects %v events %+v", subjects, evs)
	}
	var d alerting.ForecastData
	if err := json.Unmarshal(evs[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	origin := now.Truncate(time.Minute)
	if !d.Origin.Equal(origin) || len(d.Points) != 10 || d.Labels["model"] != "a" || d.Labels["team"] != "serving" ||
		d.StepSeconds != 60 || d.HorizonSeconds != 600 || d.Level != 0.9 || d.Model == "" || d.Fallback != "" {
		t.Fatalf("forecast %+v", d)
	}
	// The series is a clean hourly sine: the forecast follows it.
	for i, p := range d.Points {
		k := int(p.Time.Sub(t0) / time.Minute)
		want := 30 + 10*math.Sin(2*math.Pi*float64(k)/60)
		if math.Abs(float64(p.Mean)-want) > 1 || !(p.Lower <= p.Mean && p.Mean <= p.Upper) {
			t.Errorf("lead %d at %v: %v [%v, %v], want about %.2f", i+1, p.Time, p.Mean, p.Lower, p.Upper, want)
		}
	}
	if d.Peak < d.Points[0].Mean || d.UpperPeak < d.Peak || d.PeakTime.Before(d.Points[0].Time) {
		t.Errorf("peak %v at %v, upper %v", d.Peak, d.PeakTime, d.UpperPeak)
	}
	if d.Accuracy.N < 40 || float64(d.Accuracy.MAE) > 1 || float64(d.Accuracy.NaiveMAE) < 2 {
		t.Errorf("accuracy %+v: want ≥ 40 scored forecasts, MAE below 1 and the naive MAE well above", d.Accuracy)
	}

	// The same evaluation time again: nothing new, nothing published.
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, evs := events.take(); len(evs) != 0 {
		t.Fatalf("re-published %d forecasts without new points", len(evs))
	}
	// A minute later: one forecast from the new origin, with a new id.
	now = now.Add(time.Minute)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, evs2 := events.take()
	var d2 alerting.ForecastData
	if len(evs2) != 1 || json.Unmarshal(evs2[0].Data, &d2) != nil || !d2.Origin.Equal(origin.Add(time.Minute)) || evs2[0].ID == evs[0].ID {
		t.Fatalf("second forecast %+v", evs2)
	}
	if d2.Accuracy.N != d.Accuracy.N+1 {
		t.Errorf("accuracy counted %d forecasts, then %d; want one more", d.Accuracy.N, d2.Accuracy.N)
	}
}

// TestForecastRuleReportsMisses: a forecast rule replaying a backfill
// reports the points far above the interval of its own last forecast:
// the first point of a surge to twice the load, none before it.
func TestForecastRuleReportsMisses(t *testing.T) {
	n := 8 * 60
	surge := n - 30
	series := hourly("a", n, 2, surge, n)
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": {series}}}
	out := &recorder{}
	now := t0.Add(time.Duration(n-1) * time.Minute)
	e, err := newTestManager(testOptions{Groups: forecastGroups()[:1], Querier: store, Output: out, Backfill: 2 * time.Hour,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.misses) == 0 {
		t.Fatal("no misses reported")
	}
	first := out.misses[0]
	if want := t0.Add(time.Duration(surge) * time.Minute); !first.Time.Equal(want) {
		t.Errorf("the first miss at %v, want the surge's first point %v (%d misses)", first.Time, want, len(out.misses))
	}
	for _, m := range out.misses {
		k := int(m.Time.Sub(t0) / time.Minute)
		if k < surge || float64(m.Value) != series.Values[k] || !(m.Value > m.Upper*1.01) || !m.Origin.Before(m.Time) ||
			m.Labels["model"] != "a" || m.Labels["team"] != "serving" || m.Rule != "rate" || m.Group != "fc" {
			t.Errorf("miss %+v: want one of the surge's points (from minute %d), above the upper bound of an earlier forecast", m, surge)
		}
	}
}

func TestForecastRuleWithTooLittleHistorySaysSo(t *testing.T) {
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": {hourly("a", 30, 1, 0, 0)}}}
	events := &eventRecorder{}
	now := t0.Add(29 * time.Minute)
	e, err := newTestManager(testOptions{Groups: forecastGroups()[:1], Querier: store, Output: &recorder{}, Events: events, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, evs := events.take()
	var d alerting.ForecastData
	if len(evs) != 1 || json.Unmarshal(evs[0].Data, &d) != nil {
		t.Fatalf("events %+v", evs)
	}
	if !strings.Contains(d.Fallback, "auto needs 90 points of history") {
		t.Errorf("fallback %q does not say what is needed", d.Fallback)
	}
	for _, p := range d.Points {
		if p.Lower < 0 || p.Mean < 0 {
			t.Errorf("negative forecast of a rate: %+v", p)
		}
	}
}

func TestScaleRuleFollowsASurgeWithoutFlapping(t *testing.T) {
	// Eight hours of an hourly cycle on two replicas of capacity 10; the
	// load doubles from minute 400 to 430 and the queue grows meanwhile.
	n := 8 * 60
	rate := hourly("a", n, 2, 400, 430)
	waiting := constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)
	for i := 405; i < 430; i++ {
		waiting.Values[i] = 40
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"rate":     {rate, hourly("b", n, 1, 0, 0)},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 4)},
		"waiting":  {waiting},
	}}
	events := &eventRecorder{}
	now := t0.Add(time.Duration(n-1) * time.Minute)
	e, err := newTestManager(testOptions{Groups: forecastGroups(), Querier: store, Output: &recorder{}, Events: events,
		Backfill: 4 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	subjects, evs := events.take()
	var signals []alerting.ScaleData
	forecasts := 0
	for i, ev := range evs {
		switch subjects[i] {
		case "inferwatch.forecasts.rate":
			forecasts++
		case "inferwatch.scale.deploy":
			var d alerting.ScaleData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			signals = append(signals, d)
		default:
			t.Fatalf("subject %q", subjects[i])
		}
	}
	// One forecast per series (the newest), scale signals for model a only:
	// the replicas query names the targets.
	if forecasts != 2 || len(signals) < 3 {
		t.Fatalf("%d forecasts, %d signals", forecasts, len(signals))
	}
	peak, peakTier := 0, 0
	var ups, downs int
	for i, s := range signals {
		if s.Labels["model"] != "a" || s.Target != `{model="a"}` || s.CapacityPerReplica != 10 || s.CurrentReplicas != 4 {
			t.Fatalf("signal %+v", s)
		}
		if s.DesiredReplicas > peak {
			peak, peakTier = s.DesiredReplicas, s.Tier
		}
		if i > 0 {
			if s.DesiredReplicas > signals[i-1].DesiredReplicas {
				ups++
			} else if s.DesiredReplicas < signals[i-1].DesiredReplicas {
				downs++
				// A step down comes at least the cooldown after the last change.
				if s.Time.Sub(signals[i-1].Time) < 5*time.Minute {
					t.Errorf("down at %v only %v after the change at %v", s.Time, s.Time.Sub(signals[i-1].Time), signals[i-1].Time)
				}
			}
		}
		if !s.ValidUntil.Equal(s.Time.Add(10 * time.Minute)) {
			t.Errorf("valid until %v for a signal at %v", s.ValidUntil, s.Time)
		}
	}
	// 40 waiting requests / 5 per replica asks for 8 replicas (tier 1);
	// a forecast of about 2×40 req/s at 10 per replica asks for more.
	if peak < 8 || peakTier == 0 {
		t.Errorf("peak desired %d (tier %d) during the surge, want at least 8", peak, peakTier)
	}
	// Fifty minutes on, the load (at most 40) needs 4, but 30 of each
	// lead's 200 errors are still the surge's, more than the 5 % above the
	// upper bound: 6 or 7, as the model auto keeps on this noiseless sine
	// (which the float32 history's rounding can decide).
	last := signals[len(signals)-1]
	if !last.Time.Equal(now.Truncate(time.Minute)) || last.Tier != 3 || last.DesiredReplicas < 3 || last.DesiredReplicas > 7 {
		t.Errorf("newest signal %+v", last)
	}
	if ups > 40 || downs > 40 {
		t.Errorf("%d rises and %d falls over 4 hours: flapping", ups, downs)
	}
	t.Logf("%d signals, %d up, %d down, peak %d (tier %d), newest %d: %s", len(signals), ups, downs, peak, peakTier, last.DesiredReplicas, last.Reason)
}

func TestBuildRejectsAnUnknownForecastModelAtItsBlock(t *testing.T) {
	g := forecastGroups()
	g[0].Rules[0].Spec.(*rulefmt.Forecast).Model = "nosuch"
	g[0].Rules[0].SpecPos = rulefmt.Pos{File: "x.yaml", Line: 7, Column: 9}
	_, err := Build(g)
	var errs rulefmt.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(err.Error(), "x.yaml:7:9") ||
		!strings.Contains(err.Error(), `group "fc": rule "rate"`) || !strings.Contains(err.Error(), `unknown forecasting model "nosuch"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestBottomUpForecastRule(t *testing.T) {
	const n = 480
	client := func(model, c string, from int, f func(i int) float64) ingest.Series {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "rate"}, {Name: "client", Value: c}, {Name: "model", Value: model}}}
		for i := from; i < n; i++ {
			s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*time.Minute).UnixMilli())
			s.Values = append(s.Values, f(i))
		}
		return s
	}
	job := func(i int) float64 {
		if m := i % 60; m >= 20 && m < 40 {
			return 30
		}
		return 1
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": {
		client("a", "c1", 0, func(int) float64 { return 20 }),
		client("a", "c2", 0, job),
		client("a", "c3", 200, func(int) float64 { return 7 }), // starts later: 0 before
		client("b", "c1", 0, func(int) float64 { return 5 }),
	}}}
	g := forecastGroups()[:1]
	fc := g[0].Rules[0].Spec.(*rulefmt.Forecast)
	fc.BottomUp, fc.SumBy = true, []string{"model"}
	events := &eventRecorder{}
	now := t0.Add(435*time.Minute + 10*time.Second) // minute 15 of the hour: the job starts at lead 5
	e, err := newTestManager(testOptions{Groups: g, Querier: store, Output: &recorder{}, Events: events,
		EventPrefix: "iw", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	scoredN := 0 // model a's accuracy count at the previous check
	check := func(origin int, base, last float64, newScored int) {
		t.Helper()
		if err := e.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, evs := events.take()
		byModel := map[string]alerting.ForecastData{}
		for _, ev := range evs {
			var d alerting.ForecastData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			byModel[d.Labels["model"]] = d
			if len(d.Labels) != 2 || d.Labels["team"] != "serving" || d.Model != "bottom_up" || d.Fallback != "" {
				t.Errorf("forecast of %s: labels %v model %q fallback %q", d.Series, d.Labels, d.Model, d.Fallback)
			}
		}
		a, b := byModel["a"], byModel["b"]
		if len(evs) != 2 || a.Series != `{model="a"}` || b.Series != `{model="b"}` || !a.Origin.Equal(t0.Add(time.Duration(origin)*time.Minute)) {
			t.Fatalf("%d forecasts: %+v", len(evs), byModel)
		}
		// Each target is scored once, even when the sum is fitted afresh
		// and replays samples it had scored.
		if scoredN > 0 && a.Accuracy.N != scoredN+newScored {
			t.Errorf("origin %d: %d forecasts scored, want %d + %d", origin, a.Accuracy.N, scoredN, newScored)
		}
		scoredN = a.Accuracy.N
		// NaN would be published as null and read back as 0.
		if float64(a.LastValue) != last || !(a.Accuracy.N > 0 && a.Accuracy.NaiveMAE > 0) {
			t.Errorf("model a: last value %v (want %g), accuracy %+v", a.LastValue, last, a.Accuracy)
		}
		for i := range a.Points {
			want := base + job(origin+i+1)
			if math.Abs(float64(a.Points[i].Mean)-want) > 1e-6 || math.Abs(float64(b.Points[i].Mean)-5) > 1e-6 {
				t.Errorf("origin %d lead %d: model a %v (want %g), model b %v (want 5)", origin, i+1, a.Points[i].Mean, want, b.Points[i].Mean)
			}
		}
	}
	check(435, 20+7, 20+7+1, 0)
	// Client c4 of model a starts at minute 436.
	store.byExpr["rate"] = append(store.byExpr["rate"], client("a", "c4", 436, func(int) float64 { return 3 }))
	now = now.Add(2 * time.Minute)
	check(437, 20+7+3, 20+7+3+1, 2) // refitted with c4: 436 and 437 scored once
	// c1's samples of minutes 438 and 439 are missing: gaps its forecaster
	// fills; the sum's last value is the last known one.
	for i, sr := range store.byExpr["rate"] {
		if sr.Labels.Get("client") == "c1" && sr.Labels.Get("model") == "a" {
			sr.Timestamps = append(sr.Timestamps[:438:438], sr.Timestamps[440:]...)
			sr.Values = append(sr.Values[:438:438], sr.Values[440:]...)
			store.byExpr["rate"][i] = sr
		}
	}
	now = now.Add(2 * time.Minute)
	check(439, 20+7+3, 20+7+3+1, 0) // the sum at 437; 438 and 439 are gaps
}
