package forecasting

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"
)

type seasonKind int

const (
	seasonNone seasonKind = iota
	seasonAdditive
	seasonMultiplicative
)

// HWParams are the smoothing parameters of a Holt–Winters model.
type HWParams struct {
	Alpha float64 // level, in (0, 1)
	Beta  float64 // trend, in (0, 1); unused without a trend
	Gamma float64 // season, in (0, 1); unused without a season
	Phi   float64 // trend damping, in (0, 1]; 1 is no damping
}

// holtWinters is exponential smoothing with an optional (damped) trend and an
// optional additive or multiplicative season of p steps. With log set, it
// models log1p(max(y, 0)) and forecasts expm1 of that, a median-like
// forecast that suits low counts and multiplicative swings.
//
// Equations (classical Holt–Winters, with damping φ; s is the season index
// one period back, ŷ the one-step forecast):
//
//	additive:       ŷ = l + φb + s
//	                l' = α(y − s) + (1 − α)(l + φb)
//	                b' = β(l' − l) + (1 − β)φb
//	                s' = γ(y − l') + (1 − γ)s
//	multiplicative: ŷ = (l + φb)·s
//	                l' = α(y / s) + (1 − α)(l + φb)
//	                s' = γ(y / l') + (1 − γ)s
//
// and at lead h: l + (φ + … + φ^h)b combined with the season index of the
// target step.
type holtWinters struct {
	kind   seasonKind
	p      int
	trend  bool
	damped bool
	logScale

	par    HWParams
	level  float64
	slope  float64
	season []float64 // season[pos] is the index of the next step
	pos    int
}

func (m *holtWinters) name() string {
	switch {
	case m.kind == seasonNone && !m.trend:
		return ModelSES
	case m.log:
		return ModelHWLog
	case m.kind == seasonMultiplicative && m.damped:
		return ModelHWMulDamped
	case m.kind == seasonMultiplicative:
		return ModelHWMultiplic
	case m.damped:
		return ModelHWAddDamped
	}
	return ModelHWAdditive
}

// need: one period to initialise the season and one more to fit on.
func (m *holtWinters) need() int {
	if m.kind == seasonNone {
		return 3
	}
	return 2 * m.p
}

// logScale is whether a model is fitted on the log1p scale: in maps a
// sample there, out maps a forecast back.
type logScale struct{ log bool }

func (l logScale) in(y float64) float64 {
	if l.log {
		return math.Log1p(max(y, 0))
	}
	return y
}

func (l logScale) out(v float64) float64 {
	if l.log {
		return math.Expm1(v)
	}
	return v
}

// init sets the state from the start of x (already transformed) and returns
// how many points it used.
func (m *holtWinters) init(x []float64) int {
	if m.kind == seasonNone {
		m.level, m.slope = x[0], 0
		m.season = m.season[:0]
		return 1
	}
	p := m.p
	l0 := meanOf(x[:p])
	m.level, m.slope = l0, 0
	if m.trend && len(x) >= 2*p {
		m.slope = (meanOf(x[p:2*p]) - l0) / float64(p)
	}
	if cap(m.season) < p {
		m.season = make([]float64, p)
	}
	m.season = m.season[:p]
	// The season starts as the average shape of up to seven periods,
	// each taken relative to its own mean, smoothed over about half an
	// hour: the noise of single steps would otherwise stay in it.
	k := min(len(x)/p, 7)
	clear(m.season)
	for r := range k {
		seg := x[r*p : (r+1)*p]
		mu := meanOf(seg)
		for i, v := range seg {
			if m.kind == seasonMultiplicative {
				m.season[i] += v / math.Max(mu, 1e-9) / float64(k)
			} else {
				m.season[i] += (v - mu) / float64(k)
			}
		}
	}
	if w := p / 96; w > 0 {
		smoothCircular(m.season, w)
	}
	m.pos = 0
	return p
}

// step applies one observation x (transformed) and returns the one-step
// forecast made before it.
func (m *holtWinters) step(x float64) float64 {
	a, b, g, phi := m.par.Alpha, m.par.Beta, m.par.Gamma, m.par.Phi
	if !m.damped {
		phi = 1
	}
	base := m.level
	if m.trend {
		base += phi * m.slope
	}
	var yhat, lvl float64
	switch m.kind {
	case seasonNone:
		yhat = base
		lvl = a*x + (1-a)*base
	case seasonAdditive:
		s := m.season[m.pos]
		yhat = base + s
		lvl = a*(x-s) + (1-a)*base
		m.season[m.pos] = g*(x-lvl) + (1-g)*s
	case seasonMultiplicative:
		s := m.season[m.pos]
		yhat = base * s
		lvl = a*(x/math.Max(s, 1e-9)) + (1-a)*base
		m.season[m.pos] = g*(x/math.Max(lvl, 1e-9)) + (1-g)*s
	}
	if m.trend {
		m.slope = b*(lvl-m.level) + (1-b)*phi*m.slope
	}
	m.level = lvl
	if m.kind != seasonNone {
		if m.pos++; m.pos == m.p {
			m.pos = 0
		}
	}
	return yhat
}

