package forecasting

import (
	"fmt"

	"gonum.org/v1/gonum/optimize"
)

// daysPerWeek is the length of the weekly season in periods.
const daysPerWeek = 7

// hwWeekly is double seasonal Holt–Winters (Taylor 2003, "Short-term
// electricity demand forecasting using double seasonal exponential
// smoothing"): a level with a damped trend, a daily season of p steps and a
// weekly one of 7p steps, both additive, and Taylor's adjustment for
// first-order autocorrelation of the one-step errors. With log set it models
// log1p(max(y, 0)) and forecasts expm1 of that, as hw_log does, so a weekend
// that is 40 % quieter is one shift of the weekly season at every hour.
//
// Equations (d and w the daily and weekly indices one day and one week
// back, e the last one-step error of the unadjusted forecast):
//
//	base = l + φb + d + w;  ŷ = base + λe;  e' = x − base
//	l' = α(x − d − w) + (1 − α)(l + φb)
//	b' = β(l' − l) + (1 − β)φb
//	d' = δ(x − l' − w) + (1 − δ)d
//	w' = ω(x − l' − d) + (1 − ω)w
//
// and at lead h: l + (φ + … + φ^h)b + d + w (the indices of the target
// step) + λ^h e.
type hwWeekly struct {
	p int // daily period in steps; the week is daysPerWeek·p
	logScale

	par   weeklyParams
	start weeklyState // the state init computed, which mse starts from (during a fit)
	level float64
	slope float64
	err   float64   // the last one-step error of the unadjusted forecast
	day   []float64 // day[dpos] is the daily index of the next step
	week  []float64 // week[wpos] is the weekly index of the next step
	dpos  int
	wpos  int
}

// weeklyState is the initial state init computes once per fit.
type weeklyState struct {
	level, slope float64
	day, week    []float64
}

// weeklyParams are the smoothing parameters of [hwWeekly].
type weeklyParams struct {
	Alpha  float64 // level, in (0, 1)
	Beta   float64 // trend, in (0, 1)
	Delta  float64 // daily season, in (0, 1)
	Omega  float64 // weekly season, in (0, 1)
	Phi    float64 // trend damping, in [0.8, 0.99]
	Lambda float64 // autocorrelation adjustment, in (0, 1)
}

func newWeekly(period int, log bool) *hwWeekly {
	return &hwWeekly{p: period, logScale: logScale{log: log}}
}

func (m *hwWeekly) name() string {
	if m.log {
		return ModelHWWeeklyLog
	}
	return ModelHWWeekly
}

// need: one week to initialise the seasons and one more to fit on.
func (m *hwWeekly) need() int { return 2 * daysPerWeek * m.p }

// init sets the initial state (m.start) from the start of x (already
// transformed, at least one week) and returns how many points it used: the
// first week, where the filter starts. The level is the first week's mean
// and the trend the step from its mean to the second's; the daily season
// is the mean day of the first one or two weeks, each day taken relative
// to its week's mean, and the weekly season what is left at each step of
// the week once that mean day is taken off (the day-of-week deviations),
// both smoothed over about half an hour.
func (m *hwWeekly) init(x []float64) int {
	p := m.p
	w := daysPerWeek * p
	k := min(len(x)/w, 2)
	st := &m.start
	st.day = resize(st.day, p)
	st.week = resize(st.week, w)
	clear(st.day)
	clear(st.week)
	mus := [2]float64{}
	for r := range k {
		mus[r] = meanOf(x[r*w : (r+1)*w])
		for i, v := range x[r*w : (r+1)*w] {
			st.day[i%p] += (v - mus[r]) / float64(daysPerWeek*k)
		}
	}
	for r := range k {
		for i, v := range x[r*w : (r+1)*w] {
			st.week[i] += (v - mus[r] - st.day[i%p]) / float64(k)
		}
	}
	if sw := p / 96; sw > 0 {
		smoothCircular(st.day, sw)
		smoothCircular(st.week, sw)
	}
	st.level, st.slope = mus[0], 0
	if k == 2 {
		st.slope = (mus[1] - mus[0]) / float64(w)
	}
	return w
}

// reset sets the state to the initial one.
func (m *hwWeekly) reset() {
	m.level, m.slope, m.err = m.start.level, m.start.slope, 0
	m.day = append(m.day[:0], m.start.day...)
	m.week = append(m.week[:0], m.start.week...)
	m.dpos, m.wpos = 0, 0
}

