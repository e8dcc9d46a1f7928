package forecasting

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// weeklyBacktest backtests one model on per-minute data with the history
// of Options.Weekly, scoring lead 10 from the origins after 15 days.
func weeklyBacktest(t *testing.T, y []float64, model string, weekly bool) *BacktestResult {
	t.Helper()
	r, err := BacktestWith(y, BacktestOptions{
		Options:    Options{Step: time.Minute, Model: model, Horizon: 10, Weekly: weekly},
		MinHistory: 15 * 1440,
	})
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	return r
}

// On weekends 40 % quieter the weekly models beat the daily ones at lead 10, and auto with Weekly picks them.
func TestWeeklyBeatsDailyOnWeekends(t *testing.T) {
	if testing.Short() {
		t.Skip("four weeks of per-minute backtests")
	}
	shape := dailyShape(t)
	const days, mean, weekend = 28, 300, 0.6
	y := syntheticWeekly(shape, days, mean, weekend, 5)
	lam := weeklyRates(shape, days, mean, weekend)
	floor, _ := leadMAE(weeklyBacktest(t, y, ModelNaive, true), 10, y, lam)

	weekendMAE := map[string]float64{}
	for _, model := range []string{ModelHWAddDamped, ModelHWLog, ModelHWWeekly, ModelHWWeeklyLog} {
		r := weeklyBacktest(t, y, model, true)
		we, wd := leadMAE(r, 10, y, nil)
		weekendMAE[model] = we
		t.Logf("%-20s MAE at lead 10: weekend %.3f weekday %.3f (noise floor on weekends %.3f)", model, we, wd, floor)
	}
	daily := min(weekendMAE[ModelHWAddDamped], weekendMAE[ModelHWLog])
	for _, model := range []string{ModelHWWeekly, ModelHWWeeklyLog} {
		ratio := weekendMAE[model] / daily
		excess := (weekendMAE[model] - floor) / (daily - floor)
		t.Logf("%s on weekends: %.3f of the better daily model's MAE, %.2f of its excess over the noise floor", model, ratio, excess)
		if ratio > 0.95 || excess > 0.6 {
			t.Errorf("%s on weekends: MAE ratio %.3f to the daily model (want ≤ 0.95), excess over the floor %.2f (want ≤ 0.6)", model, ratio, excess)
		}
	}

	today := weeklyBacktest(t, y, ModelAuto, false)
	weekly := weeklyBacktest(t, y, ModelAuto, true)
	weToday, _ := leadMAE(today, 10, y, nil)
	weWeekly, _ := leadMAE(weekly, 10, y, nil)
	t.Logf("auto on weekends: %.3f with Weekly, %.3f without (ratio %.3f); overall %.3f and %.3f; chosen %v",
		weWeekly, weToday, weWeekly/weToday, weekly.MAE, today.MAE, weekly.Chosen)
	if weWeekly > 0.85*weToday || weekly.MAE > today.MAE {
		t.Errorf("auto with Weekly: weekend MAE %.3f against %.3f without (want ≤ 0.85 of it), overall %.3f against %.3f",
			weWeekly, weToday, weekly.MAE, today.MAE)
	}
	for name := range weekly.Chosen {
		if !strings.Contains(name, ModelHWWeekly) {
			t.Errorf("auto with Weekly chose %s at %d origins; want a weekly model or a combination with one", name, weekly.Chosen[name])
		}
	}
}

// Without a weekly effect, auto with Weekly (two weeks of history, the
// weekly models among the candidates) is no less accurate than without.
func TestWeeklyNoWeeklyEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("four weeks of per-minute backtests")
	}
	shape := dailyShape(t)
	for _, mean := range []float64{3, 300} {
		y := syntheticWeekly(shape, 28, mean, 1, 5)
		today := weeklyBacktest(t, y, ModelAuto, false)
		weekly := weeklyBacktest(t, y, ModelAuto, true)
		t.Logf("mean %g: auto MAE at lead 10 %.4f with Weekly, %.4f without (ratio %.4f)", mean, weekly.MAE, today.MAE, weekly.MAE/today.MAE)
		if weekly.MAE > 1.01*today.MAE {
			t.Errorf("mean %g: auto with Weekly MAE %.4f, without %.4f: more than 1 %% worse", mean, weekly.MAE, today.MAE)
		}
	}
}