func (m *holtWinters) update(y float64) { m.step(m.in(y)) }

func (m *holtWinters) predict(out []float64) {
	phi := m.par.Phi
	if !m.damped {
		phi = 1
	}
	cum, pw := 0.0, 1.0
	for i := range out {
		v := m.level
		if m.trend {
			pw *= phi
			cum += pw
			v += cum * m.slope
		}
		switch m.kind {
		case seasonAdditive:
			v += m.season[(m.pos+i)%m.p]
		case seasonMultiplicative:
			v *= m.season[(m.pos+i)%m.p]
		}
		out[i] = m.out(v)
	}
}

// mse runs the filter over x with the current parameters and returns the
// mean squared one-step error (on the transformed scale).
func (m *holtWinters) mse(x []float64) float64 {
	start := m.init(x)
	var sum float64
	for _, v := range x[start:] {
		e := v - m.step(v)
		sum += e * e
	}
	return fitLoss(sum, len(x)-start)
}

// setParams maps unconstrained optimiser coordinates to parameters.
func (m *holtWinters) setParams(z []float64) {
	m.par = HWParams{Alpha: logistic(z[0]), Phi: 1}
	i := 1
	if m.trend {
		m.par.Beta = logistic(z[i])
		i++
	}
	if m.kind != seasonNone {
		m.par.Gamma = logistic(z[i])
		i++
	}
	if m.damped {
		m.par.Phi = 0.8 + 0.19*logistic(z[i])
	}
}

// fit estimates the smoothing parameters by minimising the one-step squared
// error with Nelder–Mead on logit-transformed parameters, then sets the
// state by running the filter over all of y.
func (m *holtWinters) fit(y []float64) error {
	if len(y) < m.need() {
		return errNeed(m.name(), m.need(), len(y))
	}
	if m.kind == seasonMultiplicative {
		for i, v := range y {
			if v <= 0 {
				return fmt.Errorf("model %s needs positive values, point %d is %g", m.name(), i, v)
			}
		}
	}
	x := make([]float64, len(y))
	for i, v := range y {
		x[i] = m.in(v)
	}
	z0 := []float64{logit(0.5)}
	if m.trend {
		z0 = append(z0, logit(0.02))
	}
	if m.kind != seasonNone {
		z0 = append(z0, logit(0.1))
	}
	if m.damped {
		z0 = append(z0, logit((0.95-0.8)/0.19))
	}
	obj := func(z []float64) float64 {
		m.setParams(z)
		return m.mse(x)
	}
	res, err := optimize.Minimize(optimize.Problem{Func: obj}, z0, &optimize.Settings{
		FuncEvaluations: 80 * len(z0),
		Converger:       &optimize.FunctionConverge{Relative: 1e-4, Iterations: 15},
	}, &optimize.NelderMead{})
	switch {
	case res != nil && res.F < obj(z0):
		m.setParams(res.X)
	case err != nil && res == nil:
		return fmt.Errorf("fitting %s: %w", m.name(), err)
	default:
		m.setParams(z0)
	}
	m.mse(x) // leaves the state at the end of y
	return nil
}

func logistic(z float64) float64 {
	// Keep parameters off the open interval's ends.
	return 1e-4 + (1-2e-4)/(1+math.Exp(-z))
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

func meanOf(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// smoothCircular replaces each value by the mean of its 2w+1 circular
// neighbours.
func smoothCircular(s []float64, w int) {
	n := len(s)
	if n == 0 || 2*w+1 > n {
		return
	}
	src := append([]float64(nil), s...)
	var sum float64
	for d := -w; d <= w; d++ {
		sum += src[(d+n)%n]
	}
	for i := range s {
		s[i] = sum / float64(2*w+1)
		sum += src[(i+w+1)%n] - src[(i-w+n)%n]
	}
}

// fitLoss is the mean of n squared errors summing to sum, as a fit's
// optimiser minimises it: a parameter set that blows up (NaN or ±Inf) is
// the worst possible rather than a value the optimiser cannot compare.
func fitLoss(sum float64, n int) float64 {
	r := sum / float64(n)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return math.MaxFloat64
	}
	return r
}
