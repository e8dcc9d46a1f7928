package analysis

import (
	"math"
	"slices"
)

// phaseHit is a past period's sample nearest to the phase: its index in
// the history and the phase's time in that period.
type phaseHit struct {
	i  int
	at int64
}

// maxPhasePeriods is the most past periods the phase test reads.
const maxPhasePeriods = 64

// phaseTest is Auto's second test: a sample against what the same phase of
// the past periods looked like, judged only while the past periods predict
// the series well (see Auto). It reads Auto's history of the window and
// keeps running sums over the samples of that history that had a
// residual.
type phaseTest struct {
	k, fit  float64
	reach   int64 // how far either side of the same phase the range reaches, in ms
	minStep int64 // the series' smallest step so far, in ms

	// Over the history's samples x with a residual r: their count, Σr²,
	// and Σ(x−c), Σ(x−c)² about c, a recent mean (against cancellation).
	n                int
	sumR2, sumX, sX2 float64
	c                float64
	since            int // samples added since the sums were recomputed

	hits           []phaseHit // scratch: per past period, the sample nearest to the phase
	es, ys, lo, hi []float64  // scratch, one entry per past period
}

// on reports whether the test is configured.
func (p *phaseTest) on() bool { return p.k > 0 }

// look finds the past periods at t's phase: for each of the latest
// maxPhasePeriods periods j with a sample within reach of
// at = t − j·period (at least half a step, at most half a period), the
// index of the one nearest to at (into hits) and its value (into es). It
// returns how many periods had one.
func (p *phaseTest) look(hist *pastHist, t, period int64) int {
	p.es, p.hits = p.es[:0], p.hits[:0]
	if p.minStep == math.MaxInt64 || p.minStep <= 0 || hist.len() == 0 {
		return 0
	}
	span := p.span(period)
	for j := int64(1); j <= maxPhasePeriods; j++ {
		at := t - j*period
		if oldest := hist.time(0); at > t || at < oldest && absDiff(at, oldest) > span {
			break
		}
		i := p.search(hist, at)
		best, bestD := -1, span
		for _, k := range [2]int{i - 1, i} {
			if k >= 0 && k < hist.len() {
				if d := absDiff(hist.time(k), at); d <= bestD {
					best, bestD = k, d
				}
			}
		}
		if best >= 0 {
			p.hits = append(p.hits, phaseHit{best, at})
			p.es = append(p.es, hist.value(best))
		}
	}
	return len(p.es)
}

// span is how far from the phase look reads, in ms.
func (p *phaseTest) span(period int64) uint64 {
	return uint64(min(max(p.reach, p.minStep/2), period/2))
}

// search returns the index of the first sample of hist at or after at. On
// a regular series the sample is where the smallest step puts it, counted
// back from the newest; a few steps from there are walked before a binary
// search, so that each period costs one read of the history rather than a
// search's worth of cold cache lines.
func (p *phaseTest) search(hist *pastHist, at int64) int {
	n := hist.len()
	g := n
	if newest := hist.time(n - 1); at <= newest {
		g = n - 1 - int(min(absDiff(newest, at)/uint64(p.minStep), uint64(n-1)))
	}
	for range 8 {
		switch {
		case g < n && hist.time(g) < at:
			g++
		case g > 0 && hist.time(g-1) >= at:
			g--
		default:
			return g
		}
	}
	return searchTime(hist, at)
}

// residual returns v minus the median of the past periods' values at t's
// phase, or NaN when fewer than two periods have one. It leaves the
// periods found in p's scratch.
func (p *phaseTest) residual(hist *pastHist, t int64, v float64, period int64) float64 {
	if !p.on() || p.look(hist, t, period) < 2 {
		return math.NaN()
	}
	p.ys = append(p.ys[:0], p.es...)
	slices.Sort(p.ys)
	return v - sortedMedian(p.ys)
}

