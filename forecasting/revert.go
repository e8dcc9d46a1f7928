package forecasting

import (
	"github.com/inferwatch/inferwatch/internal/order"

	"math"
)

// revertWindows are the spans, in steps, of the recent means the revert
// model pulls the last value toward.
var revertWindows = [...]int{3, 6, 12}

const (
	revertK = len(revertWindows)
	// revertRidge shrinks the coefficients toward zero (the naive
	// forecast): the penalty is this share of the mean diagonal of the
	// normal equations.
	revertRidge = 0.3
	// revertHuber is the Huber tuning constant, in robust standard
	// deviations of the residuals (the textbook 95 %-efficiency value).
	revertHuber = 1.345
	// revertDays is the most past days averaged into the daily profile.
	revertDays = 7
)

// revert forecasts short-term mean reversion of the level: at lead h the
// last value y moved toward the means m_W of the last W points, plus a share
// of the daily profile's slope,
//
//	ŷ(h) = y + Σ_W c[h][W]·(m_W − y) + c[h][s]·(S(t+h) − S(t)),
//
// where S is the mean of past days at each phase, smoothed over ±p/48
// steps. The coefficients are fitted for each lead by least squares on the
// history (Huber-reweighted, so a level shift does not dominate them, and
// shrunk toward zero, the naive forecast). Traffic whose steps revert in
// part (negatively autocorrelated first differences) gains on the naive
// forecast; a random walk gets pulls near zero and stays naive.
type revert struct {
	p, h   int
	w      int       // phase smoothing half-width
	season bool      // whether the profile regressor is fitted
	coef   []float64 // h rows of revertK+1 coefficients
	ring   []float64 // the last wmax values; ring[pos] is the oldest
	pos    int
	prof   []float64 // the daily profile, one value per phase
	ph     int       // the index in prof of the last value's phase
}

func newRevert(period, horizon int) *revert {
	return &revert{p: period, h: max(horizon, 1), w: max(period/48, 1)}
}

func (m *revert) name() string { return ModelRevert }

// need: the longest window, the horizon and 20 pairs to fit on. The
// profile's slope joins the regressors from two periods of history on.
func (m *revert) need() int { return revertWindows[revertK-1] + m.h + 20 }

// revertX sets x to the regressors at origin t of y: m_W − y[t].
func revertX(x *[revertK + 1]float64, y []float64, t int) {
	var sum float64
	j := 0
	for w := 1; w <= revertWindows[revertK-1]; w++ {
		sum += y[t-w+1]
		if w == revertWindows[j] {
			x[j] = sum/float64(w) - y[t]
			j++
		}
	}
}

func (m *revert) fit(y []float64) error {
	n, wmax := len(y), revertWindows[revertK-1]
	if n < m.need() {
		return errNeed(ModelRevert, m.need(), n)
	}
	k := revertK
	first := wmax - 1
	// Prefix sums, for the means of y over ±w steps around a point.
	cs := make([]float64, n+1)
	for i, v := range y {
		cs[i+1] = cs[i] + v
	}
	win := func(c int) float64 { // mean of y[c-w..c+w]
		return (cs[c+m.w+1] - cs[c-m.w]) / float64(2*m.w+1)
	}
	// The profile's slope is a regressor once there are a day of
	// origins with a past day behind them; each origin sees only the
	// days before it.
	m.season = n >= 2*m.p+2*m.w+m.h+wmax+20
	if m.season {
		k++
		first = max(first, m.p+m.w)
	}
	m.coef = resize(m.coef, m.h*(revertK+1))
	clear(m.coef)
	cnt := n - 1 - first
	xs := make([][revertK + 1]float64, cnt)
	d := make([]float64, cnt)
	wt := make([]float64, cnt)
	for h := 1; h <= m.h; h++ {
		c := 0
		for t := first; t+h < n; t++ {
			x := &xs[c]
			revertX(x, y, t)
			if m.season {
				var s float64
				var kd int
				for b := t - m.p; b-m.w >= 0 && kd < revertDays; b -= m.p {
					if b+h+m.w >= n {
						continue
					}
					s += win(b+h) - win(b)
					kd++
				}
				if kd > 0 {
					s /= float64(kd)
				}
				x[revertK] = s
			}
			d[c] = y[t+h] - y[t]
			c++
		}
		fitRevert(m.coef[(h-1)*(revertK+1):(h-1)*(revertK+1)+k], xs[:c], d[:c], wt[:c], k)
	}
	m.ring = append(m.ring[:0], y[n-wmax:]...)
	m.pos = 0
	if m.season {
		// prof[j] is at the phase of y[n−p+j]: the mean over the last
		// days of the smoothed values at that phase.
		m.prof = resize(m.prof, m.p)
		for j := range m.p {
			var s float64
			var kd int
			for c := n - m.p + j; c-m.w >= 0 && kd < revertDays; c -= m.p {
				if c+m.w >= n {
					continue
				}
				s += win(c)
				kd++
			}
			if kd > 0 {
				s /= float64(kd)
			}
			m.prof[j] = s
		}
		m.ph = m.p - 1
	}
	return nil
}

