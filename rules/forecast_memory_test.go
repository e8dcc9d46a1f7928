package rules

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// dailyCounts is n series of Poisson-like counts at step (30 a minute on
// average with a daily swing of ±60 %) from t0 over span, plus steady
// steps more.
func dailyCounts(n int, step, span time.Duration, steady int) []ingest.Series {
	rng := rand.New(rand.NewPCG(7, 0))
	k := int(span/step) + 1 + steady
	out := make([]ingest.Series, n)
	for j := range out {
		s := ingest.Series{Labels: ingest.Labels{{Name: "__name__", Value: "rate"}, {Name: "pod", Value: fmt.Sprintf("pod-%03d", j)}},
			Timestamps: make([]int64, k), Values: make([]float64, k)}
		for i := range k {
			t := t0.Add(time.Duration(i) * step)
			lam := 30 * step.Minutes() * (1 + 0.6*math.Sin(2*math.Pi*float64(t.Sub(t0))/float64(24*time.Hour)))
			s.Timestamps[i] = t.UnixMilli()
			s.Values[i] = math.Round(lam + math.Sqrt(lam)*rng.NormFloat64())
		}
		out[j] = s
	}
	return out
}

// forecastRuleRetained runs a forecast rule as the daemon's forecast
// rules run (auto, a 10-minute horizon, a daily period) over n series at
// step with history of lookback: a first evaluation fitting each series
// on its history, then steady evaluations of one new point each. It
// returns the heap the rule retains per series: its forecasters, window,
// accuracy and forecasts.
func forecastRuleRetained(tb testing.TB, step, history time.Duration, n, steady int) float64 {
	tb.Helper()
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": dailyCounts(n, step, history, steady)}}
	g := rulefmt.Group{Name: "fc", Interval: step}
	r := rulefmt.Rule{Name: "forecast", Kind: rulefmt.KindForecast, Expr: "rate", Step: step, Lookback: history,
		Spec: &rulefmt.Forecast{Expr: "rate", Step: step, History: history, Horizon: 10 * time.Minute,
			Model: "auto", Level: 0.9, Period: rulefmt.DefaultForecastPeriod}}
	env := &Env{Querier: store, Interval: step}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rule, err := newForecastRule(g, r)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range steady + 1 {
		res, err := rule.Eval(context.Background(), t0.Add(history+time.Duration(i)*step), env)
		if err != nil {
			tb.Fatal(err)
		}
		if len(res.Forecasts) != n {
			tb.Fatalf("evaluation %d: %d forecasts of %d series", i, len(res.Forecasts), n)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rule)
	runtime.KeepAlive(store)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
}

// forecastRuleCases are the steps and histories of the fleet benchmark's
// forecast cases, with how many series to measure.
var forecastRuleCases = []struct {
	step, history time.Duration
	series        int
}{
	{time.Minute, time.Hour, 200},
	{30 * time.Second, time.Hour, 100},
	{15 * time.Second, time.Hour, 100},
	{time.Minute, 24 * time.Hour, 6},
	{30 * time.Second, 24 * time.Hour, 4},
	{15 * time.Second, 24 * time.Hour, 3},
}

// BenchmarkForecastRuleRetainedPerSeries reports the heap a forecast rule
// retains per series (B/series) after its first evaluation and three
// steady ones, at each step and history; ns/op is the time of those
// evaluations over all the series of a case.
func BenchmarkForecastRuleRetainedPerSeries(b *testing.B) {
	for _, c := range forecastRuleCases {
		b.Run(fmt.Sprintf("step=%v/history=%v", c.step, c.history), func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = forecastRuleRetained(b, c.step, c.history, c.series, 3)
			}
			b.ReportMetric(per, "B/series")
		})
	}
}

// TestForecastRuleRetainedPerSeries: a forecast rule keeps at most 64 KiB
// a series with a day of history at 15 s, 30 s and 1 m steps (its window
// keeps no copy of the forecaster's history), and 32 KiB with an hour.
func TestForecastRuleRetainedPerSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a day of history at 15 s steps")
	}
	if raceEnabled {
		t.Skip("the race detector drops pooled scratch at random")
	}
	for _, c := range forecastRuleCases {
		most := 64 << 10
		if c.history == time.Hour {
			most = 32 << 10
		}
		// Six series at least: over fewer, the process's own buffers move
		// the figure by kilobytes a series from run to run.
		n := max(c.series/10, 6)
		got := forecastRuleRetained(t, c.step, c.history, n, 3)
		t.Logf("step %v, %v of history: %.0f bytes a series", c.step, c.history, got)
		if got > float64(most) {
			t.Errorf("step %v, %v of history: a series retains %.0f bytes, want at most %d", c.step, c.history, got, most)
		}
	}
}