// weeklyReference runs Taylor's equations written over the whole time
// axis (D[t−p], W[t−7p]) from the model's initial state over x, and
// returns the forecasts for leads 1..h from the last point.
func weeklyReference(m *hwWeekly, x []float64, h int) []float64 {
	p, w := m.p, daysPerWeek*m.p
	par := m.par
	n := len(x)
	D, W := make([]float64, n), make([]float64, n)
	copy(D[w-p:], m.start.day)
	copy(W, m.start.week)
	L, T, e := m.start.level, m.start.slope, 0.0
	for t := w; t < n; t++ {
		base := L + par.Phi*T + D[t-p] + W[t-w]
		e = x[t] - base
		l := par.Alpha*(x[t]-D[t-p]-W[t-w]) + (1-par.Alpha)*(L+par.Phi*T)
		T = par.Beta*(l-L) + (1-par.Beta)*par.Phi*T
		D[t] = par.Delta*(x[t]-l-W[t-w]) + (1-par.Delta)*D[t-p]
		W[t] = par.Omega*(x[t]-l-D[t-p]) + (1-par.Omega)*W[t-w]
		L = l
	}
	out := make([]float64, h)
	for k := 1; k <= h; k++ {
		var damp float64
		for j := 1; j <= k; j++ {
			damp += math.Pow(par.Phi, float64(j))
		}
		// The latest index of the target's phase in each season.
		dj, wj := n-1+k, n-1+k
		for dj >= n {
			dj -= p
		}
		for wj >= n {
			wj -= w
		}
		out[k-1] = m.out(L + damp*T + D[dj] + W[wj] + math.Pow(par.Lambda, float64(k))*e)
	}
	return out
}

// The streaming state after Update matches the equations recomputed over
// all the data, and a refit's filter over the same data with the same
// parameters.
func TestWeeklyStreamingMatchesRecomputation(t *testing.T) {
	const p, weeks, h = 24, 5, 30 // leads past a day
	rng := rand.New(rand.NewPCG(21, 22))
	y := make([]float64, weeks*daysPerWeek*p)
	for i := range y {
		lvl := 100.0
		if i/p%7 >= 5 {
			lvl = 60
		}
		y[i] = lvl + 30*math.Sin(2*math.Pi*float64(i)/p) + 0.02*float64(i) + 5*rng.NormFloat64()
	}
	for _, name := range []string{ModelHWWeekly, ModelHWWeeklyLog} {
		mm, _ := newModel(name, p, h)
		m := mm.(*hwWeekly)
		fit := 3 * daysPerWeek * p
		if err := m.fit(y[:fit]); err != nil {
			t.Fatal(err)
		}
		if m.par.Omega == weeklyOmega {
			t.Errorf("%s: ω not fitted on three weeks", name)
		}
		for _, v := range y[fit:] {
			m.update(v)
		}
		got := make([]float64, h)
		m.predict(got)

		x := make([]float64, len(y))
		for i, v := range y {
			x[i] = m.in(v)
		}
		m.init(x[:fit]) // the initial state of the fit, which it releases
		want := weeklyReference(m, x, h)
		again := &hwWeekly{p: p, logScale: m.logScale, par: m.par}
		again.mse(x, again.init(x))
		refit := make([]float64, h)
		again.predict(refit)
		for i := range h {
			if !near(got[i], want[i], 1e-9*math.Abs(want[i])) || !near(got[i], refit[i], 1e-9*math.Abs(want[i])) {
				t.Fatalf("%s lead %d: streaming %.12g, recomputed %.12g, refit filter %.12g", name, i+1, got[i], want[i], refit[i])
			}
		}
	}
}

