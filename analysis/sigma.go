package analysis

import (
	"fmt"
	"math"
)

// Defaults of SigmaConfig.
const (
	DefaultSigmaK         = 3.0
	DefaultSigmaMinPoints = 10
)

// sigmaFloor is the relative floor of the standard deviation used in the
// score, so that a flat window does not divide by zero.
const sigmaFloor = 1e-9

// recomputeDrop triggers an exact recomputation of the running sums when the
// centred sum of squares falls this far below the largest raw sum of squares
// seen since the last recomputation: past that point the rounding left by
// the large terms would dominate the small ones.
const recomputeDrop = 1.0 / 1024

// SigmaConfig configures a Sigma detector. Zero fields take their defaults.
type SigmaConfig struct {
	// Window is the span of history, in milliseconds, that a sample is
	// scored against. It must be > 0.
	Window int64
	// K is the width of the band in standard deviations (default 3).
	K float64
	// MinPoints is how many samples the window must hold before the
	// detector judges (default 10, at least 2).
	MinPoints int
}

// Sigma is the streaming k-sigma detector of one series.
//
// A sample (t, x) is scored against the samples with timestamps in
// [t−Window, t) — the preceding window only, never the sample itself nor
// anything later. With μ the mean and σ the sample standard deviation
// (divisor n−1) of that window:
//
//	Score    = |x − μ| / (K·σ)
//	Expected = μ
//	Lower    = μ − K·σ
//	Upper    = μ + K·σ
//
// After scoring, the sample enters the window. Rules of the stream:
//
//   - The result is Ready only when the window holds at least MinPoints
//     samples; otherwise Score is 0 and Expected, Lower and Upper are NaN.
//   - A non-finite sample (NaN, ±Inf, a Prometheus staleness marker) is
//     neither scored nor added: the result is not Ready.
//   - A sample whose timestamp is not after that of the last sample added
//     (a duplicate or an out-of-order sample) is ignored in the same way.
//   - A flat window (σ = 0) does not divide by zero: the score uses
//     σ_eff = max(σ, 1e-9·max(1, |μ|)), so a sample equal to μ scores 0 and
//     any real departure from a flat line scores ≫ 1. The band reported is
//     still the real μ ± K·σ. The same floor applies to every window.
//   - Scores too large for a float64 saturate at math.MaxFloat64.
//
// Each Observe costs O(1) amortised: the window lives in a ring buffer sized
// to need (for a fixed step it settles at Window/step + 1 samples), and the
// mean and variance come from running sums of (x − s) for a shift s. The
// sums are recomputed exactly from the buffer whenever the buffer has been
// fully replaced since the last recomputation, and whenever large terms
// leaving the window would leave rounding behind, so errors never
// accumulate. Timestamps are stored as delta-of-delta varints, so a series
// on a regular step costs about ten bytes per sample (14.5 KB for a
// 1,440-sample window).
//
// A Sigma is not safe for concurrent use.
type Sigma struct {
	window    int64
	k         float64
	minPoints int

	vals []float64 // ring of the window's values, oldest at head
	head int
	n    int
	ts   tsQueue // the window's timestamps, in the same order

	shift  float64 // s: the values are summed as x − s
	s1, s2 float64 // Σ(x−s) and Σ(x−s)² over the window
	peak   float64 // largest s2 since the last exact recomputation
	exactN int     // n at the last exact recomputation
	evict  int     // evictions since the last exact recomputation

	last    int64 // timestamp of the last sample added
	hasLast bool
}

var _ Detector = (*Sigma)(nil)

// NewSigma returns a detector with c's zero fields set to their defaults.
// It panics when c is invalid (Window ≤ 0, K negative or not finite,
// MinPoints below 2): Build validates parameters written by people and
// returns errors instead.
func NewSigma(c SigmaConfig) *Sigma {
	if c.K == 0 {
		c.K = DefaultSigmaK
	}
	if c.MinPoints == 0 {
		c.MinPoints = DefaultSigmaMinPoints
	}
	switch {
	case c.Window <= 0:
		panic(fmt.Sprintf("analysis.NewSigma: Window must be > 0 ms, got %d", c.Window))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewSigma: K must be a finite number > 0, got %v", c.K))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewSigma: MinPoints must be ≥ 2, got %d", c.MinPoints))
	}
	return &Sigma{window: c.Window, k: c.K, minPoints: c.MinPoints}
}

// Len returns the number of samples held: those of the last sample's
// window plus that sample itself.
func (s *Sigma) Len() int { return s.n }

// Observe scores (t, v) against the preceding window and then adds it.
func (s *Sigma) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (s.hasLast && t <= s.last) {
		return notReady()
	}
	s.evictBefore(t)
	r := s.score(v)
	s.add(t, v)
	return r
}

func notReady() Result {
	nan := math.NaN()
	return Result{Expected: nan, Lower: nan, Upper: nan}
}

