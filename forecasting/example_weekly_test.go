package forecasting_test

import (
	"fmt"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
)

// Hourly traffic with a daily shape and weekends at half the weekday level.
// From a Sunday evening the weekly model (which needs the two weeks of
// history Options.Weekly keeps) forecasts Monday's return to the weekday
// level; the daily one carries Sunday's level on. Actual values in
// parentheses.
func ExampleOptions_weekly() {
	rate := func(i int) float64 {
		level := 100.0
		if i/24%7 >= 5 { // the first day is a Monday
			level = 50
		}
		return level * (1 + 0.5*math.Sin(2*math.Pi*float64(i%24)/24))
	}
	var history []float64
	for i := range 3*7*24 - 3 { // three weeks, less Sunday's last three hours
		history = append(history, rate(i))
	}
	for _, model := range []string{forecasting.ModelHWAddDamped, forecasting.ModelHWWeekly} {
		f, err := forecasting.New(forecasting.Options{Step: time.Hour, Model: model, Horizon: 6, Weekly: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := f.Fit(0, history); err != nil {
			fmt.Println(err)
			return
		}
		fc := f.Forecast()
		fmt.Printf("%-18s", fc.Model)
		for h, m := range fc.Mean {
			fmt.Printf(" %.0f (%.0f)", m, rate(len(history)+h))
		}
		fmt.Println()
	}
	// Output:
	// hw_additive_damped 35 (32) 44 (37) 55 (44) 66 (100) 77 (113) 87 (125)
	// hw_weekly          32 (32) 37 (37) 44 (44) 100 (100) 113 (113) 125 (125)
}
