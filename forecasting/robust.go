package forecasting

import (
	"github.com/inferwatch/inferwatch/internal/order"

	"math"

	"gonum.org/v1/gonum/optimize"
)

// robust forecasts a seasonal profile of medians plus a level correction:
// profile[φ] is the median of the values at phase φ (and its w neighbours on
// each side) over the last few periods, and the correction is an
// exponentially weighted mean of the recent residuals, each step's
// innovation clipped at three robust standard deviations so one spike does
// not move it far. It suits spiky
// or low-count traffic (requests per minute that can be small or zero),
// where medians are steadier than means and a log of zero does not exist.
type robust struct {
	p, h    int
	w       int       // neighbours on each side pooled into a phase
	periods int       // periods pooled into the profile
	profile []float64 // profile[pos] is the phase of the next step
	pos     int
	corr    float64   // level correction added to the profile
	alpha   float64   // smoothing of the correction
	clip    float64   // residuals are clipped to ±clip
	scratch []float64 // for the medians of a fit, released after it
}

func newRobust(period, horizon int) *robust {
	return &robust{p: period, h: max(horizon, 1), w: period / 96, periods: 7, alpha: 0.2}
}

func (m *robust) name() string { return ModelRobust }
func (m *robust) need() int    { return m.p }

// buildProfile sets dst[j] to the median at the phase of y[len(y)-p+j].
func (m *robust) buildProfile(dst, y []float64) {
	n, p := len(y), m.p
	k := min(n/p, m.periods)
	for j := range p {
		buf := m.scratch[:0]
		for r := range k {
			c := n - p + j - r*p
			for d := -m.w; d <= m.w; d++ {
				if i := c + d; i >= 0 && i < n {
					buf = append(buf, y[i])
				}
			}
		}
		dst[j] = order.Median(buf)
		m.scratch = buf
	}
}

// run replays y against a fixed profile (aligned so that y[0] has phase
// start) with smoothing a, returning the mean absolute error at lead h and
// leaving the correction in m.corr.
func (m *robust) run(prof, y []float64, start int, a float64) float64 {
	var sum float64
	var cnt int
	corr := 0.0
	p := m.p
	for i, v := range y {
		// The forecast made at origin i for lead h is scored against y[i+h].
		r := v - prof[(start+i)%p]
		corr += a * math.Max(-m.clip, math.Min(m.clip, r-corr))
		if t := i + m.h; t < len(y) {
			sum += math.Abs(y[t] - (prof[(start+t)%p] + corr))
			cnt++
		}
	}
	m.corr = corr
	if cnt == 0 {
		return 0
	}
	return sum / float64(cnt)
}

func (m *robust) fit(y []float64) error {
	n, p := len(y), m.p
	if p < 1 || n < p {
		return errNeed(ModelRobust, p, n)
	}
	if cap(m.profile) < p {
		m.profile = make([]float64, p)
	}
	m.profile = m.profile[:p]
	// With two periods or more, tune the correction out of sample: a
	// profile from all but the last period, scored on the last period.
	if n >= 2*p {
		head, tail := y[:n-p], y[n-p:]
		m.buildProfile(m.profile, head)
		m.setClip(m.profile, tail)
		obj := func(z []float64) float64 { return m.run(m.profile, tail, 0, logistic(z[0])) }
		z0 := []float64{logit(0.2)}
		res, err := optimize.Minimize(optimize.Problem{Func: obj}, z0, &optimize.Settings{
			FuncEvaluations: 60,
			Converger:       &optimize.FunctionConverge{Relative: 1e-4, Iterations: 10},
		}, &optimize.NelderMead{})
		if err == nil && res != nil && res.F <= obj(z0) {
			m.alpha = logistic(res.X[0])
		}
	}
	m.buildProfile(m.profile, y)
	tail := y[n-p:]
	if n < 2*p {
		m.setClip(m.profile, tail)
	}
	m.run(m.profile, tail, 0, m.alpha)
	m.pos = 0
	m.scratch = nil // up to a period of values no update needs
	return nil
}

// setClip sets the clipping bound from the residuals of y (phase 0 first)
// against prof: three times the scaled median absolute deviation of their
// steps, the size of an ordinary innovation.
func (m *robust) setClip(prof, y []float64) {
	buf := m.scratch[:0]
	for i := 1; i < len(y); i++ {
		buf = append(buf, (y[i]-prof[i%m.p])-(y[i-1]-prof[(i-1)%m.p]))
	}
	med := order.Median(buf)
	for i := range buf {
		buf[i] = math.Abs(buf[i] - med)
	}
	mad := order.Median(buf)
	m.scratch = buf
	m.clip = 3 * 1.4826 * mad
	if m.clip == 0 {
		m.clip = math.Inf(1)
	}
}

func (m *robust) update(y float64) {
	r := y - m.profile[m.pos] - m.corr
	m.corr += m.alpha * math.Max(-m.clip, math.Min(m.clip, r))
	if m.pos++; m.pos == m.p {
		m.pos = 0
	}
}

func (m *robust) predict(out []float64) {
	for i := range out {
		out[i] = m.profile[(m.pos+i)%m.p] + m.corr
	}
}