// evictBefore drops the samples older than t − Window and refreshes the
// running sums when they are due.
func (s *Sigma) evictBefore(t int64) {
	w := uint64(s.window)
	for s.n > 0 && uint64(t)-uint64(s.ts.oldest()) > w { // t > oldest always
		d := s.vals[s.head] - s.shift
		s.s1 -= d
		s.s2 -= d * d
		s.head++
		if s.head == len(s.vals) {
			s.head = 0
		}
		s.n--
		s.ts.pop()
		s.evict++
	}
	if s.n == 0 {
		s.head, s.s1, s.s2, s.peak, s.exactN, s.evict = 0, 0, 0, 0, 0, 0
		return
	}
	if s.evict >= max(s.exactN, 1) || !(s.s2-s.s1*s.s1/float64(s.n) >= s.peak*recomputeDrop) {
		// The buffer has been fully replaced since the sums were exact, or
		// cancellation would cost precision, or the sums overflowed.
		s.recompute()
	}
}

// add appends (t, v) to the window.
func (s *Sigma) add(t int64, v float64) {
	if s.n == 0 {
		s.shift = v
	}
	if s.n == len(s.vals) {
		s.grow(t)
	}
	i := s.head + s.n
	if i >= len(s.vals) {
		i -= len(s.vals)
	}
	s.vals[i] = v
	s.n++
	s.ts.push(t)
	d := v - s.shift
	s.s1 += d
	s.s2 += d * d
	if s.s2 > s.peak {
		s.peak = s.s2
	}
	s.last, s.hasLast = t, true
}

// grow enlarges the full ring before t is added. It doubles, but not beyond
// what the window is predicted to need from the density of the samples it
// holds, so that a fixed step settles at exactly Window/step + 1 slots.
// A later overflow (an irregular step) grows by at least a sixteenth.
func (s *Sigma) grow(t int64) {
	n := len(s.vals)
	c := 8
	if n > 0 {
		span := float64(uint64(t) - uint64(s.ts.oldest()))
		need := math.Floor(float64(n)*float64(s.window)/span) + 1
		c = n + n/16 + 1
		if need > float64(c) {
			c = int(min(need, float64(2*n)))
		}
	}
	nv := make([]float64, c)
	k := copy(nv, s.vals[s.head:])
	copy(nv[k:], s.vals[:s.head])
	s.vals, s.head = nv, 0
}

// recompute sets the shift to the window's mean and recomputes the running
// sums exactly from the buffer.
func (s *Sigma) recompute() {
	first, second := s.segments()
	x0 := first[0]
	var acc float64
	for _, seg := range [2][]float64{first, second} {
		for _, x := range seg {
			acc += x - x0
		}
	}
	s.shift = x0 + acc/float64(s.n)
	if math.IsInf(s.shift, 0) || math.IsNaN(s.shift) {
		s.shift = x0
	}
	s.s1, s.s2 = 0, 0
	for _, seg := range [2][]float64{first, second} {
		for _, x := range seg {
			d := x - s.shift
			s.s1 += d
			s.s2 += d * d
		}
	}
	s.peak, s.exactN, s.evict = s.s2, s.n, 0
}

// segments returns the window's values, oldest first, as two slices.
func (s *Sigma) segments() (first, second []float64) {
	end := s.head + s.n
	if end <= len(s.vals) {
		return s.vals[s.head:end], nil
	}
	return s.vals[s.head:], s.vals[:end-len(s.vals)]
}

// score judges v against the current window.
func (s *Sigma) score(v float64) Result {
	if s.n < s.minPoints {
		return notReady()
	}
	n := float64(s.n)
	mean := s.s1 / n
	m2 := s.s2 - s.s1*mean
	if m2 < 0 {
		m2 = 0
	}
	mu := s.shift + mean
	sigma := math.Sqrt(m2 / (n - 1))
	if math.IsInf(mu, 0) || math.IsNaN(mu) || math.IsInf(sigma, 0) || math.IsNaN(sigma) {
		return s.scoreScaled(v)
	}
	eff := max(sigma, sigmaFloor*max(1, math.Abs(mu)))
	dev := math.Abs((v - s.shift) - mean)
	return Result{
		Score:    saturate(dev / eff / s.k),
		Expected: mu,
		Lower:    mu - s.k*sigma,
		Upper:    mu + s.k*sigma,
		Ready:    true,
	}
}

// scoreScaled is score for windows whose sums overflow a float64: it
// divides every value by the largest magnitude in the window and makes two
// passes over the buffer. Only values beyond about 1e150 take this path.
func (s *Sigma) scoreScaled(v float64) Result {
	first, second := s.segments()
	var a float64
	for _, seg := range [2][]float64{first, second} {
		for _, x := range seg {
			a = max(a, math.Abs(x))
		}
	}
	n := float64(s.n)
	var m float64
	for _, seg := range [2][]float64{first, second} {
		for _, x := range seg {
			m += x / a
		}
	}
	m /= n
	var m2 float64
	for _, seg := range [2][]float64{first, second} {
		for _, x := range seg {
			d := x/a - m
			m2 += d * d
		}
	}
	sd := math.Sqrt(m2 / (n - 1)) // σ/a
	mu := m * a
	eff := max(sd, sigmaFloor*max(1/a, math.Abs(m)))
	dev := math.Abs(v/a - m)
	return Result{
		Score:    saturate(dev / eff / s.k),
		Expected: mu,
		Lower:    mu - s.k*sd*a,
		Upper:    mu + s.k*sd*a,
		Ready:    true,
	}
}

func saturate(x float64) float64 {
	if x > math.MaxFloat64 {
		return math.MaxFloat64
	}
	return x
}
