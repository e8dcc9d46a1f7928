package forecasting

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Model names accepted by [Options.Model] and [Backtest].
const (
	ModelNaive          = "naive"
	ModelSeasonalNaive  = "seasonal_naive"
	ModelSeasonalStep   = "seasonal_step"
	ModelDrift          = "drift"
	ModelMean           = "mean"
	ModelSES            = "ses"
	ModelHWAdditive     = "hw_additive"
	ModelHWAddDamped    = "hw_additive_damped"
	ModelHWMultiplic    = "hw_multiplicative"
	ModelHWMulDamped    = "hw_multiplicative_damped"
	ModelHWLog          = "hw_log"
	ModelHWWeekly       = "hw_weekly"
	ModelHWWeeklyLog    = "hw_weekly_log"
	ModelRobust         = "robust"
	ModelRevert         = "revert"
	ModelAuto           = "auto"
	defaultModel        = ModelAuto
	minValidationPoints = 30
	// fallbackLead is the shortest lead a fallback choice among the last
	// value, exponential smoothing and the mean is judged at (or the
	// horizon, when shorter): ten steps, the default horizon, scored on
	// at least as many origins.
	fallbackLead = 10
)

// Models lists the model names this package knows, in a stable order.
func Models() []string {
	return []string{ModelNaive, ModelSeasonalNaive, ModelSeasonalStep, ModelDrift, ModelMean, ModelSES,
		ModelHWAdditive, ModelHWAddDamped, ModelHWMultiplic, ModelHWMulDamped,
		ModelHWLog, ModelHWWeekly, ModelHWWeeklyLog, ModelRobust, ModelRevert, ModelAuto}
}

// model is one forecasting method with its streaming state. Values given to
// fit and update are finite; predict writes point forecasts for leads
// 1..len(out) on the data's own scale, not yet clipped at zero.
type model interface {
	name() string
	// need is the least number of points fit accepts.
	need() int
	fit(y []float64) error
	update(y float64)
	predict(out []float64)
}

// newModel builds the named model for a seasonal period (in steps) and a
// horizon (in steps). The horizon matters to the models that tune for it.
func newModel(name string, period, horizon int) (model, error) {
	switch name {
	case ModelNaive:
		return &naive{}, nil
	case ModelSeasonalNaive:
		return &seasonalNaive{p: period}, nil
	case ModelSeasonalStep:
		return &seasonalStep{p: period}, nil
	case ModelDrift:
		return &drift{}, nil
	case ModelMean:
		return &meanLast{p: period}, nil
	case ModelSES:
		return &holtWinters{kind: seasonNone}, nil
	case ModelHWAdditive:
		return &holtWinters{kind: seasonAdditive, p: period, trend: true}, nil
	case ModelHWAddDamped:
		return &holtWinters{kind: seasonAdditive, p: period, trend: true, damped: true}, nil
	case ModelHWMultiplic:
		return &holtWinters{kind: seasonMultiplicative, p: period, trend: true}, nil
	case ModelHWMulDamped:
		return &holtWinters{kind: seasonMultiplicative, p: period, trend: true, damped: true}, nil
	case ModelHWLog:
		return &holtWinters{kind: seasonAdditive, p: period, trend: true, damped: true, logScale: logScale{log: true}}, nil
	case ModelHWWeekly:
		return newWeekly(period, false), nil
	case ModelHWWeeklyLog:
		return newWeekly(period, true), nil
	case ModelRobust:
		return newRobust(period, horizon), nil
	case ModelRevert:
		return newRevert(period, horizon), nil
	}
	known := Models()
	sort.Strings(known)
	return nil, fmt.Errorf("unknown forecasting model %q: want one of %s", name, strings.Join(known, ", "))
}

// naive forecasts the last value at every lead.
type naive struct{ last float64 }

func (m *naive) name() string { return ModelNaive }
func (m *naive) need() int    { return 1 }
func (m *naive) fit(y []float64) error {
	if len(y) < 1 {
		return errNeed(ModelNaive, 1, len(y))
	}
	m.last = y[len(y)-1]
	return nil
}
func (m *naive) update(y float64) { m.last = y }
func (m *naive) predict(out []float64) {
	for i := range out {
		out[i] = m.last
	}
}

// seasonalNaive forecasts the value one period before the target.
type seasonalNaive struct {
	p    int
	ring []float64 // the last p values; ring[pos] is the oldest
	pos  int
}

