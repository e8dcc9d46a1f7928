package analysis

import (
	"cmp"
	"fmt"
	"math"
)

// Defaults of RobustConfig.
const (
	DefaultRobustK         = 3.0
	DefaultRobustMinPoints = 10
	DefaultRobustFloor     = 0.001
	// DefaultQuiet is how many samples in a row must score below 1 before
	// robust, seasonal, levelshift and ewma alarm again after an alarm.
	DefaultQuiet = 30
)

// tailP is the tail probability of the central spread: the central 90% of
// a window, read as a normal standard deviation, is a floor under
// 1.4826·MAD (see Robust).
const tailP = 0.05

// tailSigmas is the width of the central 1−2·tailP of a standard normal in
// standard deviations (2·1.645), computed once rather than per sample.
var tailSigmas = -2 * normQuantile(tailP)

// madScale turns a median absolute deviation into a standard deviation for
// normally distributed data: 1/Φ⁻¹(3/4).
const madScale = 1.482602218505602

// RobustConfig configures a Robust detector. Zero fields take their
// defaults.
type RobustConfig struct {
	// Window is the span of history, in milliseconds, that a sample is
	// scored against. It must be > 0.
	Window int64
	// K is the width of the band in robust standard deviations (default 3).
	K float64
	// MinPoints is how many samples the window must hold before the
	// detector judges (default 10, at least 2).
	MinPoints int
	// Floor is the smallest spread, relative to the median's magnitude,
	// that a sample is scored against (default 0.001): a series that
	// barely moves does not alarm on its last digit.
	Floor float64
	// Quiet is how many samples in a row must score below 1 after an
	// alarm before the next alarm (default DefaultQuiet; negative: none).
	Quiet int
}

// Robust is the streaming median/MAD detector of one series.
//
// A sample (t, x) is scored against the samples with timestamps in
// [t−Window, t). With m their median, MAD the median of |xᵢ − m|, Q(q)
// their q-quantiles and δ the series' resolution (the smallest non-zero
// change between consecutive samples seen so far):
//
//	s        = 1.4826·MAD                        (σ for normal data)
//	s₉₀      = (Q(0.95) − Q(0.05))/(2·1.6449)    (σ for normal data too)
//	s_eff    = max(s, s₉₀, δ, Floor·|m|, 1e-9·max(1, |m|))
//	Score    = |x − m| / (K·s_eff)
//	Expected = m,  Lower = m − K·s_eff,  Upper = m + K·s_eff
//
// Unlike the mean and σ, the median and MAD ignore up to half the window
// being spikes, so a burst does not widen the band that judges it. The
// floors keep a near-constant series from alarming on noise: when more
// than half of the window sits on one level (an idle CPU, a daily on/off
// load) the MAD collapses to 0 while the series still moves, and s₉₀ — as
// robust, to 5% of spikes — measures that movement; δ keeps a quantised
// series (integers, a metric rounded to 0.002) from alarming on one step.
//
// One incident raises one alarm: after a score ≥ 1 the scores are capped
// at 0.99 until Quiet samples in a row have scored below 1 (the band is
// still reported).
//
// The same stream rules as Sigma apply: not Ready below MinPoints samples,
// non-finite and out-of-order samples neither scored nor added, scores
// saturate at math.MaxFloat64. A window holds at most 65,536 samples (the
// newest).
//
// The window is kept sorted (a search, then a move of 2-byte slot
// numbers), so each Observe costs O(log n) comparisons plus an O(n) memmove
// of 2n bytes; a regular series costs about 11 bytes per sample held.
//
// A Robust is not safe for concurrent use.
type Robust struct {
	k, floor  float64
	minPoints int
	w         sortedWindow
	res       resolution
	gate      rearm
	last      int64
	hasLast   bool
}

var _ BatchDetector = (*Robust)(nil)

// NewRobust returns a detector with c's zero fields set to their defaults.
// It panics when c is invalid; Build returns errors instead.
func NewRobust(c RobustConfig) *Robust {
	c.K = cmp.Or(c.K, DefaultRobustK)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultRobustMinPoints)
	c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	switch {
	case c.Window <= 0:
		panic(fmt.Sprintf("analysis.NewRobust: Window must be > 0 ms, got %d", c.Window))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewRobust: K must be a finite number > 0, got %v", c.K))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewRobust: MinPoints must be ≥ 2, got %d", c.MinPoints))
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		panic(fmt.Sprintf("analysis.NewRobust: Floor must be a finite number ≥ 0, got %v", c.Floor))
	}
	return &Robust{k: c.K, floor: c.Floor, minPoints: c.MinPoints, w: sortedWindow{window: c.Window}, gate: newRearm(c.Quiet)}
}

