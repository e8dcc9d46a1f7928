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
	// Refit is how many samples may join the window, or leave it, before
	// its median, MAD and quantiles are fitted again (default 0: a third
	// of the samples the window held at the last fit; 1: at every sample).
	Refit int
}

// Robust is the streaming median/MAD detector of one series.
//
// A sample (t, x) is scored against a fit of the window of samples before
// it, those with timestamps in [t−Window, t), as the window was at most
// Refit samples ago (see below). With m the window's median, MAD the median
// of |xᵢ − m|, Q(q) its q-quantiles and δ the series' resolution (the
// smallest non-zero change between consecutive samples seen so far):
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
// The fit. m, MAD and the quantiles are found by selection, exactly, with
// no sort (see fitter). A fit serves the samples that follow it until
// Refit samples have joined the window since, or Refit have left it; by
// default Refit is a third of the window's samples, so that fitting costs
// O(1) a sample and the band a sample is scored against is never more than
// a third of a window behind: a level shift is followed after half a
// window at the most, as with a fit at every sample, and a third more at
// most. Scores stay causal, and δ, the floors and the window itself are
// kept sample by sample. Refit 1 fits at every sample, as robust
// detectors over a sliding window classically do: about 0.9 µs a sample
// at 240 samples, against 40 ns by default (one core, in batches).
//
// One incident raises one alarm: after a score ≥ 1 the scores are capped
// at 0.99 until Quiet samples in a row have scored below 1 (the band is
// still reported).
//
// The same stream rules as Sigma apply: not Ready below MinPoints samples,
// non-finite and out-of-order samples neither scored nor added, scores
// saturate at math.MaxFloat64. The window's values are held in a ring
// sized to need and its timestamps as changes of step (see tsQueue); the
// fitter's zones take 2 bytes for each value in them (about a quarter of
// a 1,440-sample window), so a regular series costs about 9 bytes per
// sample held (about 14 KiB of heap at 1,440 samples, on normal noise).
//
// A Robust is not safe for concurrent use.
type Robust struct {
	window    int64
	k, floor  float64
	minPoints int
	refit     int // see RobustConfig.Refit; 0: a third of the window

	vals []float64 // ring of the window's values, oldest at head
	head int
	n    int
	ts   tsQueue // the window's timestamps, in the same order

	fitter         fitter
	fit            windowFit // the last fit, when fitted
	fitted         bool
	added, evicted int // samples that joined and left the window since
	serves         int // how many of each the fit serves

	res     resolution
	gate    rearm
	last    int64
	hasLast bool
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
	case c.Refit < 0:
		panic(fmt.Sprintf("analysis.NewRobust: Refit must be ≥ 0, got %d", c.Refit))
	}
	return &Robust{window: c.Window, k: c.K, floor: c.Floor, minPoints: c.MinPoints, refit: c.Refit, gate: newRearm(c.Quiet)}
}

// Len returns the number of samples held.
func (r *Robust) Len() int { return r.n }

// Observe scores (t, v) against the preceding window and then adds it.
func (r *Robust) Observe(t int64, v float64) Result {
	var res Result
	r.observe(t, v, &res)
	return res
}

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector), writing each result in
// place.
func (r *Robust) ObserveBatch(t []int64, v []float64, out []Result) {
	v, out = v[:len(t)], out[:len(t)]
	for i := 0; i < len(t); i++ {
		i = r.observeRun(t, v, out, i)
		if i < len(t) {
			r.observe(t[i], v[i], &out[i])
		}
	}
}

