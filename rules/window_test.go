package rules

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// exprStore answers each query with its own series.
type exprStore struct{ byExpr map[string][]ingest.Series }

func (s *exprStore) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]ingest.Series, error) {
	m := &memStore{series: s.byExpr[q]}
	return m.QueryRange(ctx, q, start, end, step)
}

func podSeries(name, pod string, n int, f func(i int) float64) ingest.Series {
	s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: name}, {Name: "pod", Value: pod}}}
	for i := range n {
		s.Timestamps = append(s.Timestamps, t0.Add(time.Duration(i)*time.Minute).UnixMilli())
		s.Values = append(s.Values, f(i))
	}
	return s
}

// wobble is a deterministic, bounded, irregular signal.
func wobble(i int) float64 { return math.Sin(float64(i)*1.7) + 0.5*math.Sin(float64(i)*0.31) }

func TestCorrelateRuleFindsSaturationMakingLatencyJittery(t *testing.T) {
	const n = 600
	// Pod p0: from minute 400 to 460 the GPU saturates at 99 % and latency
	// swings widely; p1 runs at 60 % with the same kind of latency noise
	// throughout and must stay quiet.
	sat := func(i int) bool { return i >= 400 && i < 460 }
	util0 := podSeries("gpu", "p0", n, func(i int) float64 {
		if sat(i) {
			return 99 + 0.5*math.Sin(float64(i))
		}
		return 60 + 5*wobble(i)
	})
	lat0 := podSeries("lat", "p0", n, func(i int) float64 {
		if sat(i) {
			return 0.3 + 0.2*wobble(i)
		}
		return 0.2 + 0.01*wobble(i+7)
	})
	util1 := podSeries("gpu", "p1", n, func(i int) float64 { return 60 + 5*wobble(i+3) })
	lat1 := podSeries("lat", "p1", n, func(i int) float64 { return 0.2 + 0.01*wobble(i+11) })
	store := &exprStore{byExpr: map[string][]ingest.Series{"gpu": {util0, util1}, "lat": {lat0, lat1}}}
	g := []rulefmt.Group{{Name: "sat", Interval: 5 * time.Minute, Rules: []rulefmt.Rule{{
		Name: "coupling", Step: time.Minute, Lookback: 2 * time.Hour,
		Kind: rulefmt.KindCorrelation, Spec: &rulefmt.Correlate{X: "gpu", Y: "lat", YJitter: 15 * time.Minute, On: []string{"pod"},
			MaxLag: 5 * time.Minute, MinAbsR: 0.5, MaxP: 0.01, MinPoints: 30, XAbove: 95},
	}}}}
	out := &recorder{}
	e, err := newTestManager(testOptions{Groups: g, Querier: store, Output: out,
		Backfill: 8 * time.Hour, Now: func() time.Time { return t0.Add((n - 1) * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.got) != 1 {
		t.Fatalf("want 1 finding (p0 during saturation), got %d: %+v", len(out.got), out.got)
	}
	f := out.got[0]
	if f.Labels["pod"] != "p0" || f.Kind != "correlation" || f.Detector != "correlate" {
		t.Fatalf("finding %+v", f)
	}
	if end := f.WindowEnd; end.Before(t0.Add(400*time.Minute)) || end.After(t0.Add(480*time.Minute)) {
		t.Fatalf("fired at %v, want during the saturation (minutes 400–460)", end)
	}
	if f.Value < 0.5 || f.Details["p_value"].(float64) >= 0.01 || f.Details["n"].(int) < 30 || f.Details["x_max"].(float64) < 95 {
		t.Fatalf("details %v value %v", f.Details, f.Value)
	}
}

// TestDecayWaitsForAFullWindow: per-request throughput that falls for the
// first hours of the data (a busier morning) is not judged until the
// window spans its lookback, nor once the series has stopped.
func TestDecayWaitsForAFullWindow(t *testing.T) {
	const n = 288 // a day at 5-minute steps
	s := podSeries("tput", "a", n, func(i int) float64 {
		h := float64(i) / 12
		return 100 - 30*min(h, 4)/4 + wobble(i) // −30 % over the first 4 hours
	})
	for i := range s.Timestamps {
		s.Timestamps[i] = t0.Add(time.Duration(i) * 5 * time.Minute).UnixMilli()
	}
	g := rulefmt.Group{Name: "d", Interval: 5 * time.Minute}
	r, err := newDecayRule(g, rulefmt.Rule{Name: "decay", Expr: "tput", Step: 5 * time.Minute, Lookback: 24 * time.Hour,
		Kind: rulefmt.KindDecay, Spec: &rulefmt.Decay{PeakQuantile: 0.99, MinSlope: 0.1, MinEta: 0.25, Confidence: 0.95, Current: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	dr := r.(*decayRule)
	dr.windows[0].series["a"] = &buffered{labels: s.Labels, t: s.Timestamps, v: s.Values}
	judged := func(d time.Duration) bool { return len(dr.judge(t0.Add(d).UnixMilli())) > 0 }
	for _, h := range []int{4, 11, 16, 23} {
		if judged(time.Duration(h) * time.Hour) {
			t.Errorf("hour %d: judged on %d hours of a 24-hour lookback", h, h)
		}
	}
	// The series ends at 23:55: at hour 24 the window holds the whole
	// day, its newest sample one step old; judged up to two steps later,
	// not after.
	if !judged(24 * time.Hour) {
		t.Errorf("hour 24: a full window and not judged")
	}
	if judged(24*time.Hour + 10*time.Minute) {
		t.Errorf("15 minutes after the series stopped: judged")
	}
}

func TestDecayRuleFindsSustainedThroughputLoss(t *testing.T) {
	// Two days at 5-minute steps: model a loses 40 % of its throughput
	// over 6 hours from hour 30 and stays down; model b is steady.
	const n = 2 * 288
	tput := func(decay bool) func(i int) float64 {
		return func(i int) float64 {
			base := 100 + 2*wobble(i)
			if !decay {
				return base
			}
			h := float64(i) / 12
			switch {
			case h < 30:
				return base
			case h < 36:
				return base * (1 - 0.4*(h-30)/6)
			}
			return base * 0.6
		}
	}
	a := podSeries("tput", "a", n, tput(true))
	b := podSeries("tput", "b", n, tput(false))
	for i := range a.Timestamps {
		a.Timestamps[i] = t0.Add(time.Duration(i) * 5 * time.Minute).UnixMilli()
		b.Timestamps[i] = a.Timestamps[i]
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{"tput": {a, b}}}
	g := []rulefmt.Group{{Name: "d", Interval: 5 * time.Minute, Rules: []rulefmt.Rule{{
		Name: "decay", Expr: "tput", Step: 5 * time.Minute, Lookback: 24 * time.Hour,
		Kind: rulefmt.KindDecay, Spec: &rulefmt.Decay{PeakQuantile: 0.99, MinSlope: 0.1, MinEta: 0.25, Confidence: 0.95},
	}}}}
	out := &recorder{}
	e, err := newTestManager(testOptions{Groups: g, Querier: store, Output: out,
		Backfill: 40 * time.Hour, Now: func() time.Time { return t0.Add((n - 1) * 5 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.got) != 1 {
		t.Fatalf("want 1 finding (a, once), got %d: %+v", len(out.got), out.got)
	}
	f := out.got[0]
	if f.Labels["pod"] != "a" || f.Kind != "decay" {
		t.Fatalf("finding %+v", f)
	}
	if end := f.WindowEnd; end.Before(t0.Add(30*time.Hour)) || end.After(t0.Add(40*time.Hour)) {
		t.Fatalf("fired at %v, want during or just after the decay (hours 30–36)", end.Sub(t0))
	}
	if f.Value < 0.25 || f.Details["significant"] != true || f.Details["eta_trend_per_day"].(float64) < 0.1 {
		t.Fatalf("value %v details %v", f.Value, f.Details)
	}
}
