package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Defaults of AutoConfig, chosen on the shared NAB subset (see Auto).
const (
	DefaultAutoK          = 3.0
	DefaultAutoP          = 0.003
	DefaultAutoRefractory = 30
	DefaultAutoMinPoints  = 10
	// DefaultAutoTolerance sets Tolerance to Period/12 (two hours of a
	// day) when it is not given.
	DefaultAutoTolerance = 12
	// DefaultAutoPoints is the window, in samples, when a rule gives none.
	DefaultAutoPoints = 2000
)

// AutoConfig configures an Auto detector. Zero fields take their defaults.
type AutoConfig struct {
	// Window is the span of history, in milliseconds, of the baseline. It
	// must be > 0.
	Window int64
	// K is the width of the band in tail standard deviations (default 3).
	K float64
	// P is the tail probability whose quantiles measure the spread of each
	// side of the median (default 0.003).
	P float64
	// Refractory is how many samples after an alarm are held below the
	// threshold (default 30; a negative value means none).
	Refractory int
	// MinPoints is how many samples the baseline must hold before the
	// detector judges (default 10, at least 2).
	MinPoints int
	// Floor is the smallest spread relative to the median's magnitude
	// (default 0.001), as in RobustConfig.
	Floor float64
	// Period is the season, in milliseconds, of the seen-before test
	// (default one day; negative: no such test).
	Period int64
	// Tolerance is how far from the same phase of a past period a sample
	// may lie and still count as seen before, in milliseconds.
	Tolerance int64
}

// Auto is the default detector of a new rule: a robust, two-sided tail test
// with an alarm refractory period.
//
// A sample x at t is judged against the samples of [t−Window, t): m their
// median, s_eff the spread of Robust (1.4826·MAD, floored), and Q(q) their
// q-quantiles. Each side of the median gets its own spread, read from how
// far its tail reaches, as a normal standard deviation:
//
//	s_hi = max(s_eff, (Q(1−P) − m)/Φ⁻¹(1−P))      used when x ≥ m
//	s_lo = max(s_eff, (m − Q(P))/Φ⁻¹(1−P))        used when x < m
//	Score = |x − m| / (K·s_side)
//	Expected = m, Lower = m − K·s_lo, Upper = m + K·s_hi
//
// For normal data both spreads are σ and this is a K-sigma test; for a
// skewed or bimodal series (a daily on/off load, a latency with a long
// tail) the band follows the side the series really reaches, so the
// ordinary half of the day does not alarm, and a spike beyond anything the
// window has seen does.
//
// s_eff is also floored by the series' resolution δ, as in Robust.
//
// A value the series has already reached at this time of a past period is
// not news: an alarm is dropped (the score capped at 0.99) when, on one of
// the past periods the window holds, a sample within Tolerance of the same
// phase (t − j·Period ± Tolerance) was as far out on the same side (≥ x
// for x ≥ m, ≤ x below). This keeps a daily backup's CPU spike or a
// nightly batch from alarming every day while a first-time spike still
// alarms.
//
// After a score ≥ 1, the next Refractory samples have their score capped at
// 0.99 (Lower and Upper NaN) so one incident raises one alarm, early; they
// still enter the window.
//
// The defaults were chosen on the shared NAB subset at the fixed threshold
// 1 with no per-file settings, and checked by leaving each category out of
// the choice in turn (each of the three choices made without a category
// picked K 3, P 0.003 and a two-hour tolerance; only the window length
// varied). A CUSUM level-shift term (LevelShift's) was tried in the
// combination: on NAB's real series it added far more false alarms than
// detections, so it is a detector of its own and not part of Auto.
//
// Auto holds its window twice: sorted (about 11 bytes a sample) and in
// arrival order with timestamps (16 bytes a sample) for the phase test.
// The stream rules of Sigma apply. An Auto is not safe for concurrent use.
type Auto struct {
	k, p, zp, floor       float64
	refractory, minPoints int

	w           sortedWindow
	res         resolution
	hist        []point // the window's samples, oldest first, for the seen-before test
	period, tol int64
	hold        int // samples left in the refractory period
	last        int64
	hasLast     bool
}

var _ Detector = (*Auto)(nil)

// refractoryCap is the highest score reported during the refractory period.
const refractoryCap = 0.99

