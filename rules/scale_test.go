package rules

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

func scaleSignals(t *testing.T, events *eventRecorder) []alerting.ScaleData {
	t.Helper()
	subjects, evs := events.take()
	var out []alerting.ScaleData
	for i, ev := range evs {
		if !strings.Contains(subjects[i], ".scale.") {
			continue
		}
		var d alerting.ScaleData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// A scale rule written before its forecast rule reads this cycle's outlook, and depends on nothing but the Outlook.
func TestScaleRuleIsEvaluatedAfterItsForecastRule(t *testing.T) {
	g := forecastGroups()
	g[0].Rules[0], g[0].Rules[1] = g[0].Rules[1], g[0].Rules[0] // deploy, then rate
	built, err := Build(g)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range built[0].Rules() {
		order = append(order, r.Name())
	}
	if !slices.Equal(order, []string{"rate", "deploy"}) {
		t.Fatalf("evaluation order %v, want the forecast rule first", order)
	}

	n := 8 * 60
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"rate":     {hourly("a", n, 1, 0, 0)},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	now := t0.Add(time.Duration(n-1) * time.Minute)
	sig := scaleSignals(t, evalOnce(t, g, store, now))
	if len(sig) != 1 || sig[0].Tier != 3 || math.IsNaN(float64(sig[0].PredictedUpper)) {
		t.Fatalf("signals %+v: want one from the forecast tier", sig)
	}

	// The same scale rule handed an outlook directly: 31 req/s at 10 a
	// replica asks for 4.
	sr, err := newScaleRule(g[0], g[0].Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	end := now.Truncate(time.Minute)
	out := &Outlook{Rule: "rate", Times: []time.Time{end}, Horizon: 10 * time.Minute, Series: []OutlookSeries{{
		Labels: ingest.Labels{{Name: "model", Value: "a"}},
		At:     []Snapshot{{OK: true, Origin: end, Peak: 29, Upper: 31, PeakTime: end.Add(5 * time.Minute), Model: "test"}},
	}}}
	res, err := sr.Eval(context.Background(), now, &Env{Querier: store, Interval: time.Minute, Outlooks: map[string]*Outlook{"rate": out}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scales) != 1 || res.Scales[0].DesiredReplicas != 4 || res.Scales[0].ForecastModel != "test" || res.Scales[0].Target != `{model="a"}` ||
		res.Scales[0].PreviousDesiredReplicas != nil || res.Scales[0].CurrentReplicas != 2 || !res.Scales[0].CurrentKnown {
		t.Fatalf("scale signals from a given outlook: %+v", res.Scales)
	}
	// Without an outlook this cycle (the forecast rule failed), it says so;
	// the previous decision is the last cycle's 4, the observed replicas
	// are 2.
	res, err = sr.Eval(context.Background(), now.Add(time.Minute), &Env{Querier: store, Interval: time.Minute, Outlooks: map[string]*Outlook{}})
	if err != nil || len(res.Scales) != 1 || res.Scales[0].Tier == 3 ||
		!strings.Contains(res.Scales[0].Reason, `no outlook from forecast rule "rate" this cycle: tiers 1 and 2 only`) {
		t.Fatalf("without an outlook: %v %+v", err, res.Scales)
	}
	if s := res.Scales[0]; s.PreviousDesiredReplicas == nil || *s.PreviousDesiredReplicas != 4 || s.CurrentReplicas != 2 || !s.CurrentKnown {
		t.Errorf("the second decision: previous %v, observed %d (known %t); want 4 and 2", s.PreviousDesiredReplicas, s.CurrentReplicas, s.CurrentKnown)
	}
}

// Several forecast series on one target's labels: the signal says so and acts on tiers 1 and 2 only, every cycle alike.
func TestScaleRuleRefusesAnAmbiguousForecast(t *testing.T) {
	n := 8 * 60
	pod := func(p string, scale float64) ingest.Series {
		s := hourly("a", n, scale, 0, n)
		s.Labels = ingest.Labels{{Name: "model", Value: "a"}, {Name: "pod", Value: p}}
		return s
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"rate":     {pod("p0", 1), pod("p1", 3)},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	events := &eventRecorder{}
	now := t0.Add(time.Duration(n-20) * time.Minute)
	m, err := newTestManager(testOptions{Groups: forecastGroups(), Querier: store, Events: events, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		now = t0.Add(time.Duration(n-20+i) * time.Minute)
		if err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		sig := scaleSignals(t, events)
		if len(sig) != 1 {
			t.Fatalf("cycle %d: %d signals", i, len(sig))
		}
		s := sig[0]
		if s.Tier == 3 || s.DesiredReplicas != 2 || s.Target != `{model="a"}` ||
			!strings.Contains(s.Reason, `2 series of forecast rule "rate" match {model="a"}`) ||
			!strings.Contains(s.Reason, `pod="p0"`) || !strings.Contains(s.Reason, "sum_by") {
			t.Fatalf("cycle %d: %+v", i, s)
		}
	}
}

// Two scale rules over one forecast of 2m and 10m each decide on the horizon they name (the longest by default).
func TestScaleRulesChooseTheirHorizon(t *testing.T) {
	g := forecastGroups()
	fc := g[0].Rules[0].Spec.(*rulefmt.Forecast)
	fc.Horizons, fc.Horizon = []time.Duration{2 * time.Minute, 10 * time.Minute}, 10*time.Minute
	short := g[0].Rules[1]
	short.Name = "deploy_2m"
	sc := *short.Spec.(*rulefmt.Scale)
	sc.Horizon = 2 * time.Minute
	short.Spec = &sc
	g[0].Rules = append(g[0].Rules, short)

	n := 8 * 60
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"rate":     {hourly("a", n, 1, 0, 0)},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	// Five minutes into the hour the sine still rises (to its top at 15):
	// the later leads peak higher.
	now := t0.Add(time.Duration(n-55) * time.Minute)
	subjects, evs := evalOnce(t, g, store, now).take()
	fd, scales := forecastAndScales(t, subjects, evs)
	if len(fd.Points) != 10 || len(fd.Horizons) != 2 || fd.Horizons[0].HorizonSeconds != 120 || fd.Horizons[1].HorizonSeconds != 600 {
		t.Fatalf("forecast: %d points, horizons %+v", len(fd.Points), fd.Horizons)
	}
	// Each horizon's peaks are those of the points up to it.
	for _, h := range fd.Horizons {
		peak, upper := math.Inf(-1), math.Inf(-1)
		var at time.Time
		for _, p := range fd.Points {
			if p.Time.Sub(fd.Origin).Seconds() > h.HorizonSeconds {
				break
			}
			if float64(p.Mean) > peak {
				peak, at = float64(p.Mean), p.Time
			}
			upper = max(upper, float64(p.Upper))
		}
		if float64(h.Peak) != peak || float64(h.UpperPeak) != upper || !h.PeakTime.Equal(at) {
			t.Errorf("horizon %vs: peak %v at %v, upper %v; the points give %v at %v, %v", h.HorizonSeconds, h.Peak, h.PeakTime, h.UpperPeak, peak, at, upper)
		}
	}
	long, near := fd.Horizons[1], fd.Horizons[0]
	if fd.Peak != long.Peak || fd.UpperPeak != long.UpperPeak || !(near.UpperPeak < long.UpperPeak) {
		t.Fatalf("peaks: whole %v/%v, 2m %v/%v, 10m %v/%v: want the 10m ones whole and the 2m upper lower on a rise",
			fd.Peak, fd.UpperPeak, near.Peak, near.UpperPeak, long.Peak, long.UpperPeak)
	}
	d10, d2 := scales["deploy"], scales["deploy_2m"]
	if d10.HorizonSeconds != 600 || d2.HorizonSeconds != 120 ||
		d10.PredictedUpper != long.UpperPeak || d2.PredictedUpper != near.UpperPeak ||
		!d2.ValidUntil.Equal(d2.Time.Add(2*time.Minute)) || !d10.ValidUntil.Equal(d10.Time.Add(10*time.Minute)) {
		t.Fatalf("scale signals:\n%+v\n%+v", d10, d2)
	}

	// A scale rule built in code with a horizon the forecast rule does not
	// serve says so, and acts on tiers 1 and 2 only.
	sc.Horizon = 3 * time.Minute
	sr, err := newScaleRule(g[0], short)
	if err != nil {
		t.Fatal(err)
	}
	end := now.Truncate(time.Minute)
	out := &Outlook{Rule: "rate", Times: []time.Time{end}, Horizon: 10 * time.Minute, Horizons: []time.Duration{2 * time.Minute, 10 * time.Minute},
		Series: []OutlookSeries{{Labels: ingest.Labels{{Name: "model", Value: "a"}}, At: []Snapshot{{OK: true, Origin: end, Peak: 29, Upper: 31}}}}}
	res, err := sr.Eval(context.Background(), now, &Env{Querier: store, Interval: time.Minute, Outlooks: map[string]*Outlook{"rate": out}})
	if err != nil || len(res.Scales) != 1 || res.Scales[0].Tier == 3 ||
		!strings.Contains(res.Scales[0].Reason, `forecast rule "rate" serves the horizons 2m, 10m, not 3m: tiers 1 and 2 only`) {
		t.Fatalf("a horizon not served: %v %+v", err, res.Scales)
	}
}

// With scale.hold a scale rule asks for at least what the highest load of the hold needs; an older burst asks for nothing.
func TestScaleRuleHoldsTheLoadItSaw(t *testing.T) {
	n := 8 * 60
	desired := func(t *testing.T, hold time.Duration, burst int) alerting.ScaleData {
		t.Helper()
		g := forecastGroups()
		g[0].Rules[1].Spec.(*rulefmt.Scale).Hold = hold
		store := &exprStore{byExpr: map[string][]ingest.Series{
			"rate":     {hourly("a", n, 3, n-burst, n-burst+5)},
			"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
		}}
		sig := scaleSignals(t, evalOnce(t, g, store, t0.Add(time.Duration(n-1)*time.Minute)))
		if len(sig) != 1 || sig[0].Tier != 3 {
			t.Fatalf("signals %+v: want one from the forecast tier", sig)
		}
		return sig[0]
	}
	// The burst of minutes n−20 to n−16, three times the load: its
	// highest minute is within the last 30 minutes.
	peak, at := 0.0, 0
	for i := n - 20; i < n-15; i++ {
		if v := 3 * (30 + 10*math.Sin(2*math.Pi*float64(i)/60)); v > peak {
			peak, at = v, i
		}
	}
	held := desired(t, 30*time.Minute, 20)
	unheld := desired(t, 0, 20)
	if want := int(math.Ceil(peak / 10)); held.DesiredReplicas != want || unheld.DesiredReplicas >= want {
		t.Fatalf("desired %d with the hold, %d without; want %d with it (the burst's %g req/s at 10 a replica) and fewer without",
			held.DesiredReplicas, unheld.DesiredReplicas, want, peak)
	}
	prefix := "The highest load of the last 30m, " + strconv.FormatFloat(math.Round(peak), 'f', -1, 64) + " req/s at " +
		t0.Add(time.Duration(at)*time.Minute).UTC().Format("15:04") + " UTC, above the forecast peak "
	if !strings.HasPrefix(held.Reason, prefix) {
		t.Errorf("reason %q; want it to start %q", held.Reason, prefix)
	}
	// A burst of 40 to 36 minutes ago is outside the hold.
	if old := desired(t, 30*time.Minute, 40); old.DesiredReplicas >= held.DesiredReplicas || strings.HasPrefix(old.Reason, "The highest load") {
		t.Errorf("a burst older than the hold: %+v", old)
	}
}

// TestScalePolicyMargin: a scale rule's scale_down_margin reaches the
// decision as it is, its 0 no band.
func TestScalePolicyMargin(t *testing.T) {
	in := forecasting.ScaleInputs{Observed: 4, HasForecast: true, PredictedLoad: 2.9, PredictedUpper: 2.95, CapacityPerReplica: 1}
	prev := forecasting.ScaleState{Decided: true, Desired: 4}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		margin float64
		want   int
		band   bool
	}{
		// 2.9 req/s on 3 replicas runs at 97 %: above 85 % and 95 %.
		{rulefmt.DefaultScaleDownMargin, 4, true},
		{0.05, 4, true},
		{0.03, 3, false},
		{0, 3, false},
	} {
		s := rulefmt.DefaultScale()
		s.ScaleDownStableIntervals, s.Cooldown, s.ScaleDownMargin = 1, 0, c.margin
		sig, _ := forecasting.Decide(prev, in, scalePolicy(&s), now)
		if w := sig.Why; sig.Desired != c.want || w.Band != c.margin || (w.Limits&forecasting.LimitBand != 0) != c.band {
			t.Errorf("margin %g: desired %d, band %g, held back by %s; want %d, the band holding: %t (%s)",
				c.margin, sig.Desired, w.Band, w.Limits, c.want, c.band, sig.Reason())
		}
	}
}

// samplesAt is a forecast rule's history of samples on a grid: v[i] at
// t0 + i·step.
type samplesAt struct {
	t0, step int64
	v        []float64
}

func (s samplesAt) ObservedPeak(from, to int64) (float64, int64, bool) {
	best, at, ok := 0.0, int64(0), false
	for i, v := range s.v {
		if t := s.t0 + int64(i)*s.step; t >= from && t <= to && (!ok || v > best) {
			best, at, ok = v, t, true
		}
	}
	return best, at, ok
}

func (s samplesAt) Observed(dst []float64, from, to int64) []float64 {
	for i, v := range s.v {
		if t := s.t0 + int64(i)*s.step; t >= from && t <= to {
			dst = append(dst, v)
		}
	}
	return dst
}

// TestBurstInputsAlignsTheSeason: at a 1m step, a burst window of 4m reads
// the four newest samples, and a period of 5m the five samples (the four
// and the horizon's one to come) five steps before them; a history that
// does not reach back as far leaves NaN first.
func TestBurstInputsAlignsTheSeason(t *testing.T) {
	step := time.Minute
	v := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}
	h := samplesAt{t0: t0.UnixMilli(), step: step.Milliseconds(), v: v}
	origin := t0.Add(9 * step)
	c := &rulefmt.Scale{BurstQuantile: 0.5, BurstWindow: 4 * time.Minute, BurstMean: 2 * time.Minute, BurstPeriod: 5 * time.Minute}
	var buf, season []float64
	in := forecasting.ScaleInputs{BurstLoad: math.NaN()}
	burstInputs(&in, h, c, step, step, origin, &buf, &season)
	if want := forecasting.BurstLoad(v[6:], v[1:6], 2, 1, 0.5); in.BurstLoad != want {
		t.Errorf("burst load %v; want %v", in.BurstLoad, want)
	}
	c.BurstPeriod = 8 * time.Minute
	burstInputs(&in, h, c, step, step, origin, &buf, &season)
	if want := forecasting.BurstLoad(v[6:], []float64{math.NaN(), math.NaN(), 3, 1, 4}, 2, 1, 0.5); in.BurstLoad != want {
		t.Errorf("with a period before the history: burst load %v; want %v", in.BurstLoad, want)
	}
	c.BurstQuantile = 0
	in.BurstLoad = math.NaN()
	burstInputs(&in, h, c, step, step, origin, &buf, &season)
	if !math.IsNaN(in.BurstLoad) {
		t.Errorf("without a quantile: burst load %v; want none", in.BurstLoad)
	}
}

// TestHoldInputsReadsTheHoldBeforeTheOrigin: a sample stamped t measures
// the step before t, so a hold of 30m at a 10m step reads the three
// newest samples: the fourth measures 30 to 40 minutes before the origin.
func TestHoldInputsReadsTheHoldBeforeTheOrigin(t *testing.T) {
	step := 10 * time.Minute
	h := samplesAt{t0: t0.UnixMilli(), step: step.Milliseconds(), v: []float64{1, 9, 2, 5, 3}}
	origin := t0.Add(4 * step)
	in := forecasting.ScaleInputs{HeldPeak: math.NaN()}
	holdInputs(&in, h, 30*time.Minute, origin)
	if in.HeldPeak != 5 || !in.HeldAt.Equal(t0.Add(3*step)) {
		t.Errorf("held %v at %v; want 5 at %v (the 9 at %v is 40 minutes of load back)", in.HeldPeak, in.HeldAt, t0.Add(3*step), t0.Add(step))
	}
	in = forecasting.ScaleInputs{HeldPeak: math.NaN()}
	holdInputs(&in, h, 31*time.Minute, origin)
	if in.HeldPeak != 9 {
		t.Errorf("a hold of 31m held %v; want 9", in.HeldPeak)
	}
	in = forecasting.ScaleInputs{HeldPeak: math.NaN()}
	holdInputs(&in, h, 0, origin)
	if !math.IsNaN(in.HeldPeak) {
		t.Errorf("no hold held %v", in.HeldPeak)
	}
}

// By default a scale rule at 1m steps decides on the forecast's next 4m (a step and the start-up), not its 10m.
func TestScaleRuleDefaultHorizon(t *testing.T) {
	cfg, err := rulefmt.Parse([]byte(`source: {url: http://127.0.0.1:8428}
groups:
  - name: fc
    interval: 1m
    rules:
      - name: rate
        forecast: {expr: load, history: 6h, period: 1h}
      - name: deploy
        scale: {forecast: rate, on: [model], replicas: replicas, capacity_per_replica: 10, hold: 0s}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 8 * 60
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"load":     {hourly("a", n, 1, 0, 0)},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	// Five minutes into the hour the sine still rises: the later leads
	// peak higher.
	subjects, evs := evalOnce(t, cfg.Groups, store, t0.Add(time.Duration(n-55)*time.Minute)).take()
	var fd alerting.ForecastData
	var sd alerting.ScaleData
	for i, ev := range evs {
		dst := any(&fd)
		if strings.Contains(subjects[i], ".scale.") {
			dst = &sd
		}
		if err := json.Unmarshal(ev.Data, dst); err != nil {
			t.Fatal(err)
		}
	}
	if len(fd.Points) != 10 || len(fd.Horizons) != 1 || fd.Horizons[0].HorizonSeconds != 600 {
		t.Fatalf("forecast: %d points, horizons %+v; want 10 points and 10m alone", len(fd.Points), fd.Horizons)
	}
	upper := math.Inf(-1)
	for _, p := range fd.Points[:4] {
		upper = max(upper, float64(p.Upper))
	}
	if sd.HorizonSeconds != 240 || float64(sd.PredictedUpper) != upper || !(upper < float64(fd.UpperPeak)) ||
		!sd.ValidUntil.Equal(sd.Time.Add(4*time.Minute)) {
		t.Fatalf("scale signal %+v: want horizon 4m, the upper bound %v of the first 4 points (10m: %v), valid for 4m", sd, upper, fd.UpperPeak)
	}
}

// evalOnce evaluates groups once at now over store and returns the events
// published.
func evalOnce(t *testing.T, groups []rulefmt.Group, store *exprStore, now time.Time) *eventRecorder {
	t.Helper()
	events := &eventRecorder{}
	m, err := newTestManager(testOptions{Groups: groups, Querier: store, Events: events, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	return events
}

// A scale rule plans with the upper bound at its scale.level: the
// interval's own at the forecast rule's level, the one handed over at
// another, and none (tiers 1 and 2 only) at a level not handed over.
func TestScaleRulePlansAtItsLevel(t *testing.T) {
	n := 8 * 60
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	now := t0.Add(time.Duration(n-1) * time.Minute)
	end := now.Truncate(time.Minute)
	// At 10 req/s a replica: the 0.9 upper 31 asks for 4, the 0.8 one 25
	// for 3, the 0.95 one 41 for 5.
	out := &Outlook{Rule: "rate", Times: []time.Time{end}, Horizon: 10 * time.Minute, Horizons: []time.Duration{10 * time.Minute},
		Level: 0.9, Levels: []float64{0.8, 0.95},
		Series: []OutlookSeries{{Labels: ingest.Labels{{Name: "model", Value: "a"}}, At: []Snapshot{{OK: true, Origin: end,
			ByHorizon: []Peak{{Peak: 20, Upper: 31, Plans: []float64{25, 41}, PeakTime: end.Add(5 * time.Minute)}}}}}}}
	for _, c := range []struct {
		level float64
		want  int
	}{{0.9, 4}, {0.8, 3}, {0.95, 5}} {
		g := forecastGroups()
		sc := g[0].Rules[1].Spec.(*rulefmt.Scale)
		sc.Level, sc.Hold, sc.BurstQuantile = c.level, 0, 0
		sr, err := newScaleRule(g[0], g[0].Rules[1])
		if err != nil {
			t.Fatal(err)
		}
		res, err := sr.Eval(context.Background(), now, &Env{Querier: store, Interval: time.Minute, Outlooks: map[string]*Outlook{"rate": out}})
		if err != nil || len(res.Scales) != 1 || res.Scales[0].DesiredReplicas != c.want || res.Scales[0].Tier != 3 {
			t.Fatalf("scale.level %g: %v %+v; want %d replicas from the forecast tier", c.level, err, res.Scales, c.want)
		}
	}
	g := forecastGroups()
	g[0].Rules[1].Spec.(*rulefmt.Scale).Level = 0.99
	sr, err := newScaleRule(g[0], g[0].Rules[1])
	if err != nil {
		t.Fatal(err)
	}
	res, err := sr.Eval(context.Background(), now, &Env{Querier: store, Interval: time.Minute, Outlooks: map[string]*Outlook{"rate": out}})
	if err != nil || len(res.Scales) != 1 || res.Scales[0].Tier == 3 ||
		!strings.Contains(res.Scales[0].Reason, `forecast rule "rate" hands the upper bound at levels 0.8, 0.9, 0.95, not at scale.level 0.99: tiers 1 and 2 only`) {
		t.Fatalf("a level not handed over: %v %+v", err, res.Scales)
	}
}

// A forecast rule hands the upper bound at its scale rules' levels over:
// a scale rule at 0.95 plans above the 0.9 interval the forecast rule
// publishes, and one at 0.9 on that interval's upper bound.
func TestForecastRuleHandsTheScaleLevels(t *testing.T) {
	g := forecastGroups()
	fc := g[0].Rules[0].Spec.(*rulefmt.Forecast)
	fc.Horizons, fc.ScaleLevels = []time.Duration{10 * time.Minute}, []float64{0.95}
	g[0].Rules[1].Spec.(*rulefmt.Scale).Level = 0.95
	own := g[0].Rules[1]
	own.Name = "deploy_own"
	sc := *own.Spec.(*rulefmt.Scale)
	sc.Level = 0.9
	own.Spec = &sc
	g[0].Rules = append(g[0].Rules, own)

	n := 8 * 60
	rate := hourly("a", n, 1, 0, 0)
	for i := range rate.Values {
		rate.Values[i] += float64(i*7919%13-6) / 2 // errors for the interval to spread over
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{
		"rate":     {rate},
		"replicas": {constant(ingest.Labels{{Name: "model", Value: "a"}}, n, 2)},
	}}
	subjects, evs := evalOnce(t, g, store, t0.Add(time.Duration(n-55)*time.Minute)).take()
	fd, scales := forecastAndScales(t, subjects, evs)
	if fd.Level != 0.9 || len(fd.Horizons) != 1 {
		t.Fatalf("forecast at level %v, horizons %+v; want 0.9 and one", fd.Level, fd.Horizons)
	}
	at95, at90 := scales["deploy"], scales["deploy_own"]
	if at90.PredictedUpper != fd.Horizons[0].UpperPeak || !(at95.PredictedUpper > at90.PredictedUpper) || at95.PredictedLoad != at90.PredictedLoad {
		t.Fatalf("upper at 0.95 %v, at 0.9 %v, published %v; loads %v and %v: want 0.9's the published one, 0.95's above it, one mean",
			at95.PredictedUpper, at90.PredictedUpper, fd.Horizons[0].UpperPeak, at95.PredictedLoad, at90.PredictedLoad)
	}
}

// forecastAndScales decodes the forecast event (the last, when several)
// and the scale events by rule of an evaluation's events.
func forecastAndScales(t *testing.T, subjects []string, evs []alerting.Event) (alerting.ForecastData, map[string]alerting.ScaleData) {
	t.Helper()
	var fd alerting.ForecastData
	scales := map[string]alerting.ScaleData{}
	for i, ev := range evs {
		switch {
		case strings.Contains(subjects[i], ".forecasts."):
			if err := json.Unmarshal(ev.Data, &fd); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(subjects[i], ".scale."):
			var d alerting.ScaleData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			scales[d.Rule] = d
		}
	}
	return fd, scales
}
