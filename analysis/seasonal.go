package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Defaults of SeasonalConfig.
const (
	DefaultSeasonalPeriod     = int64(86_400_000) // one day, in ms
	DefaultSeasonalPeriods    = 7
	DefaultSeasonalK          = 3.0
	DefaultSeasonalMinPeriods = 2
)

// SeasonalConfig configures a Seasonal detector. Zero fields take their
// defaults.
type SeasonalConfig struct {
	// Period is the season in milliseconds (default one day). The period is
	// taken from here, not detected.
	Period int64
	// Window is the history kept, in milliseconds: Window/Period past
	// periods are compared (default 7 periods). It must cover at least
	// MinPeriods periods.
	Window int64
	// K is the width of the band in robust standard deviations (default 3).
	K float64
	// MinPeriods is how many past periods must have a sample at the same
	// phase before the detector judges (default 2, at least 1).
	MinPeriods int
	// Floor is the smallest spread relative to the expected value's
	// magnitude (default 0.001), as in RobustConfig.
	Floor float64
	// Quiet is how many samples in a row must score below 1 after an
	// alarm before the next alarm (default DefaultQuiet; negative: none).
	Quiet int
}

// Seasonal is the streaming detector of a series with a daily or weekly
// shape: it expects each sample to look like the samples at the same time
// of the previous periods, and scores the residual.
//
// For a sample x at t, let y₁…y_J be the samples nearest to t − j·Period
// (j = 1…J, J = Window/Period), each within half the series' smallest step
// of it; periods without one are skipped. With e the median of the y's,
// and rᵢ = xᵢ − eᵢ the residuals of the earlier samples of the window:
//
//	s_phase = 1.4826·median|yⱼ − e|        (spread at this phase)
//	s_resid = max(1.4826·median|rᵢ|, Q₀.₉|rᵢ|/1.6449)
//	                                       (spread of the residuals)
//	s_eff   = max(s_phase, s_resid, δ, Floor·|e|, 1e-9·max(1, |e|))
//	Score   = |x − e| / (K·s_eff)
//	Expected = e, Lower = e − K·s_eff, Upper = e + K·s_eff
//
// with Q₀.₉|rᵢ| the 0.9-quantile of the absolute residuals (the central
// 90%, read as a normal σ: a floor for when most residuals are 0, as on
// an idle series that repeats exactly) and δ the series' resolution, as
// in Robust. As in Robust, after an alarm the scores are capped at 0.99
// until Quiet samples in a row have scored below 1.
//
// The result is Ready once at least MinPeriods of the y's exist and the
// residual window holds 10 samples. The stream rules of Sigma apply.
//
// A Seasonal holds Window of samples (16 bytes each) plus the window's
// residuals; it is not safe for concurrent use.
type Seasonal struct {
	period     int64
	periods    int
	k, floor   float64
	minPeriods int

	ts   []int64 // ring of the history's timestamps, oldest at head
	vs   []float64
	head int
	n    int

	resid   sortedWindow // |residuals| over the window
	res     resolution
	gate    rearm
	minStep int64
	ys      []float64 // scratch
	last    int64
	hasLast bool
}

var _ Detector = (*Seasonal)(nil)

// NewSeasonal returns a detector with c's zero fields set to their
// defaults. It panics when c is invalid; Build returns errors instead.
func NewSeasonal(c SeasonalConfig) *Seasonal {
	c.Period = cmp.Or(c.Period, DefaultSeasonalPeriod)
	if c.Window == 0 && c.Period > 0 {
		c.Window = c.Period * DefaultSeasonalPeriods
	}
	c.K = cmp.Or(c.K, DefaultSeasonalK)
	c.MinPeriods = cmp.Or(c.MinPeriods, DefaultSeasonalMinPeriods)
	c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	switch {
	case c.Period <= 0:
		panic(fmt.Sprintf("analysis.NewSeasonal: Period must be > 0 ms, got %d", c.Period))
	case c.MinPeriods < 1:
		panic(fmt.Sprintf("analysis.NewSeasonal: MinPeriods must be ≥ 1, got %d", c.MinPeriods))
	case c.Window/c.Period < int64(c.MinPeriods):
		panic(fmt.Sprintf("analysis.NewSeasonal: Window %dms must cover MinPeriods=%d periods of %dms", c.Window, c.MinPeriods, c.Period))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewSeasonal: K must be a finite number > 0, got %v", c.K))
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		panic(fmt.Sprintf("analysis.NewSeasonal: Floor must be a finite number ≥ 0, got %v", c.Floor))
	}
	return &Seasonal{
		period: c.Period, periods: int(min(c.Window/c.Period, 1<<16)), k: c.K, floor: c.Floor,
		minPeriods: c.MinPeriods, resid: sortedWindow{window: c.Window}, minStep: math.MaxInt64, gate: newRearm(c.Quiet),
	}
}

