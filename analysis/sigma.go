package analysis

import (
	"cmp"
	"fmt"
	"math"
)

// Defaults of SigmaConfig.
const (
	DefaultSigmaK         = 3.0
	DefaultSigmaMinPoints = 10
	// DefaultSigmaClip is how far from the mean, in standard deviations,
	// a sample enters the window at most: one sample widens the σ of a
	// 240-sample window at most 1.9 times.
	DefaultSigmaClip = 20.0
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
	// Clip bounds what one sample does to the window: a judged sample
	// further than Clip standard deviations from the mean enters it at
	// that distance (default 20; negative: no bound).
	Clip float64
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
//   - One sample cannot blind the detector: a judged sample further than
//     Clip·σ_eff from μ (20 σ by default) is scored as it is but enters
//     the window at μ ± Clip·σ_eff, so that a sample of 1e308 widens the σ
//     of a 240-sample window at most √(1 + 400/239) = 1.9 times, not to
//     1e306. Clipped counts such samples. A level that shifts for good is
//     learned still: each clipped sample widens σ, and the window follows.
//
// Each Observe costs O(1) amortised: the window lives in a ring buffer sized
// to need (for a fixed step it settles at Window/step + 1 samples), and the
// mean and variance come from running sums of (x − s) for a shift s. The
// sums are recomputed exactly from the buffer whenever the buffer has been
// fully replaced since the last recomputation, and whenever large terms
// leaving the window would leave rounding behind, so errors never
// accumulate. Timestamps are stored as changes of step (see tsQueue), so a
// series on a regular step costs eight bytes per sample and a few bytes
// more (12.3 KB of heap for a 1,440-sample window).
//
// ObserveBatch scores a run of samples in one call: the common case (one
// sample in, one out, on the window's step) is checked once per run, and
// then scored in a loop of its own that keeps the sums in registers and
// writes the results in place; the square roots and divisions, which feed
// nothing that follows, overlap with the next samples. Its results are
// identical to Observe's.
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

	invFor    int     // the n that inv and inv1 are for
	inv, inv1 float64 // 1/n and 1/(n−1)

	clip2   float64 // Clip², or +Inf: no bound
	clipped int64   // samples clipped as they entered

	last    int64 // timestamp of the last sample added
	hasLast bool
}

var _ BatchDetector = (*Sigma)(nil)

// NewSigma returns a detector with c's zero fields set to their defaults.
// It panics when c is invalid (Window ≤ 0, K negative or not finite,
// MinPoints below 2): Build validates parameters written by people and
// returns errors instead.
func NewSigma(c SigmaConfig) *Sigma {
	c.K = cmp.Or(c.K, DefaultSigmaK)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultSigmaMinPoints)
	switch {
	case c.Window <= 0:
		panic(fmt.Sprintf("analysis.NewSigma: Window must be > 0 ms, got %d", c.Window))
	case !(c.K > 0) || math.IsInf(c.K, 0):
		panic(fmt.Sprintf("analysis.NewSigma: K must be a finite number > 0, got %v", c.K))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewSigma: MinPoints must be ≥ 2, got %d", c.MinPoints))
	}
	c.Clip = cmp.Or(c.Clip, DefaultSigmaClip)
	clip2 := math.Inf(1)
	if c.Clip > 0 {
		clip2 = c.Clip * c.Clip
	}
	return &Sigma{window: c.Window, k: c.K, minPoints: c.MinPoints, clip2: clip2}
}

// Clipped returns how many samples entered the window clipped (see Clip).
func (s *Sigma) Clipped() int64 { return s.clipped }

// clipped returns v as it enters a window of mean mu and squared
// effective spread eff2 when dev = v − mu lies beyond Clip·σ_eff, and
// whether it did.
func clipTo(mu, dev, eff2, clip2 float64) (float64, bool) {
	if !(dev*dev > clip2*eff2) {
		return 0, false
	}
	return mu + math.Copysign(math.Sqrt(clip2*eff2), dev), true
}

// Len returns the number of samples held: those of the last sample's
// window plus that sample itself.
func (s *Sigma) Len() int { return s.n }

