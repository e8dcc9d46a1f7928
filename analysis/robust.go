package analysis

import (
	"fmt"
	"math"
)

// Defaults of RobustConfig.
const (
	DefaultRobustK         = 3.0
	DefaultRobustMinPoints = 10
	DefaultRobustFloor     = 0.001
)

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
}

// Robust is the streaming median/MAD detector of one series.
//
// A sample (t, x) is scored against the samples with timestamps in
// [t−Window, t). With m their median and MAD the median of |xᵢ − m|:
//
//	s        = 1.4826·MAD                        (σ for normal data)
//	s_eff    = max(s, Floor·|m|, 1e-9·max(1, |m|))
//	Score    = |x − m| / (K·s_eff)
//	Expected = m,  Lower = m − K·s_eff,  Upper = m + K·s_eff
//
// Unlike the mean and σ, the median and MAD ignore up to half the window
// being spikes, so a burst does not widen the band that judges it.
// The same stream rules as Sigma apply: not Ready below MinPoints samples,
// non-finite and out-of-order samples neither scored nor added, scores
// saturate at math.MaxFloat64. A window holds at most 65,536 samples (the
// newest).
//
// The window is kept sorted (binary search, then a move of 2-byte slot
// numbers), so each Observe costs O(log n) comparisons plus an O(n) memmove
// of 2n bytes; a regular series costs about 11 bytes per sample held.
//
// A Robust is not safe for concurrent use.
type Robust struct {
	k, floor  float64
	minPoints int
	w         sortedWindow
	last      int64
	hasLast   bool
}

var _ Detector = (*Robust)(nil)

// NewRobust returns a detector with c's zero fields set to their defaults.
// It panics when c is invalid; Build returns errors instead.
func NewRobust(c RobustConfig) *Robust {
	if c.K == 0 {
		c.K = DefaultRobustK
	}
	if c.MinPoints == 0 {
		c.MinPoints = DefaultRobustMinPoints
	}
	if c.Floor == 0 {
		c.Floor = DefaultRobustFloor
	}
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
	return &Robust{k: c.K, floor: c.Floor, minPoints: c.MinPoints, w: sortedWindow{window: c.Window}}
}

// Len returns the number of samples held.
func (r *Robust) Len() int { return r.w.len() }

// Observe scores (t, v) against the preceding window and then adds it.
func (r *Robust) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (r.hasLast && t <= r.last) {
		return notReady()
	}
	r.w.evictBefore(t)
	var res Result
	if r.w.len() >= r.minPoints {
		m := r.w.median()
		s := madScale * r.w.mad(m)
		res = bandScore(v, m, r.k, robustSpread(s, m, r.floor))
	} else {
		res = notReady()
	}
	r.w.push(t, v)
	r.last, r.hasLast = t, true
	return res
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
	half := k * s
	dev := math.Abs(v - m)
	if math.IsInf(dev, 0) { // opposite extremes
		dev = math.Abs(v/2-m/2) * 2
	}
	score := dev / half
	if math.IsNaN(score) { // 0/0: a band of width 0 and no departure
		score = 0
	}
	return Result{
		Score:    saturate(score),
		Expected: m,
		Lower:    clampInf(m - half),
		Upper:    clampInf(m + half),
		Ready:    true,
	}
}

// clampInf keeps a band edge finite.
func clampInf(x float64) float64 {
	return max(-math.MaxFloat64, min(math.MaxFloat64, x))
}