// observeRun scores t[i:], v[i:] into out[i:] for as long as the samples
// take the common path, and returns the index of the first one that does
// not, untouched, or len(t): the window ready, each sample one step after
// the last and evicting the oldest (see tsQueue.slideRun), finite, and
// the fit not due. The steps are observe's, in its order, on values held
// in registers; the results are identical.
func (r *Robust) observeRun(t []int64, v []float64, out []Result, i int) int {
	if !r.hasLast || !r.fitted || r.n-1 < r.minPoints {
		return i
	}
	// Sample j of the run finds the fit due after its eviction when
	// added+j ≥ serves or evicted+j+1 ≥ serves.
	free := min(r.serves-r.added, r.serves-r.evicted-1)
	end := i + r.ts.slideRun(t[i:], uint64(r.window), free)
	if end <= i {
		return i
	}
	var (
		vals = r.vals
		head = r.head
		tail = r.head + r.n
		m    = r.fit.median
		gate = r.gate
		res  = r.res
	)
	if tail >= len(vals) {
		tail -= len(vals)
	}
	// The band, as bandScoreTo computes it, until δ changes.
	half := r.k * robustSpread(max(r.fit.spread, res.min), m, r.floor)
	lower, upper := clampInf(m-half), clampInf(m+half)
	j := i
	for ; j < end; j++ {
		x := v[j]
		dev := math.Abs(x - m)
		if math.IsNaN(x) || math.IsInf(dev, 0) { // also x infinite
			break
		}
		r.fitter.evict(vals[head])
		score := dev / half
		if score != score { // 0/0
			score = 0
		}
		o := &out[j]
		o.Score = gate.pass(saturate(score))
		o.Expected, o.Lower, o.Upper, o.Ready = m, lower, upper, true
		δ := res.min
		if res.add(x); res.min != δ {
			half = r.k * robustSpread(max(r.fit.spread, res.min), m, r.floor)
			lower, upper = clampInf(m-half), clampInf(m+half)
		}
		vals[tail] = x
		if head++; head == len(vals) {
			head = 0
		}
		if tail++; tail == len(vals) {
			tail = 0
		}
	}
	if c := j - i; c > 0 {
		r.ts.slide(c, t[j-1])
		r.head = head
		r.added += c
		r.evicted += c
		r.gate, r.res = gate, res
		r.last = t[j-1]
	}
	return j
}

// observe is Observe writing its result to res field by field: a
// composite literal would be built on the stack and copied, which stalls
// store forwarding.
func (r *Robust) observe(t int64, v float64, res *Result) {
	if math.IsNaN(v) || math.IsInf(v, 0) || (r.hasLast && t <= r.last) {
		*res = notReady()
		return
	}
	r.evictBefore(t)
	if r.n >= r.minPoints {
		if !r.fitted || r.added >= r.serves || r.evicted >= r.serves {
			r.refresh()
		}
		m := r.fit.median
		bandScoreTo(res, v, m, r.k, robustSpread(max(r.fit.spread, r.res.step()), m, r.floor))
		res.Score = r.gate.pass(res.Score)
	} else {
		*res = notReady()
		r.fitted = false
	}
	r.res.add(v)
	r.push(t, v)
	r.last, r.hasLast = t, true
}

// evictBefore drops the samples older than t − window.
func (r *Robust) evictBefore(t int64) {
	lim := uint64(r.window)
	for r.n > 0 && uint64(t)-uint64(r.ts.oldest()) > lim {
		r.fitter.evict(r.vals[r.head])
		r.head++
		if r.head == len(r.vals) {
			r.head = 0
		}
		r.n--
		r.evicted++
		r.ts.pop()
	}
	if r.n == 0 {
		r.head = 0
	}
}

// push adds (t, v) at the ring's tail, growing it as Sigma's grows.
func (r *Robust) push(t int64, v float64) {
	if r.n == len(r.vals) {
		r.vals, r.head = unwrap(r.vals, r.head, ringRoom(r.n, r.ts.oldest(), t, uint64(r.window))), 0
		r.fitter.moved()
	}
	i := r.head + r.n
	if i >= len(r.vals) {
		i -= len(r.vals)
	}
	r.vals[i] = v
	r.n++
	r.added++
	r.ts.push(t)
}

// refresh fits the window as it is now.
func (r *Robust) refresh() {
	r.fit = r.fitter.fit(r.vals, r.head, r.n)
	r.fitted, r.added, r.evicted = true, 0, 0
	r.serves = r.refit
	if r.serves == 0 {
		r.serves = max(1, r.n/3)
	}
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