// Observe scores (t, v) against the preceding window and then adds it.
func (s *Sigma) Observe(t int64, v float64) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (s.hasLast && t <= s.last) {
		return notReady()
	}
	r, in := s.evictAndScore(t, v)
	s.add(t, in)
	return r
}

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector). Samples on the common path
// (finite, in order, a window of at least MinPoints that needs no exact
// recomputation and no room) are scored in one loop that keeps the running
// sums in registers; the others go through Observe.
func (s *Sigma) ObserveBatch(t []int64, v []float64, out []Result) {
	v = v[:len(t)]
	out = out[:len(t)]
	for i := 0; i < len(t); i++ {
		i = s.observeRun(t, v, out, i)
		if i < len(t) {
			out[i] = s.Observe(t[i], v[i])
		}
	}
}

// observeRun scores t[i:], v[i:] into out[i:] for as long as the samples
// take the common path, and returns the index of the first one that does
// not, untouched, or len(t). out, v and t have the same length.
//
// The conditions that hold for the whole run (a window on one step whose
// oldest sample leaves as each new one comes, room in the timestamp
// queue's runs, evictions left before a recomputation) are checked once,
// and the timestamps in one pass; runSums.score then scores the values.
// The arithmetic is evictAndScore's, operation for operation, so the
// results are identical to Observe's.
func (s *Sigma) observeRun(t []int64, v []float64, out []Result, i int) int {
	// Each sample evicts one and adds one: the window it is scored
	// against holds s.n−1 samples.
	if !s.hasLast || s.n-1 < s.minPoints || s.n-1 != s.invFor {
		return i
	}
	var (
		vals   = s.vals
		head   = s.head
		tail   = s.head + s.n // where the next sample goes
		s1, s2 = s.s1, s.s2
		shift  = s.shift
		peak   = s.peak
		lim    = max(s.exactN, 1) - s.evict // evictions left before a recomputation
		inv    = s.inv
		inv1   = s.inv1
	)
	if tail >= len(vals) {
		tail -= len(vals)
	}
	// The run: as many samples as slide along the timestamp queue and
	// as the evictions left before a recomputation allow.
	end := i + s.ts.slideRun(t[i:], uint64(s.window), lim-1)
	if end <= i {
		return i
	}
	// t[i:end] is on the step: from here on only the values can stop
	// the run.
	sums := runSums{s1: s1, s2: s2, peak: peak, shift: shift, inv: inv, inv1: inv1, k: s.k, clip2: s.clip2}
	m := sums.score(vals, head, tail, v[i:end], out[i:end])
	s1, s2, peak = sums.s1, sums.s2, sums.peak
	s.clipped += sums.clipped
	// m < len(vals): a recomputation is due within one window.
	if head += m; head >= len(vals) {
		head -= len(vals)
	}
	if m > 0 {
		s.ts.slide(m, t[i+m-1])
	}
	i += m
	lim -= m
	s.head, s.s1, s.s2, s.peak, s.last = head, s1, s2, peak, s.ts.last
	s.evict = max(s.exactN, 1) - lim
	return i
}

// Bounds of runSums.segment's loop: with Σ(x−s)² ≤ runMaxSum when it
// starts and |x − s| ≤ runMaxDev for each sample it adds (each adds at
// most 1e200 to a sum of at most 65,536 terms), the sums, the mean and
// the variance stay far below math.MaxFloat64.
const (
	runMaxSum = 1e300
	runMaxDev = 1e100
)

// runSums is the state observeRun's inner loop keeps in registers.
type runSums struct {
	s1, s2, peak     float64
	shift, inv, inv1 float64
	k, clip2         float64
	clipped          int64
}

// score scores xs into out, each sample evicting vals[head] and taking
// its place at vals[tail] (both moving round the ring), for as long as
// the samples are finite and the sums need no recomputation, and returns
// how many it scored. It goes by stretches in which neither end of the
// ring wraps, so that its loop (segment) indexes plain slices.
func (c *runSums) score(vals []float64, head, tail int, xs []float64, out []Result) int {
	i := 0
	for i < len(xs) {
		m := min(len(xs)-i, len(vals)-head, len(vals)-tail)
		j := c.segment(vals[head:head+m], vals[tail:tail+m], xs[i:i+m], out[i:i+m])
		i += j
		if j < m {
			break
		}
		if head += m; head == len(vals) {
			head = 0
		}
		if tail += m; tail == len(vals) {
			tail = 0
		}
	}
	return i
}