// Observe scores (t, v) against the previous periods and then adds it.
func (s *Seasonal) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (s.hasLast && t <= s.last) {
		return notReady()
	}
	if s.hasLast {
		s.minStep = min(s.minStep, int64(uint64(t)-uint64(s.last)))
	}
	s.last, s.hasLast = t, true
	s.evict(t)
	s.resid.evictBefore(t)

	res := notReady()
	s.ys = s.ys[:0]
	tol := s.minStep / 2
	for j := 1; j <= s.periods; j++ {
		at := t - int64(j)*s.period
		if at > t { // wrapped around int64
			break
		}
		if y, ok := s.nearest(at, tol); ok {
			s.ys = append(s.ys, y)
		}
	}
	if len(s.ys) >= s.minPeriods {
		slices.Sort(s.ys) // at most Window/Period values
		e := sortedMedian(s.ys)
		for i, y := range s.ys {
			s.ys[i] = math.Abs(y - e)
		}
		slices.Sort(s.ys)
		sp := madScale * sortedMedian(s.ys)
		r := math.Abs(v - e)
		if s.resid.len() >= 10 {
			sr := max(madScale*s.resid.median(), s.resid.quantile(1-2*tailP)/(tailSigmas/2))
			res = bandScore(v, e, s.k, robustSpread(max(sp, sr, s.res.step()), e, s.floor))
			res.Score = s.gate.pass(res.Score)
		}
		if !math.IsInf(r, 0) {
			s.resid.push(t, r)
		}
	}
	s.res.add(v)
	s.add(t, v)
	return res
}

// sortedMedian returns the median of sorted, non-empty xs.
func sortedMedian(xs []float64) float64 {
	n := len(xs)
	if n&1 == 1 {
		return xs[n/2]
	}
	return xs[n/2-1]/2 + xs[n/2]/2
}

// evict drops the history older than the periods compared, with a margin
// of one step for the nearest-sample search.
func (s *Seasonal) evict(t int64) {
	span := uint64(s.periods)*uint64(s.period) + uint64(max(s.minStep, 0))
	if s.minStep == math.MaxInt64 {
		span = math.MaxUint64
	}
	for s.n > 0 && uint64(t)-uint64(s.ts[s.head]) > span {
		s.head++
		if s.head == len(s.ts) {
			s.head = 0
		}
		s.n--
	}
}

// add appends (t, v) to the history ring, doubling it when full.
func (s *Seasonal) add(t int64, v float64) {
	if s.n == len(s.ts) {
		c := max(16, 2*len(s.ts))
		nt, nv := make([]int64, c), make([]float64, c)
		k := copy(nt, s.ts[s.head:])
		copy(nt[k:], s.ts[:s.head])
		copy(nv, s.vs[s.head:])
		copy(nv[k:], s.vs[:s.head])
		s.ts, s.vs, s.head = nt, nv, 0
	}
	i := s.head + s.n
	if i >= len(s.ts) {
		i -= len(s.ts)
	}
	s.ts[i], s.vs[i] = t, v
	s.n++
}

// nearest returns the value of the held sample nearest to at, if one lies
// within tol of it.
func (s *Seasonal) nearest(at, tol int64) (float64, bool) {
	get := func(i int) int {
		i += s.head
		if i >= len(s.ts) {
			i -= len(s.ts)
		}
		return i
	}
	lo, hi := 0, s.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.ts[get(m)] < at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	best, bestD := -1, uint64(tol)
	for _, i := range []int{lo - 1, lo} {
		if i < 0 || i >= s.n {
			continue
		}
		ts := s.ts[get(i)]
		d := uint64(ts) - uint64(at)
		if ts < at {
			d = uint64(at) - uint64(ts)
		}
		if d <= bestD {
			best, bestD = get(i), d
		}
	}
	if best < 0 {
		return 0, false
	}
	return s.vs[best], true
}
