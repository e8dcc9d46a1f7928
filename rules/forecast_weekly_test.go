package rules

import (
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// A forecast rule whose history holds two weeks (fourteen periods) keeps
// two weeks plus a calibration window per series, so the weekly models can
// be candidates; a shorter history keeps itself, its steps.
func TestForecastOptionsWeekly(t *testing.T) {
	const day = 24 * time.Hour
	for _, c := range []struct {
		step, history, period time.Duration
		weekly                bool
		maxHistory            int
	}{
		{time.Minute, 10_000 * time.Minute, day, false, 10_000},            // the default history at 1m
		{2 * time.Minute, 14*day - 2*time.Minute, day, false, 14*720 - 1},  // just short of two weeks
		{2 * time.Minute, 14 * day, day, true, 14*720 + 720},               // two weeks: calibration one period
		{2 * time.Minute, 15 * day, day, true, 14*720 + 720},               // more history changes nothing more
		{10 * time.Minute, 15 * day, day, true, 14*144 + 200},              // calibration at least 200
		{time.Minute, 14 * time.Hour, time.Hour, true, 14*60 + 200},        // an hourly period: "weeks" of 7h
		{5 * time.Minute, 7 * day, day, false, 7 * 288},                    // the default history at 5m
		{time.Minute, 10_000 * time.Minute, 12 * time.Hour, false, 10_000}, // 10,000 minutes < 14 half-days
		{15 * time.Second, day, day, false, 5760},                          // a day at 15 s
		{time.Minute, 7 * day, day, false, 7 * 1440},                       // a week
		{15 * time.Second, time.Hour, day, false, 240},                     // an hour at 15 s
	} {
		opts := forecastOptions(&rulefmt.Forecast{Step: c.step, History: c.history, Period: c.period, Horizon: 10 * time.Minute, Model: "auto", Level: 0.9})
		f, err := forecasting.New(opts)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := f.Options(); got.Weekly != c.weekly || got.MaxHistory != c.maxHistory {
			t.Errorf("step %v history %v period %v: Weekly %v MaxHistory %d, want %v %d", c.step, c.history, c.period, got.Weekly, got.MaxHistory, c.weekly, c.maxHistory)
		}
	}
}
