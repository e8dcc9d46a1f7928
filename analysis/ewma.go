package analysis

import (
	"cmp"
	"fmt"
	"math"
)

// Defaults of EWMAConfig.
const (
	DefaultEWMAK         = 3.0
	DefaultEWMAMinPoints = 10
	// DefaultEWMAPoints sets alpha = 2/(points+1) when neither a window nor
	// alpha nor a half-life is given.
	DefaultEWMAPoints = 240
)

// EWMAConfig configures an EWMA detector. Zero fields take their defaults.
// Exactly one of Alpha, HalfLife and Window sets the memory; Alpha wins
// over HalfLife, which wins over Window.
type EWMAConfig struct {
	// Alpha is the weight of each new sample, in (0, 1]: a fixed memory in
	// samples, whatever their spacing.
	Alpha float64
	// HalfLife is the age, in milliseconds, at which a sample's weight
	// halves: a memory in time, so a gap forgets more.
	HalfLife int64
	// Window, in milliseconds, sets HalfLife = Window·ln2/2 when neither
	// Alpha nor HalfLife is given: the weights then have the mean age of a
	// rolling window of that span, Window/2.
	Window int64
	// K is the width of the band in standard deviations (default 3).
	K float64
	// MinPoints is how many samples must have been seen before the
	// detector judges (default 10, at least 2).
	MinPoints int
	// Quiet is how many samples in a row must score below 1 after an
	// alarm before the next alarm (default DefaultQuiet; negative: none).
	Quiet int
}

// EWMA is the streaming exponentially weighted k-sigma detector of one
// series: O(1) time and 48 bytes of state, whatever the memory.
//
// With μ and σ² the exponentially weighted mean and variance of the
// samples before x:
//
//	Score    = |x − μ| / (K·max(σ, δ, 1e-9·max(1, |μ|)))
//	Expected = μ, Lower = μ − K·σ, Upper = μ + K·σ
//
// then, with α the sample's weight (Alpha, or 1 − 2^(−Δt/HalfLife) for a
// sample Δt after the previous one), the recursion of West (1979):
//
//	d  = x − μ
//	μ ← μ + α·d
//	σ² ← (1 − α)·(σ² + α·d²)
//
// with δ the series' resolution (see Robust), so a quantised series does
// not alarm on one step. As in Robust, after an alarm the scores are
// capped at 0.99 until Quiet samples in a row have scored below 1.
//
// The first sample sets μ = x, σ² = 0. The stream rules of Sigma apply;
// a sample so far from μ that d or σ² overflows restarts the state from it.
//
// An EWMA is not safe for concurrent use.
type EWMA struct {
	k         float64
	alpha     float64 // fixed weight, or 0 for a half-life
	rate      float64 // ln2/HalfLife, per ms
	minPoints int

	mean, vari float64
	n          int
	last       int64
	res        resolution
	gate       rearm
}

var _ Detector = (*EWMA)(nil)

// NewEWMA returns a detector with c's zero fields set to their defaults. It
// panics when c is invalid; Build returns errors instead.
func NewEWMA(c EWMAConfig) *EWMA {
	c.K = cmp.Or(c.K, DefaultEWMAK)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultEWMAMinPoints)
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	switch {
	case c.Alpha != 0 && !(c.Alpha > 0 && c.Alpha <= 1):
		panic(fmt.Sprintf("analysis.NewEWMA: Alpha must be in (0, 1], got %v", c.Alpha))
	case c.HalfLife < 0 || c.Window < 0:
		panic(fmt.Sprintf("analysis.NewEWMA: HalfLife and Window must be ≥ 0 ms, got %d and %d", c.HalfLife, c.Window))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewEWMA: K must be a finite number > 0, got %v", c.K))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewEWMA: MinPoints must be ≥ 2, got %d", c.MinPoints))
	}
	e := &EWMA{k: c.K, alpha: c.Alpha, minPoints: c.MinPoints, gate: newRearm(c.Quiet)}
	switch {
	case c.Alpha > 0:
	case c.HalfLife > 0:
		e.rate = math.Ln2 / float64(c.HalfLife)
	case c.Window > 0:
		e.rate = 2 / float64(c.Window) // ln2/(Window·ln2/2)
	default:
		e.alpha = 2.0 / (DefaultEWMAPoints + 1)
	}
	return e
}

// Observe scores (t, v) against the samples before it and then adds it.
func (e *EWMA) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (e.n > 0 && t <= e.last) {
		return notReady()
	}
	dt := float64(uint64(t) - uint64(e.last))
	e.last = t
	if e.n == 0 {
		e.mean, e.vari, e.n = v, 0, 1
		return notReady()
	}
	res := notReady()
	if e.n >= e.minPoints {
		sd := math.Sqrt(e.vari)
		eff := max(sd, e.res.step(), sigmaFloor*max(1, math.Abs(e.mean)))
		res = bandScore(v, e.mean, e.k, eff)
		res.Lower, res.Upper = clampInf(e.mean-e.k*sd), clampInf(e.mean+e.k*sd)
		res.Score = e.gate.pass(res.Score)
	}
	e.res.add(v)
	a := e.alpha
	if a == 0 {
		a = -math.Expm1(-e.rate * dt)
	}
	d := v - e.mean
	nv := (1 - a) * (e.vari + a*d*d)
	if math.IsInf(d, 0) || math.IsInf(nv, 0) {
		e.mean, e.vari, e.n = v, 0, 1
		return res
	}
	e.mean += a * d
	e.vari = nv
	e.n = min(e.n+1, e.minPoints)
	return res
}
