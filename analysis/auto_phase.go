package analysis

import (
	"math"
	"slices"
)

// maxPhasePeriods is the most past periods the seen-before and phase tests
// read.
const maxPhasePeriods = 64

// phaseTest is Auto's test of a sample against the same phase of the past
// periods, judged only while the past periods predict the series well (see
// Auto). It reads Auto's bins. What it expects of a bin (e, the median over
// the past periods of the mean of the bin at the same phase) and whether the
// past predicts the series (the fit) are read once, when a bin is entered;
// the residuals of the samples are summed per period, so that the sums
// leave with whole periods.
type phaseTest struct {
	test    Test // what its results are named: TestPhase, or TestWeek
	k, fit  float64
	reach   int64
	periods int   // past periods read
	from    int64 // the first bin read: a level accepted as normal starts there

	// Of the bin being filled: what the past periods expect of it (NaN:
	// fewer than two have a mean there), its centre, whether they
	// predict the series, and the RMS of the residuals.
	e      float64
	centre int64
	fits   bool
	rms    float64
	// weekly is true when incidents that recurred a week apart (see
	// score) held a quarter of a period's samples over the periods read:
	// the series has a weekly shape, and what recurs is not alarmed.
	weekly bool

	period int64
	cur    phaseBlock   // the period of the newest sample
	blocks []phaseBlock // the periods before it, in a ring by period number

	es, ds, lo, hi []float64 // scratch
}

// phaseBlock sums the samples of one period that had a residual: their
// count, mean and sum of squared deviations (Welford, merged by Chan's
// formula), and the sum of their squared residuals; and it counts the
// incidents' samples that recurred (see score).
type phaseBlock struct {
	id              int64 // the period's number; math.MinInt64 when unused
	n, recur        int32
	mean, m2, sumR2 float64
}

func newPhaseTest(test Test, k, fit float64, reach int64, periods int) phaseTest {
	p := phaseTest{test: test, k: k, fit: fit, reach: reach, periods: periods, e: math.NaN(), blocks: make([]phaseBlock, periods),
		cur: phaseBlock{id: math.MinInt64}, from: math.MinInt64}
	for i := range p.blocks {
		p.blocks[i].id = math.MinInt64
	}
	return p
}

// on reports whether the test is configured and can run.
func (p *phaseTest) on() bool { return p.k > 0 }

// enter reads, for bin k (just entered), what the past periods expect
// and whether they predict the series.
func (p *phaseTest) enter(r *binRing, k, period, step, minStep int64) {
	if !p.on() {
		return
	}
	p.period = period
	p.centre = k*r.width + r.width/2
	p.es = p.es[:0]
	for j := 1; j <= p.periods; j++ {
		if k := r.number(p.centre - int64(j)*period); k < p.from {
			continue
		} else if m, ok := r.meanOf(k); ok {
			p.es = append(p.es, m)
		}
	}
	p.e = math.NaN()
	if len(p.es) >= 2 {
		slices.Sort(p.es)
		p.e = sortedMedian(p.es)
	}
	// The fit, over the periods held: at least a period's worth of
	// residuals, their RMS below fit times the standard deviation.
	if step <= 0 {
		step = minStep
	}
	p.fits = false
	id := floorDiv(p.centre, period)
	var n, recur int
	var mean, m2, r2 float64
	for i := -1; i < len(p.blocks); i++ {
		b := &p.cur
		if i >= 0 {
			b = &p.blocks[i]
		}
		if b.id > id || b.id < id-int64(p.periods) {
			continue
		}
		recur += int(b.recur)
		if b.n == 0 {
			continue
		}
		nn := n + int(b.n)
		d := b.mean - mean
		mean += d * float64(b.n) / float64(nn)
		m2 += b.m2 + d*d*float64(n)*float64(b.n)/float64(nn)
		r2 += b.sumR2
		n = nn
	}
	// Incidents that recurred a week apart for a quarter of a period's
	// samples are a weekly shape, which the past periods do not predict.
	p.weekly = step > 0 && step < math.MaxInt64 && 4*int64(recur) >= period/step
	if n < 2 || step <= 0 || step == math.MaxInt64 || int64(n) < period/step {
		return
	}
	vx, vr := m2/float64(n), r2/float64(n)
	p.rms = math.Sqrt(vr)
	p.fits = vx > 0 && !math.IsInf(vx, 0) && vr < p.fit*p.fit*vx
}

