package forecasting

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func logResult(t *testing.T, name string, r *BacktestResult) {
	t.Helper()
	t.Logf("%-22s %-8s origins=%d MAE=%.3f ratio=%.3f (naive %.3f snaive %.3f mean %.3f) sMAPE=%.2f%% coverage=%.3f above=%.3f fallback=%d chosen=%v",
		name, r.Model, r.Origins, r.MAE, r.Ratio, r.NaiveMAE, r.SeasonalNaiveMAE, r.MeanMAE, r.SMAPE, r.Coverage, r.AboveUpper, r.FallbackOrigins, r.Chosen)
}

func TestServegenReferenceBaselines(t *testing.T) {
	y := readValues(t, "servegen/aggregate_rate_language_m-large.csv")
	r, err := Backtest(y, 10*time.Minute, ModelNaive, 1, 0.9, 144)
	if err != nil {
		t.Fatal(err)
	}
	round := func(v float64, d int) float64 { p := math.Pow(10, float64(d)); return math.Round(v*p) / p }
	// Published: naive 19.98, seasonal naive 74.0, mean of the last day 50.0.
	if round(r.NaiveMAE, 2) != 19.98 || round(r.SeasonalNaiveMAE, 1) != 74.0 || round(r.MeanMAE, 1) != 50.0 {
		t.Fatalf("baselines naive %.4f seasonal %.4f mean %.4f, want 19.98, 74.0, 50.0", r.NaiveMAE, r.SeasonalNaiveMAE, r.MeanMAE)
	}
	// To two decimals on these origins (144..2014).
	if round(r.SeasonalNaiveMAE, 2) != 74.02 || round(r.MeanMAE, 2) != 50.02 || r.Origins != 1871 {
		t.Fatalf("seasonal %.4f mean %.4f origins %d", r.SeasonalNaiveMAE, r.MeanMAE, r.Origins)
	}
	if r.MAE != r.NaiveMAE {
		t.Fatalf("the naive model's MAE %.6f differs from the naive baseline's %.6f on the same origins", r.MAE, r.NaiveMAE)
	}
}

// TestTargets measures the defaults on the shared data and checks them
// against the bars of the project: run with -v to see the figures.
func TestTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("backtests over the shared data")
	}
	check := func(name string, r *BacktestResult, maxRatio float64) {
		t.Helper()
		logResult(t, name, r)
		if r.Ratio > maxRatio || r.Coverage < 0.85 || r.Coverage > 0.95 || r.AboveUpper > 0.075 {
			t.Errorf("%s: ratio %.3f (bar %.2f), coverage %.3f, above upper %.3f", name, r.Ratio, maxRatio, r.Coverage, r.AboveUpper)
		}
	}
	// The bars for the 10-minute traces: coverage 0.87–0.93.
	covered := func(name string, r *BacktestResult) {
		t.Helper()
		if r.Coverage < 0.87 || r.Coverage > 0.93 || r.AboveUpper > 0.07 {
			t.Errorf("%s: coverage %.3f (want 0.87–0.93), above upper %.3f (want ≤ 0.07)", name, r.Coverage, r.AboveUpper)
		}
	}
	for _, c := range []struct {
		name, file, model string
		horizon           int
		bar               float64
		covered           bool
	}{
		{"m-large", "m-large", ModelAuto, 1, 0.985, true},
		{"m-large revert", "m-large", ModelRevert, 1, 0.99, false},
		// Two steps ahead: the horizon a scale backtest decides on at these steps.
		{"m-large two steps ahead", "m-large", ModelAuto, 2, 1.0, false},
		{"m-small", "m-small", ModelAuto, 1, 1.0, true},
	} {
		y := readValues(t, "servegen/aggregate_rate_language_"+c.file+".csv")
		r, err := Backtest(y, 10*time.Minute, c.model, c.horizon, 0.9, 144)
		if err != nil {
			t.Fatal(err)
		}
		check(c.name, r, c.bar)
		if c.covered {
			covered(c.name, r)
		}
		for _, row := range r.Rows {
			if row.Yhat < 0 || row.Lower < 0 || math.IsNaN(row.Yhat) {
				t.Fatalf("%s: row %+v", c.name, row)
			}
		}
	}

	// Bottom-up from each client's rate, the bars: MAE ≤ 0.97 of
	// the best baseline, coverage 0.87–0.93, above upper ≤ 0.07.
	for _, service := range []string{"m-large", "m-small"} {
		r, err := BacktestSum(readServegenParts(t, service), BacktestOptions{
			Options: Options{Step: 10 * time.Minute, Horizon: 1}, MinHistory: 144})
		if err != nil {
			t.Fatal(err)
		}
		check(service+" bottom-up", r, 0.97)
		covered(service+" bottom-up", r)
		for _, row := range r.Rows {
			if row.Yhat < 0 || row.Lower < 0 || math.IsNaN(row.Yhat) {
				t.Fatalf("%s bottom-up: row %+v", service, row)
			}
		}
	}

	// Per-minute Poisson counts with the m-large daily shape, a week,
	// scored at lead 10 from the origins with a day of history.
	shape := dailyShape(t)
	for _, c := range []struct {
		mean, bar float64
	}{{3, 1.01}, {30, 0.91}, {300, 0.79}} {
		y := syntheticDaily(shape, 7, c.mean, 1)
		r, err := Backtest(y, time.Minute, ModelAuto, 10, 0.9, 1440)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("per-minute mean %g", c.mean), r, c.bar)
	}

	// The requests each model of the generated fleet served per minute
	// (the increase of vllm:request_success_total), a week, at lead 10.
	byModel := fleetPerMinute(t)
	for _, c := range []struct {
		model string
		bar   float64
	}{{"llama-3.1-70b-instruct", 0.77}, {"qwen2.5-32b-instruct", 0.85}, {"mistral-7b-instruct", 0.76}} {
		y, ok := byModel[c.model]
		if !ok {
			t.Fatalf("the fleet has no model %s", c.model)
		}
		r, err := Backtest(y, time.Minute, ModelAuto, 10, 0.9, 1440)
		if err != nil {
			t.Fatal(err)
		}
		check("fleet "+c.model, r, c.bar)
	}

	// One hour of real per-minute counts: less than a period, so every
	// forecast is a fallback and says so.
	for _, s := range []struct {
		name string
		y    []float64
	}{
		{"azure code", readAzure(t, "llm-traces/AzureLLMInferenceTrace_code.csv")},
		{"azure conv", readAzure(t, "llm-traces/AzureLLMInferenceTrace_conv.csv")},
		{"mooncake", readMooncake(t, "llm-traces/mooncake/conversation_trace.jsonl")},
	} {
		r, err := Backtest(s.y, time.Minute, ModelAuto, 10, 0.9, 10)
		if err != nil {
			t.Fatal(err)
		}
		logResult(t, s.name, r)
		if r.FallbackOrigins != r.Origins || !math.IsNaN(r.SeasonalNaiveMAE) {
			t.Errorf("%s: %d of %d origins flagged as fallback; seasonal naive %g", s.name, r.FallbackOrigins, r.Origins, r.SeasonalNaiveMAE)
		}
	}
}

// dailyShape is the mean daily profile of m-large (144 ten-minute values).
func dailyShape(t testing.TB) []float64 {
	y := readValues(t, "servegen/aggregate_rate_language_m-large.csv")
	shape := make([]float64, 144)
	for i, v := range y {
		shape[i%144] += v / float64(len(y)/144)
	}
	return shape
}