// Len returns the number of samples held.
func (r *Robust) Len() int { return r.w.len() }

// Observe scores (t, v) against the preceding window and then adds it.
func (r *Robust) Observe(t int64, v float64) Result {
	var res Result
	r.observe(t, v, &res, false)
	return res
}

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector), writing each result in
// place.
func (r *Robust) ObserveBatch(t []int64, v []float64, out []Result) {
	v, out = v[:len(t)], out[:len(t)]
	for i := range t {
		// The first sample finds the window cold in cache, the others hot.
		r.observe(t[i], v[i], &out[i], i > 0)
	}
}

// observe is Observe writing its result to res field by field: a
// composite literal would be built on the stack and copied, which stalls
// store forwarding. hot tells that the window is in cache (see evictFor).
func (r *Robust) observe(t int64, v float64, res *Result, hot bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || (r.hasLast && t <= r.last) {
		*res = notReady()
		return
	}
	at := r.w.evictFor(t, v, hot)
	if r.w.len() >= r.minPoints {
		m := r.w.median()
		s := max(windowSpread(&r.w, m), r.res.step())
		bandScoreTo(res, v, m, r.k, robustSpread(s, m, r.floor))
		res.Score = r.gate.pass(res.Score)
	} else {
		*res = notReady()
	}
	r.res.add(v)
	r.w.pushAt(t, v, at)
	r.last, r.hasLast = t, true
}

// windowSpread returns the larger of two normal-consistent spreads of the
// window w with median m: 1.4826·MAD and that of its central 90%.
func windowSpread(w *sortedWindow, m float64) float64 {
	s := madScale * w.mad(m)
	if w.len() >= 2 {
		s = max(s, (w.quantile(1-tailP)-w.quantile(tailP))/tailSigmas)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) { // opposite extremes
		s = math.MaxFloat64
	}
	return s
}

// resolution tracks δ, the smallest non-zero change between consecutive
// samples seen so far: the step of a quantised series.
type resolution struct {
	prev, min float64
	has       bool
}

// add notes the finite sample v.
func (r *resolution) add(v float64) {
	if r.has {
		if d := math.Abs(v - r.prev); d > 0 && !math.IsInf(d, 0) && (r.min == 0 || d < r.min) {
			r.min = d
		}
	}
	r.prev, r.has = v, true
}

// step returns δ, or 0 before two different samples.
func (r *resolution) step() float64 { return r.min }

// rearm is the alarm debounce of the detectors: after a score ≥ 1, scores
// are capped at refractoryCap until quiet samples in a row have scored
// below 1. A quiet of 0 lets every score through.
type rearm struct {
	quiet, below int
}

func newRearm(quiet int) rearm { return rearm{quiet: max(0, quiet), below: max(0, quiet)} }

// pass returns the score to report for a raw score.
func (g *rearm) pass(score float64) float64 {
	if score < 1 {
		g.below = min(g.below+1, g.quiet)
		return score
	}
	armed := g.below >= g.quiet
	g.below = 0
	if !armed {
		return min(score, refractoryCap)
	}
	return score
}

// robustSpread applies the relative floor and the absolute one that keeps a
// flat window from dividing by zero.
func robustSpread(s, m, floor float64) float64 {
	a := math.Abs(m)
	return max(s, floor*a, sigmaFloor*max(1, a))
}

// bandScore scores v against expected m and spread s with a band of k·s.
// Everything it is given is finite; the results saturate rather than
// overflow.
func bandScore(v, m, k, s float64) Result {
	var r Result
	bandScoreTo(&r, v, m, k, s)
	return r
}

// bandScoreTo is bandScore writing to r.
func bandScoreTo(r *Result, v, m, k, s float64) {
	half := k * s
	dev := math.Abs(v - m)
	if math.IsInf(dev, 0) { // opposite extremes
		dev = math.Abs(v/2-m/2) * 2
	}
	score := dev / half
	if math.IsNaN(score) { // 0/0: a band of width 0 and no departure
		score = 0
	}
	r.Score = saturate(score)
	r.Expected = m
	r.Lower = clampInf(m - half)
	r.Upper = clampInf(m + half)
	r.Ready = true
}

// clampInf keeps a band edge finite.
func clampInf(x float64) float64 {
	return max(-math.MaxFloat64, min(math.MaxFloat64, x))
}