// block returns the block of the period holding t, the newest: a new
// period moves the one ending into the ring.
func (p *phaseTest) block(t int64) *phaseBlock {
	b := &p.cur
	if id := floorDiv(t, p.period); b.id != id {
		if b.id != math.MinInt64 && len(p.blocks) > 0 {
			n := int64(len(p.blocks))
			p.blocks[int((b.id%n+n)%n)] = *b
		}
		*b = phaseBlock{id: id}
	}
	return b
}

// recurred counts an incident's sample at t that recurred.
func (p *phaseTest) recurred(t int64) {
	if !p.on() {
		return
	}
	if b := p.block(t); b.recur < math.MaxInt32 {
		b.recur++
	}
}

// add counts the residual of (t, v), when the bin has an expectation.
func (p *phaseTest) add(t int64, v float64) {
	if !p.on() || math.IsNaN(p.e) {
		return
	}
	b := p.block(t)
	if b.n == math.MaxInt32 {
		return // a period of more samples than a block counts: the rest are not
	}
	r := v - p.e
	b.n++
	d := v - b.mean
	b.mean += d / float64(b.n)
	b.m2 += d * (v - b.mean)
	b.sumR2 += r * r
}

// score sets *res to the phase test's alarm on v, when the past periods
// predict the series and v scores ≥ 1; it leaves *res alone otherwise.
// step (the series' resolution) and floor bound the spread from below, as
// in Robust. For a test against past days it also reports whether such a
// v recurs: whether the series took it at the same time a week before
// (within the band's half-width of the range of the bins within reach
// of t − week, incidents' included; week ≤ 0: never). The caller then
// counts v's residual with add, unless v is an incident's, and an
// incident's v that recurs with recurred.
func (p *phaseTest) score(r *binRing, t int64, v, step, floor float64, week int64, res *Result) (recurs bool) {
	if !p.fits || math.IsNaN(p.e) {
		return false
	}
	e := p.e
	s := robustSpread(max(p.rms, step), e, floor)
	half := p.k * s
	// Each period's distance below is at most |v − e_j| and most are
	// close to |v − e|: a residual within the band needs no ranges read.
	if !(math.Abs(v-e) >= half) {
		return false
	}
	p.ds, p.lo, p.hi = p.ds[:0], p.lo[:0], p.hi[:0]
	for j := 1; j <= p.periods; j++ {
		at := p.centre - int64(j)*p.period
		if k := r.number(at); k < p.from {
			continue
		} else if _, ok := r.meanOf(k); !ok {
			continue
		}
		lo, hi := p.rangeNear(r, at, false)
		p.ds = append(p.ds, beyond(v, lo, hi))
		p.lo = append(p.lo, lo)
		p.hi = append(p.hi, hi)
	}
	if len(p.ds) < 2 {
		return false
	}
	slices.Sort(p.ds)
	score := math.Abs(sortedMedian(p.ds)) / half
	if !(score >= 1) || math.IsInf(score, 0) {
		return false
	}
	if week > 0 && p.test == TestPhase {
		lo, hi := p.rangeNear(r, p.centre-week, true)
		recurs = lo <= hi && !(math.Abs(beyond(v, lo, hi)) >= half)
	}
	slices.Sort(p.lo)
	slices.Sort(p.hi)
	*res = Result{
		Score: min(score, MaxAutoScore), Expected: e, Ready: true,
		Lower: clampInf(sortedMedian(p.lo) - half), Upper: clampInf(sortedMedian(p.hi) + half),
		Test: p.test,
	}
	return recurs
}

// rangeNear returns the range of the bins within reach of at, from the
// first bin read on: the normal ones, or with all also the incidents'
// (lo > hi when none is held).
func (p *phaseTest) rangeNear(r *binRing, at int64, all bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := max(p.from, r.number(at-p.reach)); k <= r.number(at+p.reach); k++ {
		l, h, ok := r.normal(k)
		if all {
			l, h, ok = r.at(k)
		}
		if ok {
			lo, hi = min(lo, l), max(hi, h)
		}
	}
	return lo, hi
}

// beyond returns how far v lies outside [lo, hi]: v − hi above it, v − lo
// below it, 0 inside.
func beyond(v, lo, hi float64) float64 {
	switch {
	case v > hi:
		return v - hi
	case v < lo:
		return v - lo
	}
	return 0
}
