package forecasting

import (
	"math"

	"github.com/inferwatch/inferwatch/internal/num"
)

// bounded keeps a model's forecasts within twice the range of the values
// it has seen (fitted on and updated with) beyond them: with lo and hi the
// lowest and highest of them, within [lo − 2(hi − lo), hi + 2(hi − lo)].
// A smoothing model's trend can run away where a series jumps by orders
// of magnitude (a disk or a client going from idle to bursts), most of all
// on the log scale, where a jump from 0 to 10⁸ is a slope of a few units a
// step that expm1 turns into forecasts of 10¹⁰ an hour ahead. Such a
// forecast is no forecast: it would ask an autoscaler for every replica
// and widen the interval of every later one through its error. A
// forecast inside the bound passes unchanged: a straight line through the
// whole window reaches it only at a lead twice the window's length.
type bounded struct {
	model
	lo, hi float64
}

func (m *bounded) fit(y []float64) error {
	m.lo, m.hi = math.Inf(1), math.Inf(-1)
	for _, v := range y {
		m.see(v)
	}
	return m.model.fit(y)
}

func (m *bounded) update(y float64) {
	m.see(y)
	m.model.update(y)
}

// see widens the range to v. A value that is not finite is no value seen
// (and would make min and max NaN, dropping the bound for good).
func (m *bounded) see(v float64) {
	if num.Finite(v) {
		m.lo, m.hi = min(m.lo, v), max(m.hi, v)
	}
}

func (m *bounded) predict(out []float64) {
	m.model.predict(out)
	if m.lo > m.hi {
		return // nothing seen
	}
	reach := 2 * (m.hi - m.lo)
	lo, hi := m.lo-reach, m.hi+reach
	for i, v := range out {
		// NaN passes: the tracker's divergence rule takes it.
		if v > hi {
			out[i] = hi
		} else if v < lo {
			out[i] = lo
		}
	}
}