// NewAuto returns a detector with c's zero fields set to their defaults. It
// panics when c is invalid; Build returns errors instead.
func NewAuto(c AutoConfig) *Auto {
	if c.K == 0 {
		c.K = DefaultAutoK
	}
	if c.P == 0 {
		c.P = DefaultAutoP
	}
	if c.Refractory == 0 {
		c.Refractory = DefaultAutoRefractory
	}
	if c.MinPoints == 0 {
		c.MinPoints = DefaultAutoMinPoints
	}
	if c.Floor == 0 {
		c.Floor = DefaultRobustFloor
	}
	if c.Period == 0 {
		c.Period = DefaultSeasonalPeriod
	}
	if c.Tolerance == 0 {
		c.Tolerance = c.Period / DefaultAutoTolerance
	}
	switch {
	case c.Window <= 0:
		panic(fmt.Sprintf("analysis.NewAuto: Window must be > 0 ms, got %d", c.Window))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewAuto: K must be a finite number > 0, got %v", c.K))
	case !(c.P > 0 && c.P < 0.5):
		panic(fmt.Sprintf("analysis.NewAuto: P must be in (0, 0.5), got %v", c.P))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewAuto: MinPoints must be ≥ 2, got %d", c.MinPoints))
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		panic(fmt.Sprintf("analysis.NewAuto: Floor must be a finite number ≥ 0, got %v", c.Floor))
	}
	return &Auto{
		k: c.K, p: c.P, zp: -normQuantile(c.P), floor: c.Floor,
		refractory: max(0, c.Refractory), minPoints: c.MinPoints,
		w: sortedWindow{window: c.Window}, period: c.Period, tol: c.Tolerance,
	}
}

// Len returns the number of samples held.
func (a *Auto) Len() int { return a.w.len() }

// Observe scores (t, v) and then adds it to the baseline.
func (a *Auto) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (a.hasLast && t <= a.last) {
		return notReady()
	}
	a.last, a.hasLast = t, true
	a.w.evictBefore(t)
	if a.w.len() < a.minPoints {
		a.res.add(v)
		a.w.push(t, v)
		a.hold = max(0, a.hold-1)
		return notReady()
	}
	m := a.w.median()
	s := robustSpread(max(madScale*a.w.mad(m), a.res.step()), m, a.floor)
	sLo := max(s, (m-a.w.quantile(a.p))/a.zp)
	sHi := max(s, (a.w.quantile(1-a.p)-m)/a.zp)
	var res Result
	if v >= m {
		res = bandScore(v, m, a.k, sHi)
	} else {
		res = bandScore(v, m, a.k, sLo)
	}
	res.Lower, res.Upper = clampInf(m-a.k*sLo), clampInf(m+a.k*sHi)
	if a.hold > 0 {
		a.hold--
		res.Score = min(res.Score, refractoryCap)
		res.Lower, res.Upper = math.NaN(), math.NaN()
	} else if res.Score >= 1 && a.seenBefore(t, v, v >= m) {
		res.Score = refractoryCap
	} else if res.Score >= 1 {
		a.hold = a.refractory
	}
	a.res.add(v)
	a.w.push(t, v)
	if a.period > 0 {
		a.remember(t, v)
	}
	return res
}

// remember adds (t, v) to the history of the seen-before test, dropping
// what lies beyond the window.
func (a *Auto) remember(t int64, v float64) {
	i := 0
	for i < len(a.hist) && uint64(t)-uint64(a.hist[i].t) > uint64(a.w.window)+uint64(a.tol) {
		i++
	}
	if i > 0 && 2*i >= len(a.hist) {
		a.hist = append(a.hist[:0], a.hist[i:]...)
	} else if i > 0 {
		a.hist = a.hist[i:]
	}
	a.hist = append(a.hist, point{t, v})
}

// seenBefore reports whether a past period reached v or beyond (above
// when up) within the tolerance of t's phase.
func (a *Auto) seenBefore(t int64, v float64, up bool) bool {
	if a.period <= 0 {
		return false
	}
	for j := int64(1); ; j++ {
		at := t - j*a.period
		if at > t || len(a.hist) == 0 || at+a.tol < a.hist[0].t {
			return false
		}
		lo, _ := slices.BinarySearchFunc(a.hist, at-a.tol, func(p point, x int64) int { return cmp.Compare(p.t, x) })
		for k := lo; k < len(a.hist) && a.hist[k].t <= at+a.tol; k++ {
			if up && a.hist[k].v >= v || !up && a.hist[k].v <= v {
				return true
			}
		}
	}
}

// normQuantile returns Φ⁻¹(p), the p-quantile of the standard normal.
func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