// segment is score over one stretch: the k-th sample evicts old[k] and is
// written to new[k]. The two may be the same memory further on (a sample
// written here is evicted a window later), which the order of the loop
// keeps right. It is a function of its own so that the loop has the
// registers to itself.
func (c *runSums) segment(old, new, xs []float64, out []Result) int {
	s1, s2, peak := c.s1, c.s2, c.peak
	shift, inv, inv1, k, clip2 := c.shift, c.inv, c.inv1, c.k, c.clip2
	old, new, out = old[:len(xs)], new[:len(xs)], out[:len(xs)]
	i := 0
	// Sums this far below the largest float64, and samples within
	// runMaxDev of the shift, keep every quantity below finite: the mean
	// and the variance need no check of their own (scoreScaled's case).
	if !(s2 <= runMaxSum) {
		return 0
	}
	drop := peak * recomputeDrop
	for ; i < len(xs); i++ {
		// The sums as the sample finds them, stored where an exit
		// below leaves them, so that the loop does not hold the old
		// sums and the new ones at once: with both, Go spilled the new
		// ones to the stack, a store and a reload on the chain from
		// each sample to the next.
		c.s1, c.s2 = s1, s2
		x := xs[i]
		dx := x - shift
		dx2 := dx * dx
		if !(dx2 <= runMaxDev*runMaxDev) { // also NaN and ±Inf
			return i
		}
		d := old[i] - shift
		ns1 := s1 - d
		ns2 := s2 - d*d
		mean := ns1 * inv
		m2 := ns2 - ns1*mean
		mu := shift + mean
		// A sample far outside the band enters clipped (see Clip).
		fl := sigmaFloor
		if a := math.Abs(mu); a > 1 {
			fl = sigmaFloor * a
		}
		in, idx, idx2 := x, dx, dx2
		if xc, ok := clipTo(mu, dx-mean, max(m2*inv1, fl*fl), clip2); ok {
			in = xc
			idx = xc - shift
			idx2 = idx * idx
			c.clipped++
		}
		s1 = ns1 + idx
		s2 = ns2 + idx2
		// A recomputation is due: leave it to Observe, with the sums as
		// the sample found them. Past this test m2 is ≥ 0, as peak is.
		if !(m2 >= drop) {
			if in != x {
				c.clipped--
			}
			return i
		}
		// Evict the oldest and add x.
		new[i] = in
		if s2 > peak {
			peak = s2
			c.peak = peak
			drop = peak * recomputeDrop
		}
		// Score x. Nothing here feeds the next sample, so the square
		// root and the division overlap with it.
		sigma := math.Sqrt(m2 * inv1)
		eff := sigma
		if fl > sigma {
			eff = fl
		}
		band := k * sigma
		// Field by field: a composite literal would be built on the
		// stack and copied, which stalls store forwarding.
		o := &out[i]
		o.Score = saturate(math.Abs(dx-mean) / (eff * k))
		o.Expected = mu
		o.Lower = mu - band
		o.Upper = mu + band
		o.Ready = true
	}
	c.s1, c.s2 = s1, s2
	return i
}

func notReady() Result {
	nan := math.NaN()
	return Result{Expected: nan, Lower: nan, Upper: nan}
}