// Auto offers the weekly models only with two weeks of history and a
// validation window; naming one with less falls back and says what it
// needs, and the options refuse a MaxHistory that could never hold it.
func TestWeeklyNeedsTwoWeeks(t *testing.T) {
	const p = 144 // ten-minute steps
	need := 2 * daysPerWeek * p
	for _, c := range []struct {
		n    int
		want bool
	}{{need - 1, false}, {need + minValidationPoints - 1, false}, {need + minValidationPoints, true}, {need + p, true}} {
		names := autoCandidates(c.n, p, 10, true)
		if got := slices.Contains(names, ModelHWWeekly) && slices.Contains(names, ModelHWWeeklyLog); got != c.want {
			t.Errorf("auto on %d points: candidates %v; weekly ones offered %v, want %v", c.n, names, got, c.want)
		}
	}

	o, _ := New(Options{Step: time.Minute})
	w, _ := New(Options{Step: time.Minute, Weekly: true})
	named, _ := New(Options{Step: time.Minute, Model: ModelHWWeeklyLog})
	if o.Options().MaxHistory != 7*1440 || w.Options().MaxHistory != 14*1440+1440 || !named.Options().Weekly || named.Options().MaxHistory != 14*1440+1440 {
		t.Fatalf("MaxHistory by default %d, with Weekly %d, naming a weekly model %d (Weekly %v); want 10080, 21600, 21600 (true)",
			o.Options().MaxHistory, w.Options().MaxHistory, named.Options().MaxHistory, named.Options().Weekly)
	}
	_, err := New(Options{Step: 10 * time.Minute, Model: ModelHWWeekly, MaxHistory: 1000})
	if err == nil || !strings.Contains(err.Error(), "hw_weekly needs two weeks of history, 2016 points, but MaxHistory keeps 1000") {
		t.Fatalf("hw_weekly with MaxHistory 1000: %v", err)
	}

	f, err := New(Options{Step: 10 * time.Minute, Model: ModelHWWeekly})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fit(0, seasonalSeries(13, 6)); err != nil {
		t.Fatal(err)
	}
	fc := f.Forecast()
	if fc.Need != need || !strings.HasPrefix(fc.Fallback, "hw_weekly needs 2016 points of history (336h0m0s at 10m0s steps), have 1872: using ") {
		t.Fatalf("13 days for hw_weekly: fallback %q, need %d", fc.Fallback, fc.Need)
	}
	m, _ := newModel(ModelHWWeekly, p, 1)
	if err := m.fit(make([]float64, 1872)); err == nil || err.Error() != "model hw_weekly needs at least 2016 points of history, have 1872" {
		t.Fatalf("fitting hw_weekly on 13 days: %v", err)
	}
	if err := f.Fit(0, seasonalSeries(15, 6)); err != nil {
		t.Fatal(err)
	}
	if fc := f.Forecast(); fc.Fallback != "" || fc.Model != ModelHWWeekly {
		t.Fatalf("15 days for hw_weekly: model %s, fallback %q", fc.Model, fc.Fallback)
	}
}

// A forecast from an origin depends on the data up to it only, across the
// weekly models' refits.
func TestWeeklyCausality(t *testing.T) {
	y := seasonalSeries(5, 3) // 720 ten-minute points; with a period of 24 steps, over four weeks
	const cut = 600
	z := append([]float64(nil), y...)
	for i := cut + 1; i < len(z); i++ {
		z[i] *= 3
	}
	for _, model := range []string{ModelHWWeekly, ModelHWWeeklyLog, ModelAuto} {
		run := func(y []float64) *BacktestResult {
			r, err := BacktestWith(y, BacktestOptions{
				Options:    Options{Step: 10 * time.Minute, Model: model, Horizon: 4, Period: 24, Weekly: true},
				MinHistory: 2*daysPerWeek*24 + 40,
			})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		a, b := run(y), run(z)
		compared := 0
		for i, r := range a.Rows {
			if r.Origin > cut {
				break
			}
			if s := b.Rows[i]; r.Yhat != s.Yhat || r.Lower != s.Lower || r.Upper != s.Upper {
				t.Fatalf("%s: forecast from origin %d lead %d changed with data after %d: %+v vs %+v", model, r.Origin, r.Lead, cut, r, s)
			}
			compared++
		}
		if compared == 0 || a.FallbackOrigins > 0 && model != ModelAuto {
			t.Fatalf("%s: compared %d rows, %d fallback origins", model, compared, a.FallbackOrigins)
		}
	}
}