// fitRevert sets c to the Huber-reweighted ridge regression of d on xs
// (no intercept), using w as scratch for the weights.
func fitRevert(c []float64, xs [][revertK + 1]float64, d, w []float64, k int) {
	clear(c)
	if len(d) < 2*k {
		return
	}
	for i := range w {
		w[i] = 1
	}
	res := make([]float64, len(d))
	for iter := 0; iter < 4; iter++ {
		var a [revertK + 1][revertK + 1]float64
		var b [revertK + 1]float64
		for i, x := range xs {
			wi := w[i]
			for j := range k {
				b[j] += wi * x[j] * d[i]
				for l := range k {
					a[j][l] += wi * x[j] * x[l]
				}
			}
		}
		// Ridge toward zero pulls (the naive forecast), scaled to the data.
		var tr float64
		for j := range k {
			tr += a[j][j]
		}
		lam := revertRidge * tr / float64(k)
		for j := range k {
			a[j][j] += lam + 1e-12
		}
		if !solveSPD(&a, &b, k) {
			clear(c)
			return
		}
		copy(c, b[:k])
		// Huber weights at revertHuber robust standard deviations of the
		// residuals.
		for i, x := range xs {
			r := d[i]
			for j := range k {
				r -= c[j] * x[j]
			}
			res[i] = math.Abs(r)
		}
		s := 1.4826 * order.Median(append([]float64(nil), res...))
		if !(s > 0) {
			return
		}
		kk := revertHuber * s
		for i, r := range res {
			w[i] = 1
			if r > kk {
				w[i] = kk / r
			}
		}
	}
}

// solveSPD solves a·x = b in place (x in b) by Cholesky; false when a is
// not positive definite.
func solveSPD(a *[revertK + 1][revertK + 1]float64, b *[revertK + 1]float64, n int) bool {
	var l [revertK + 1][revertK + 1]float64
	for i := range n {
		for j := 0; j <= i; j++ {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	for i := range n {
		s := b[i]
		for k := range i {
			s -= l[i][k] * b[k]
		}
		b[i] = s / l[i][i]
	}
	for i := n - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < n; k++ {
			s -= l[k][i] * b[k]
		}
		b[i] = s / l[i][i]
	}
	return true
}

func (m *revert) update(y float64) {
	m.ring[m.pos] = y
	if m.pos++; m.pos == len(m.ring) {
		m.pos = 0
	}
	if m.season {
		if m.ph++; m.ph == m.p {
			m.ph = 0
		}
	}
}

func (m *revert) predict(out []float64) {
	n := len(m.ring)
	last := m.ring[(m.pos+n-1)%n]
	var x [revertK + 1]float64
	var sum float64
	j := 0
	for w := 1; w <= n; w++ {
		sum += m.ring[(m.pos+n-w)%n]
		if w == revertWindows[j] {
			x[j] = sum/float64(w) - last
			j++
		}
	}
	for i := range out {
		v := last
		r := min(i, m.h-1)
		c := m.coef[r*(revertK+1) : (r+1)*(revertK+1)]
		for k := range revertK {
			v += c[k] * x[k]
		}
		if m.season {
			v += c[revertK] * (m.prof[(m.ph+i+1)%m.p] - m.prof[m.ph])
		}
		out[i] = v
	}
}