// score sets *res to the phase test's alarm on v at t, when the past
// periods predict the series well and v scores ≥ 1, and leaves it zero
// otherwise. step (the series' resolution) and floor bound the spread from
// below, as in Robust. It returns v's residual (NaN when it has none).
func (p *phaseTest) score(hist *pastHist, t int64, v float64, period int64, step, floor float64, res *Result) float64 {
	r := p.residual(hist, t, v, period)
	if math.IsNaN(r) {
		return r
	}
	// The median itself, not v − r, which cancels when |v| ≫ |e|.
	e := sortedMedian(p.ys)
	if !p.fits(period) {
		return r
	}
	s := robustSpread(max(math.Sqrt(p.sumR2/float64(p.n)), step), e, floor)
	half := p.k * s
	// Each period's distance below is between 0 and v − e_j, so the score
	// is at most |r|/half: below 1, the ranges need not be read.
	if !(math.Abs(r) >= half) {
		return r
	}
	// How far v lies outside each period's range, signed; the median of
	// these is v − median(hi) when v is above every range (median(lo) − v
	// below every range), so the band edges below are exact there.
	span := p.span(period)
	p.ys, p.lo, p.hi = p.ys[:0], p.lo[:0], p.hi[:0]
	for _, h := range p.hits {
		best, at := h.i, h.at
		lo, hi := hist.value(best), hist.value(best)
		for k := best - 1; k >= 0; k-- {
			if absDiff(hist.time(k), at) > span {
				break
			}
			x := hist.value(k)
			lo, hi = min(lo, x), max(hi, x)
		}
		for k := best + 1; k < hist.len(); k++ {
			if absDiff(hist.time(k), at) > span {
				break
			}
			x := hist.value(k)
			lo, hi = min(lo, x), max(hi, x)
		}
		d := 0.0
		if v > hi {
			d = v - hi
		} else if v < lo {
			d = v - lo
		}
		p.ys = append(p.ys, d)
		p.lo = append(p.lo, lo)
		p.hi = append(p.hi, hi)
	}
	slices.Sort(p.ys)
	score := math.Abs(sortedMedian(p.ys)) / half
	if !(score >= 1) || math.IsInf(score, 0) {
		return r
	}
	slices.Sort(p.lo)
	slices.Sort(p.hi)
	*res = Result{
		Score: saturate(score), Expected: e, Ready: true,
		Lower: clampInf(sortedMedian(p.lo) - half), Upper: clampInf(sortedMedian(p.hi) + half),
	}
	return r
}

// fits reports whether the past periods predict the series: at least a
// period's worth of residuals, and their RMS below fit times the standard
// deviation of the same samples.
func (p *phaseTest) fits(period int64) bool {
	if p.n < 2 || uint64(p.n) < uint64(period)/uint64(p.minStep) {
		return false
	}
	n := float64(p.n)
	m := p.sumX / n
	vx := p.sX2/n - m*m
	vr := p.sumR2 / n
	return vx > 0 && !math.IsInf(vx, 0) && vr < p.fit*p.fit*vx
}

// add counts x, with its residual r as stored in the history, and every
// so often recomputes the sums from the history (hist and hr, which end
// with x and r) so that rounding does not build up.
func (p *phaseTest) add(x float64, r float32, hist *pastHist, hr *ring[float32]) {
	if !p.on() {
		return
	}
	p.since++
	if p.since >= max(64, hist.len()) {
		p.recompute(hist, hr)
		return
	}
	if math.IsNaN(float64(r)) {
		return
	}
	if p.n == 0 {
		p.c = x
	}
	p.count(x, float64(r), 1)
}

// drop uncounts x, with its residual r, as it leaves the history.
func (p *phaseTest) drop(x float64, r float32) {
	if p.on() && !math.IsNaN(float64(r)) {
		p.count(x, float64(r), -1)
		if p.n == 0 {
			p.sumR2, p.sumX, p.sX2 = 0, 0, 0
		}
	}
}

func (p *phaseTest) count(x, r, sign float64) {
	d := x - p.c
	p.n += int(sign)
	p.sumR2 += sign * r * r
	p.sumX += sign * d
	p.sX2 += sign * d * d
}

// recompute sets the sums from the history, about its current mean.
func (p *phaseTest) recompute(hist *pastHist, hr *ring[float32]) {
	p.since = 0
	p.n, p.sumR2, p.sumX, p.sX2 = 0, 0, 0, 0
	var sum float64
	for i := range hist.len() {
		if !math.IsNaN(float64(hr.at(i))) {
			p.n++
			sum += hist.value(i)
		}
	}
	if p.n == 0 {
		return
	}
	p.c = sum / float64(p.n)
	if math.IsInf(p.c, 0) { // opposite extremes: the mean of halves
		sum = 0
		for i := range hist.len() {
			if !math.IsNaN(float64(hr.at(i))) {
				sum += hist.value(i) / float64(p.n)
			}
		}
		p.c = sum
	}
	p.n = 0
	for i := range hist.len() {
		if r := float64(hr.at(i)); !math.IsNaN(r) {
			p.count(hist.value(i), r, 1)
		}
	}
}

// storedResidual is r as the history keeps it: NaN when it is not finite
// as a float32.
func storedResidual(r float64) float32 {
	f := float32(r)
	if math.IsInf(float64(f), 0) {
		return float32(math.NaN())
	}
	return f
}

func absDiff(a, b int64) uint64 {
	if a < b {
		return uint64(b) - uint64(a)
	}
	return uint64(a) - uint64(b)
}