// evictAndScore drops the samples older than t − Window, refreshes the
// running sums when they are due, and judges v against what remains; it
// returns the value that enters the window: v, or v clipped.
func (s *Sigma) evictAndScore(t int64, v float64) (Result, float64) {
	w := uint64(s.window)
	for s.n > 0 && uint64(t)-uint64(s.ts.first) > w { // t > oldest always
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
		return notReady(), v
	}
	if s.n != s.invFor {
		s.invFor = s.n
		s.inv = 1 / float64(s.n)
		s.inv1 = 1 / float64(s.n-1)
	}
	mean := s.s1 * s.inv
	m2 := s.s2 - s.s1*mean
	if s.evict >= max(s.exactN, 1) || !(m2 >= s.peak*recomputeDrop) {
		// The buffer has been fully replaced since the sums were exact, or
		// cancellation would cost precision, or the sums overflowed.
		s.recompute()
		mean = s.s1 * s.inv
		m2 = s.s2 - s.s1*mean
	}
	if s.n < s.minPoints {
		return notReady(), v
	}
	m2 = max(m2, 0)
	mu := s.shift + mean
	sigma := math.Sqrt(m2 * s.inv1)
	if !(math.Abs(mu) <= math.MaxFloat64 && sigma <= math.MaxFloat64) {
		r := s.scoreScaled(v)
		in := v
		if band := r.Upper - r.Expected; s.clip2 < math.Inf(1) && !math.IsInf(band, 0) {
			if xc, ok := clipTo(mu, v-mu, band*band/(s.k*s.k), s.clip2); ok {
				in = xc
				s.clipped++
			}
		}
		return r, in
	}
	fl := sigmaFloor
	if a := math.Abs(mu); a > 1 {
		fl = sigmaFloor * a
	}
	eff := max(sigma, fl)
	dx := (v - s.shift) - mean
	dev := math.Abs(dx)
	band := s.k * sigma
	in := v
	if xc, ok := clipTo(mu, dx, max(m2*s.inv1, fl*fl), s.clip2); ok {
		in = xc
		s.clipped++
	}
	return Result{
		Score:    saturate(dev / (eff * s.k)),
		Expected: mu,
		Lower:    mu - band,
		Upper:    mu + band,
		Ready:    true,
	}, in
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

// grow enlarges the full ring before t is added (see ringRoom): it doubles,
// but not beyond what the window is predicted to need from the density of
// the samples it holds, so that a fixed step settles at exactly
// Window/step + 1 slots. A later overflow (an irregular step) grows by at
// least a sixteenth.
func (s *Sigma) grow(t int64) {
	s.vals, s.head = unwrap(s.vals, s.head, ringRoom(len(s.vals), s.ts.first, t, uint64(s.window))), 0
}

// unwrap returns a ring of c slots holding the values of the full ring
// vals, oldest first.
func unwrap(vals []float64, head, c int) []float64 {
	nv := make([]float64, c)
	k := copy(nv, vals[head:])
	copy(nv[k:], vals[:head])
	return nv
}

// recompute sets the shift to the window's mean, as the running sums give
// it, and recomputes the running sums exactly from the buffer.
func (s *Sigma) recompute() {
	first, second := s.segments()
	// The running mean is close enough to the window's mean to centre
	// the sums on: it saves a pass over the buffer. When the sums have
	// overflowed, the mean is taken from the buffer.
	shift := s.shift + s.s1/float64(s.n)
	if math.IsInf(shift, 0) || math.IsNaN(shift) {
		x0 := first[0]
		a, _ := sums4(first, x0)
		b, _ := sums4(second, x0)
		shift = x0 + (a+b)/float64(s.n)
		if math.IsInf(shift, 0) || math.IsNaN(shift) {
			shift = x0
		}
	}
	s.shift = shift
	a1, a2 := sums4(first, s.shift)
	b1, b2 := sums4(second, s.shift)
	s.s1, s.s2 = a1+b1, a2+b2
	// Rounding left by large values that have left the window can put
	// the running mean far off: then centre again on the mean just
	// computed, or the sums would lose what they are kept for.
	if n := float64(s.n); !(s.s1*s.s1 <= s.s2*n*0x1p-20) {
		if c := s.shift + s.s1/n; !math.IsInf(c, 0) && !math.IsNaN(c) {
			s.shift = c
			a1, a2 = sums4(first, c)
			b1, b2 = sums4(second, c)
			s.s1, s.s2 = a1+b1, a2+b2
		}
	}
	s.peak, s.exactN, s.evict = s.s2, s.n, 0
}

// sums4 returns Σ(x−c) and Σ(x−c)² over xs, summed in four interleaved
// lanes so that the additions do not wait on one another.
func sums4(xs []float64, c float64) (s1, s2 float64) {
	var a0, a1, a2, a3, q0, q1, q2, q3 float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		x := xs[i : i+4 : i+4]
		d0, d1, d2, d3 := x[0]-c, x[1]-c, x[2]-c, x[3]-c
		a0, a1, a2, a3 = a0+d0, a1+d1, a2+d2, a3+d3
		q0, q1, q2, q3 = q0+d0*d0, q1+d1*d1, q2+d2*d2, q3+d3*d3
	}
	for ; i < len(xs); i++ {
		d := xs[i] - c
		a0 += d
		q0 += d * d
	}
	return (a0 + a1) + (a2 + a3), (q0 + q1) + (q2 + q3)
}

// segments returns the window's values, oldest first, as two slices.
func (s *Sigma) segments() (first, second []float64) {
	end := s.head + s.n
	if end <= len(s.vals) {
		return s.vals[s.head:end], nil
	}
	return s.vals[s.head:], s.vals[:end-len(s.vals)]
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
