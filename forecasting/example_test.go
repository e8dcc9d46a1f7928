package forecasting_test

import (
	"fmt"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
)

// A Forecaster fitted on a series with a period of four steps forecasts the
// next period; its interval comes from its own recent errors, which are zero
// on this exact pattern.
func ExampleForecaster() {
	f, err := forecasting.New(forecasting.Options{
		Step: time.Minute, Model: forecasting.ModelSeasonalNaive,
		Period: 4, Horizon: 4, MinCalibration: 5, CalibrationSize: 200,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var history []float64
	for range 20 {
		history = append(history, 10, 20, 40, 30)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if err := f.Fit(t0, history); err != nil {
		fmt.Println(err)
		return
	}
	// One more sample arrives: the start of the next period.
	if err := f.Update(t0+int64(len(history))*60_000, 10); err != nil {
		fmt.Println(err)
		return
	}
	fc := f.Forecast()
	for h := range fc.Mean {
		fmt.Printf("lead %d: %.0f [%.0f, %.0f]\n", h+1, fc.Mean[h], fc.Lower[h], fc.Upper[h])
	}
	fmt.Printf("peak %.0f at lead %d, model %s, fallback %q\n", fc.Peak, fc.PeakLead, fc.Model, fc.Fallback)
	// Output:
	// lead 1: 20 [20, 20]
	// lead 2: 40 [40, 40]
	// lead 3: 30 [30, 30]
	// lead 4: 10 [10, 10]
	// peak 40 at lead 2, model seasonal_naive, fallback ""
}

// Backtest scores a model against the naive, seasonal naive and mean
// baselines on the same origins.
func ExampleBacktest() {
	var y []float64
	for i := range 60 {
		y = append(y, float64(100+i%6*10)) // a ramp that resets every 6 steps
	}
	r, err := forecasting.BacktestWith(y, forecasting.BacktestOptions{
		Options:    forecasting.Options{Step: time.Minute, Model: forecasting.ModelSeasonalNaive, Period: 6, Horizon: 1},
		MinHistory: 12,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("origins %d, MAE %.1f, naive %.1f, seasonal naive %.1f, mean %.1f\n",
		r.Origins, r.MAE, r.NaiveMAE, r.SeasonalNaiveMAE, r.MeanMAE)
	// Output:
	// origins 47, MAE 0.0, naive 16.0, seasonal naive 0.0, mean 14.8
}