// step applies one observation x (transformed) and returns the one-step
// forecast made before it.
func (m *hwWeekly) step(x float64) float64 {
	par := &m.par
	a, om := par.Alpha, par.Omega
	d, w := m.day[m.dpos], m.week[m.wpos]
	damped := m.level + par.Phi*m.slope
	base := damped + d + w
	yhat := base + par.Lambda*m.err
	m.err = x - base
	lvl := a*(x-d-w) + (1-a)*damped
	m.slope = par.Beta*(lvl-m.level) + (1-par.Beta)*par.Phi*m.slope
	m.day[m.dpos] = par.Delta*(x-lvl-w) + (1-par.Delta)*d
	m.week[m.wpos] = om*(x-lvl-d) + (1-om)*w
	m.level = lvl
	if m.dpos++; m.dpos == len(m.day) {
		m.dpos = 0
	}
	if m.wpos++; m.wpos == len(m.week) {
		m.wpos = 0
	}
	return yhat
}

func (m *hwWeekly) update(y float64) { m.step(m.in(y)) }

func (m *hwWeekly) predict(out []float64) {
	phi, lam := m.par.Phi, m.par.Lambda
	cum, pw, adj := 0.0, 1.0, m.err
	d, w := m.dpos, m.wpos
	for i := range out {
		pw *= phi
		cum += pw
		adj *= lam
		out[i] = m.out(m.level + cum*m.slope + m.day[d] + m.week[w] + adj)
		if d++; d == len(m.day) {
			d = 0
		}
		if w++; w == len(m.week) {
			w = 0
		}
	}
}

// mse runs the filter over x[start:] from the initial state with the
// current parameters and returns the mean squared one-step error (on the
// transformed scale).
func (m *hwWeekly) mse(x []float64, start int) float64 {
	m.reset()
	var sum float64
	for _, v := range x[start:] {
		e := v - m.step(v)
		sum += e * e
	}
	return fitLoss(sum, len(x)-start)
}

// setParams maps unconstrained optimiser coordinates to parameters: α, β,
// δ, φ, λ and, when there is a sixth, ω (else ω keeps its value).
func (m *hwWeekly) setParams(z []float64) {
	om := m.par.Omega
	if len(z) > 5 {
		om = logistic(z[5])
	}
	m.par = weeklyParams{
		Alpha: logistic(z[0]), Beta: logistic(z[1]), Delta: logistic(z[2]),
		Phi: 0.8 + 0.19*logistic(z[3]), Lambda: logistic(z[4]), Omega: om,
	}
}

// weeklyStart is where Nelder–Mead starts: a slow level (the seasons carry
// the day-of-week changes), a slower trend, and a moderate short-term
// correction; weeklyOmega is the weekly smoothing used while it cannot be
// fitted.
var weeklyStart = []float64{logit(0.1), logit(0.01), logit(0.1), logit((0.95 - 0.8) / 0.19), logit(0.5)}

const weeklyOmega = 0.05

// fit estimates the smoothing parameters by minimising the one-step squared
// error with Nelder–Mead on logit-transformed parameters, then sets the
// state by running the filter over all of y. The filter starts after the
// first week, and a weekly index updated at a step is first used a week
// later: ω changes no one-step error before the third week. With less than
// three weeks it is not fitted but held at weeklyOmega (a weekly season
// that moves a twentieth of the way to each new week), since the optimiser
// would otherwise leave it anywhere.
func (m *hwWeekly) fit(y []float64) error {
	if m.p < 1 || len(y) < m.need() {
		return errNeed(m.name(), m.need(), len(y))
	}
	x := make([]float64, len(y))
	for i, v := range y {
		x[i] = m.in(v)
	}
	z0 := append([]float64(nil), weeklyStart...)
	m.par.Omega = weeklyOmega
	if len(x) >= 3*daysPerWeek*m.p {
		z0 = append(z0, logit(weeklyOmega))
	}
	start := m.init(x)
	obj := func(z []float64) float64 {
		m.setParams(z)
		return m.mse(x, start)
	}
	// A simplex one unit wide on the logit scale: the smoothing
	// parameters of per-minute data often lie orders of magnitude below
	// the start, which a small simplex reaches only after hundreds of
	// evaluations (each a pass over the history); this one takes about
	// half as many for the same or a lower error.
	res, err := optimize.Minimize(optimize.Problem{Func: obj}, z0, &optimize.Settings{
		FuncEvaluations: 40 * len(z0),
		Converger:       &optimize.FunctionConverge{Relative: 1e-4, Iterations: 15},
	}, &optimize.NelderMead{SimplexSize: 1})
	switch {
	case res != nil && res.F < obj(z0):
		m.setParams(res.X)
	case err != nil && res == nil:
		return fmt.Errorf("fitting %s: %w", m.name(), err)
	default:
		m.setParams(z0)
	}
	m.mse(x, start) // leaves the state at the end of y
	// The initial state only served the fit: eight periods of values.
	m.start = weeklyState{}
	return nil
}