func (m *seasonalNaive) name() string { return ModelSeasonalNaive }
func (m *seasonalNaive) need() int    { return m.p }
func (m *seasonalNaive) fit(y []float64) error {
	if m.p < 1 || len(y) < m.p {
		return errNeed(ModelSeasonalNaive, m.p, len(y))
	}
	m.ring = append(m.ring[:0], y[len(y)-m.p:]...)
	m.pos = 0
	return nil
}
func (m *seasonalNaive) update(y float64) {
	m.ring[m.pos] = y
	m.pos++
	if m.pos == m.p {
		m.pos = 0
	}
}
func (m *seasonalNaive) predict(out []float64) {
	for i := range out {
		// Lead h targets the value p steps before it, the oldest slot
		// being lead 1; leads beyond p wrap to whole periods back.
		out[i] = m.ring[(m.pos+i%m.p)%m.p]
	}
}

// seasonalStep forecasts the last value plus the change from the same
// time one period before to the target's time one period before:
// ŷ(t+h) = y(t) + y(t+h−p) − y(t−p), the forecast of a random walk whose
// steps repeat from one period to the next, ARIMA(0,1,0)(0,1,0)ₚ. It suits
// a series that jumps at the same times each day, such as one client's
// scheduled jobs.
type seasonalStep struct {
	p    int
	ring []float64 // the last p+1 values; ring[pos] is the oldest
	pos  int
}

func (m *seasonalStep) name() string { return ModelSeasonalStep }
func (m *seasonalStep) need() int    { return m.p + 1 }
func (m *seasonalStep) fit(y []float64) error {
	if m.p < 1 || len(y) < m.p+1 {
		return errNeed(ModelSeasonalStep, m.p+1, len(y))
	}
	m.ring = append(m.ring[:0], y[len(y)-m.p-1:]...)
	m.pos = 0
	return nil
}
func (m *seasonalStep) update(y float64) {
	m.ring[m.pos] = y
	if m.pos++; m.pos == len(m.ring) {
		m.pos = 0
	}
}
func (m *seasonalStep) predict(out []float64) {
	n := len(m.ring)
	at := func(k int) float64 { return m.ring[(m.pos+k)%n] } // k steps after y(t−p)
	last, base := at(n-1), at(0)
	for i := range out {
		// Lead h reads y(t+h−p), h steps after y(t−p); leads beyond p
		// add whole periods of the same steps.
		h := i + 1
		periods, r := h/m.p, h%m.p
		out[i] = last + float64(periods)*(last-base) + at(r) - base
	}
}

// drift extrapolates the line through the first and the last point.
type drift struct {
	first, last float64
	n           int
}

func (m *drift) name() string { return ModelDrift }
func (m *drift) need() int    { return 2 }
func (m *drift) fit(y []float64) error {
	if len(y) < 2 {
		return errNeed(ModelDrift, 2, len(y))
	}
	m.first, m.last, m.n = y[0], y[len(y)-1], len(y)
	return nil
}
func (m *drift) update(y float64) { m.last = y; m.n++ }
func (m *drift) predict(out []float64) {
	slope := (m.last - m.first) / float64(m.n-1)
	for i := range out {
		out[i] = m.last + float64(i+1)*slope
	}
}

// meanLast forecasts the mean of the last period (of all points while there
// is less than a period). Its ring grows as points come, up to a period.
type meanLast struct {
	p    int
	ring []float64
	pos  int
	sum  float64
	adds int // updates since the sum was recomputed
}

func (m *meanLast) name() string { return ModelMean }
func (m *meanLast) need() int    { return 1 }
func (m *meanLast) fit(y []float64) error {
	if len(y) < 1 {
		return errNeed(ModelMean, 1, len(y))
	}
	m.p = max(m.p, 1)
	if len(y) > m.p {
		y = y[len(y)-m.p:]
	}
	m.ring = append(m.ring[:0], y...)
	m.pos = len(m.ring) % m.p
	m.resum()
	return nil
}
func (m *meanLast) resum() {
	m.sum, m.adds = 0, 0
	for _, v := range m.ring {
		m.sum += v
	}
}
func (m *meanLast) update(y float64) {
	if len(m.ring) < m.p {
		m.ring = append(grown(m.ring, m.p), y)
		m.sum += y
	} else {
		m.sum += y - m.ring[m.pos]
		m.ring[m.pos] = y
	}
	m.pos++
	if m.pos == m.p {
		m.pos = 0
	}
	// A running sum drifts by rounding; recompute it once a period.
	if m.adds++; m.adds >= m.p {
		m.resum()
	}
}
func (m *meanLast) predict(out []float64) {
	v := m.sum / float64(len(m.ring))
	for i := range out {
		out[i] = v
	}
}

func errNeed(model string, need, have int) error {
	return fmt.Errorf("model %s needs at least %d points of history, have %d", model, need, have)
}

func clip0(v float64) float64 {
	if v < 0 || math.IsNaN(v) {
		return 0
	}
	return v
}
