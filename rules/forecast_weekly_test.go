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

// A forecast rule's series keep what a scale rule reading it reaches back
// to (its burst window and the period before it, or its hold) when that is
// more than the rule's history; a reload that changes the reach makes the
// forecast rule afresh.
func TestForecastRuleKeepsWhatItsScaleRuleReads(t *testing.T) {
	maxHistory := func(gs []rulefmt.Group) int {
		t.Helper()
		built, err := Build(gs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range built[0].rules {
			if fr, ok := r.(*forecastRule); ok {
				return fr.opts.MaxHistory
			}
		}
		t.Fatal("no forecast rule")
		return 0
	}
	gs := forecastGroups() // history 7h at 1m
	sc := gs[0].Rules[1].Spec.(*rulefmt.Scale)
	if got := maxHistory(gs); got != 420 {
		t.Errorf("no burst headroom, no hold: MaxHistory %d, want the history's 420", got)
	}
	sc.Hold = 30 * time.Minute
	if got := maxHistory(gs); got != 420 {
		t.Errorf("a hold of 30m within the history: MaxHistory %d, want 420", got)
	}
	sc.BurstQuantile, sc.BurstWindow, sc.BurstPeriod = 0.98, 6*time.Hour, 24*time.Hour
	if got := maxHistory(gs); got != 30*60+1 {
		t.Errorf("a burst window of 6h a day back: MaxHistory %d, want 1801 (30h and the newest)", got)
	}
	sc.BurstPeriod = 0
	if got := maxHistory(gs); got != 420 {
		t.Errorf("a burst window of 6h, no period: MaxHistory %d, want 420", got)
	}

	// A reload that changes only the scale rule's reach does not keep the
	// forecast rule's state; one that changes nothing keeps both.
	sc.BurstPeriod = 24 * time.Hour
	first, err := Build(gs)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newTestManager(testOptions{Groups: gs, Querier: &exprStore{}, Output: &recorder{}, Events: &eventRecorder{}})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(first)
	same, err := Build(gs)
	if err != nil {
		t.Fatal(err)
	}
	if kept := m.Update(same); kept != 2 {
		t.Errorf("the same configuration kept %d rules, want 2", kept)
	}
	gs = forecastGroups() // a new configuration: the old rules hold the old one's
	sc = gs[0].Rules[1].Spec.(*rulefmt.Scale)
	sc.Hold, sc.BurstQuantile, sc.BurstWindow, sc.BurstPeriod = 30*time.Minute, 0.98, 6*time.Hour, 12*time.Hour
	other, err := Build(gs)
	if err != nil {
		t.Fatal(err)
	}
	if kept := m.Update(other); kept != 0 {
		t.Errorf("a scale rule reaching back 18h instead of 30h kept %d rules, want 0 (the forecast rule keeps less, the scale rule is another)", kept)
	}
}
