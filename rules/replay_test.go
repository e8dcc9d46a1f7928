package rules

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// replayGroup is a forecast rule on the load and two scale rules on its
// forecast, one replica carrying 10 req/s.
func replayGroup() rulefmt.Group {
	fc := &rulefmt.Forecast{Expr: "load", Step: time.Minute, History: 3 * time.Hour, Horizon: 10 * time.Minute,
		Horizons: []time.Duration{10 * time.Minute}, Model: "auto", Level: 0.9, Period: time.Hour,
		ScaleLevels: []float64{rulefmt.DefaultScaleLevel}}
	scale := func(name string) rulefmt.Rule {
		sc := rulefmt.DefaultScale()
		sc.Forecast, sc.Replicas, sc.CapacityPerReplica, sc.Horizon = "rate", "replicas", 10, 10*time.Minute
		return rulefmt.Rule{Name: name, Kind: rulefmt.KindScale, Spec: &sc, Expr: "replicas", Step: time.Minute, Lookback: time.Hour}
	}
	return rulefmt.Group{Name: "serving", Interval: time.Minute, Rules: []rulefmt.Rule{
		{Name: "rate", Kind: rulefmt.KindForecast, Spec: fc, Expr: "load", Step: time.Minute, Lookback: fc.History},
		scale("plain"), scale("tripled"),
	}}
}

// replayStore holds three hours of a steady 9 req/s and one replica.
func replayStore(t *testing.T) *MemoryStore {
	t.Helper()
	s := NewMemoryStore()
	var ts []int64
	var load, ones []float64
	for i := range 180 {
		ts = append(ts, t0.Add(time.Duration(i+1)*time.Minute).UnixMilli())
		load, ones = append(load, 9), append(ones, 1)
	}
	model := ingest.Label{Name: "model", Value: "m"}
	if err := s.Add("load", ingest.Labels{{Name: "__name__", Value: "load"}, model}, ts, load); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("replicas", ingest.Labels{{Name: "__name__", Value: "replicas"}, model}, ts, ones); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayRewritesTheForecastAScaleRuleDecidesOn: one batch an
// evaluation, in time order; the scale rule whose forecast the hook
// triples asks for ⌈27 / 10⌉ = 3 replicas, the other for ⌈9 / 10⌉ = 1.
func TestReplayRewritesTheForecastAScaleRuleDecidesOn(t *testing.T) {
	from := t0.Add(2 * time.Hour)
	var got []alerting.Batch
	o := ReplayOptions{Groups: []rulefmt.Group{replayGroup()}, Querier: replayStore(t), From: from, To: from.Add(5 * time.Minute), Step: time.Minute,
		Rewrite: func(group, rule string, fc *forecasting.Forecast) {
			if group != "serving" || (rule != "plain" && rule != "tripled") {
				t.Errorf("rewrite asked for %s/%s", group, rule)
			}
			if rule == "tripled" {
				for i := range fc.Mean {
					fc.Mean[i], fc.Lower[i], fc.Upper[i] = 3*fc.Mean[i], 3*fc.Lower[i], 3*fc.Upper[i]
					for _, p := range fc.Plans {
						p.Upper[i] *= 3 // the upper bound the scale rule plans with
					}
				}
			}
		}}
	if err := Replay(context.Background(), o, func(b alerting.Batch) error { got = append(got, b); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d batches; want 6, one an evaluation", len(got))
	}
	for i, b := range got {
		at := from.Add(time.Duration(i) * time.Minute)
		want := map[string]int{"plain": 1, "tripled": 3}
		for _, s := range b.Scales {
			if !s.Time.Equal(at) || s.DesiredReplicas != want[s.Rule] {
				t.Errorf("evaluation %d: %s asks for %d at %v; want %d at %v (%s)", i, s.Rule, s.DesiredReplicas, s.Time, want[s.Rule], at, s.Reason)
			}
			delete(want, s.Rule)
		}
		if len(want) > 0 || len(b.Forecasts) != 1 {
			t.Errorf("evaluation %d: no signal of %v, %d forecasts", i, want, len(b.Forecasts))
		}
	}
	// An error from each stops the replay and comes back.
	stop := errors.New("enough")
	n := 0
	o.Rewrite = nil
	err := Replay(context.Background(), o, func(alerting.Batch) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("replay after an error: %v, %d batches", err, n)
	}
}

func TestReplayOptionsErrors(t *testing.T) {
	g := []rulefmt.Group{replayGroup()}
	for _, c := range []struct {
		o    ReplayOptions
		want string
	}{
		{ReplayOptions{Groups: g}, "needs a Querier"},
		{ReplayOptions{Groups: g, Querier: NewMemoryStore(), From: t0, To: t0.Add(-time.Minute)}, "ends before it starts"},
		{ReplayOptions{Groups: g, Querier: NewMemoryStore(), From: t0, To: t0.Add(time.Hour)}, "needs a Step"},
		{ReplayOptions{Groups: g, Querier: NewMemoryStore(), From: t0}, `no series for the query "load"`},
	} {
		err := Replay(context.Background(), c.o, func(alerting.Batch) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v; want an error with %q", err, c.want)
		}
	}
}

// TestMemoryStoreAnswersAsAStore: a range query returns the samples in
// (start − step, end], and refuses samples out of order.
func TestMemoryStoreAnswersAsAStore(t *testing.T) {
	s := NewMemoryStore()
	ls := ingest.Labels{{Name: "__name__", Value: "x"}}
	m := func(i int) int64 { return t0.Add(time.Duration(i) * time.Minute).UnixMilli() }
	if err := s.Add("x", ls, []int64{m(1), m(2), m(3)}, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("x", ls, []int64{m(3)}, []float64{4}); err == nil {
		t.Error("a sample at the newest time was taken")
	}
	got, err := s.QueryRange(context.Background(), "x", t0.Add(3*time.Minute), t0.Add(3*time.Minute), time.Minute)
	if err != nil || len(got) != 1 || len(got[0].Values) != 1 || got[0].Values[0] != 3 {
		t.Errorf("(2m, 3m]: %+v, %v; want the sample at 3m", got, err)
	}
	got[0].Values[0] = 99 // the caller's copy
	got, _ = s.QueryRange(context.Background(), "x", t0.Add(2*time.Minute), t0.Add(3*time.Minute), time.Minute)
	if len(got) != 1 || len(got[0].Values) != 2 || got[0].Values[1] != 3 {
		t.Errorf("(1m, 3m]: %+v; want the samples at 2m and 3m", got)
	}
}
