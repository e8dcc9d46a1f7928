package analysis

import (
	"cmp"
	"fmt"
	"math"
	"sort"
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
	// DefaultAutoPhaseK is the width of the phase test's band in residual
	// RMSs.
	DefaultAutoPhaseK = 3.0
	// DefaultAutoPhaseReach sets PhaseReach to Period/24 (an hour of a
	// day either side) when it is not given.
	DefaultAutoPhaseReach = 24
	// DefaultAutoPhaseFit is the largest ratio of the phase residuals' RMS
	// to the series' standard deviation at which the phase test judges:
	// the past periods must explain at least 91% of the variance.
	DefaultAutoPhaseFit = 0.3
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
	// PhaseK is the width of the phase test's band in residual RMSs
	// (default 3; negative: no phase test).
	PhaseK float64
	// PhaseFit is how well the past periods must predict the series for
	// the phase test to judge: the RMS of the phase residuals below
	// PhaseFit times the series' standard deviation (default 0.3; in
	// (0, 1]).
	PhaseFit float64
	// PhaseReach is how far either side of the same phase of a past period
	// the phase test reads the range the series took, in milliseconds
	// (default Period/24; negative: only the nearest sample).
	PhaseReach int64
}

// Auto is the default detector of a new rule: a robust, two-sided tail test
// with an alarm refractory period and, for a series that repeats itself
// from one period to the next, a test against the same phase of the past
// periods.
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
// A value inside the window's range can still be news when the series
// repeats itself: a day that stays flat where the days before rose, a
// daily jump that goes down, or does not come. While the past periods
// predict the series well, a phase test judges it too. With e the median
// over the past periods j of the sample nearest to t − j·Period (within
// PhaseReach; at least two periods must have one), the phase residual of
// a sample is x − e. When the window's samples with a residual are at
// least a period's worth and
//
//	RMS(x − e) < PhaseFit · SD(x)
//
// (the past periods explain at least 1 − PhaseFit² of the variance; a
// series whose same-phase values differ as much as any two of its values
// never qualifies), a sample is scored by how far it lies outside the
// range [lo_j, hi_j] the series took within PhaseReach of the same phase
// of each past period j, the median over the periods:
//
//	d = median_j( x − hi_j if x > hi_j; x − lo_j if x < lo_j; else 0 )
//	s_ph = max(RMS(x − e), δ, Floor·|e|)
//	Score = |d| / (PhaseK·s_ph)
//	Expected = e, Lower = median(lo) − PhaseK·s_ph, Upper = median(hi) + PhaseK·s_ph
//
// (Lower and Upper are exact for a sample beyond every period's range).
// The range keeps a daily event that comes a little earlier or later than
// usual from alarming. The phase test reports alarms only: when it scores
// ≥ 1 and above the tail test, its result is the sample's. The seen-before
// rule applies to the tail test only.
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
// The phase test finds three of the six changes of a daily shape in
// NAB's artificial series that the tail test misses (a flat day, a jump
// down, a missing jump), and changes no decision on NAB's 24 real series:
// their past days explain too little of them (the RMS ratio above stays at
// 0.7 or more, but for one series that dips to 0.16 for part of its
// days), against 0.07–0.13 for the artificial daily series. PhaseK and
// PhaseFit were chosen with each category left out in turn: the choices
// made on three categories that include the artificial one picked PhaseK
// 3 and PhaseFit 0.3; on the real categories alone no choice beats no
// phase test. PhaseK from 1.5 to 4 scores the same; PhaseFit 0.7 adds
// two false alarms on the artificial series. PhaseReach was set by reasoning, not tuning: on the real series a
// reach of 30 minutes to 4 hours adds no false alarm (the nearest sample
// alone adds 2, and 15 minutes 1), on the artificial ones up to 2 hours
// finds all three changes; an hour is the middle. With PhaseFit 1 (no
// requirement that the past predict) the test adds false alarms on the
// real series: 1 with the hour's reach, 8 with 15 minutes, 19 with the
// nearest sample alone.
//
// Auto holds its window sorted (about 11 bytes a sample) and, when a past
// period can fall within the seen-before test's reach (Period ≤ Window +
// 2·Tolerance), a history of the window and the Tolerance before it: the
// timestamps (8 bytes a sample), with the values of the samples that have
// left the window (the others it reads from the window); with the phase
// test, whose window must reach two periods back, also the phase
// residuals (4 bytes a sample). With the default one-day period and
// two-hour tolerance (measured): a 15 s step keeps no history at 240
// samples (2.8 KB) or 1,440 (6 hours, 16.0 KB); a 1-minute step does at
// 1,440 (31 KB) and 2,000 (41 KB), and a 5-minute step's 2,000 samples
// with the phase test take 46 KB. The stream rules of Sigma apply. An Auto
// is not safe for concurrent use.
type Auto struct {
	k, p, zp, floor       float64
	refractory, minPoints int

	w           sortedWindow
	res         resolution
	hist        pastHist      // the samples of the window and the tolerance before it, oldest first
	hr          ring[float32] // hist's phase residuals, NaN where there was none (phase test on)
	period, tol int64
	past        bool // hist is kept: a past period's phase can fall within its reach
	hold        int  // samples left in the refractory period
	last        int64
	hasLast     bool
	ph          phaseTest
}

var _ Detector = (*Auto)(nil)

// refractoryCap is the highest score reported during the refractory period.
const refractoryCap = 0.99

// NewAuto returns a detector with c's zero fields set to their defaults. It
// panics when c is invalid; Build returns errors instead.
func NewAuto(c AutoConfig) *Auto {
	c.K = cmp.Or(c.K, DefaultAutoK)
	c.P = cmp.Or(c.P, DefaultAutoP)
	c.Refractory = cmp.Or(c.Refractory, DefaultAutoRefractory)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultAutoMinPoints)
	c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
	c.Period = cmp.Or(c.Period, DefaultSeasonalPeriod)
	c.Tolerance = cmp.Or(c.Tolerance, c.Period/DefaultAutoTolerance)
	c.PhaseK = cmp.Or(c.PhaseK, DefaultAutoPhaseK)
	c.PhaseFit = cmp.Or(c.PhaseFit, DefaultAutoPhaseFit)
	c.PhaseReach = cmp.Or(c.PhaseReach, c.Period/DefaultAutoPhaseReach)
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
	case math.IsNaN(c.PhaseK) || math.IsInf(c.PhaseK, 0):
		panic(fmt.Sprintf("analysis.NewAuto: PhaseK must be a finite number, got %v", c.PhaseK))
	case !(c.PhaseFit > 0 && c.PhaseFit <= 1):
		panic(fmt.Sprintf("analysis.NewAuto: PhaseFit must be in (0, 1], got %v", c.PhaseFit))
	case c.Tolerance < 0:
		panic(fmt.Sprintf("analysis.NewAuto: Tolerance must be ≥ 0 ms, got %d", c.Tolerance))
	}
	a := &Auto{
		k: c.K, p: c.P, zp: -normQuantile(c.P), floor: c.Floor,
		refractory: max(0, c.Refractory), minPoints: c.MinPoints,
		w: sortedWindow{window: c.Window}, period: c.Period, tol: c.Tolerance,
	}
	// The test needs two past periods within the history's reach: a
	// shorter window never has them, and keeps no residuals.
	reach := uint64(max(0, c.Window)) + uint64(max(0, c.Tolerance)) + uint64(max(0, c.PhaseReach))
	if c.Period > 0 && c.PhaseK > 0 && reach >= 2*uint64(c.Period) {
		a.ph = phaseTest{k: c.PhaseK, fit: c.PhaseFit, reach: max(0, c.PhaseReach), minStep: math.MaxInt64}
	}
	// The seen-before test reads t − j·Period ± Tolerance in a history
	// that reaches Window + Tolerance back: it can find a sample there
	// only when Period ≤ Window + 2·Tolerance. Below that (a 15 s series
	// on a window of hours) the history would never be read, and is not
	// kept.
	a.past = c.Period > 0 && (a.ph.on() || c.Period <= c.Window || uint64(c.Period-c.Window) <= 2*uint64(c.Tolerance))
	a.hist.w = &a.w
	return a
}

// Len returns the number of samples held.
func (a *Auto) Len() int { return a.w.len() }

// Observe scores (t, v) and then adds it to the baseline.
func (a *Auto) Observe(t int64, v float64) Result { return a.observe(t, v, false) }

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector).
func (a *Auto) ObserveBatch(t []int64, v []float64, out []Result) {
	observeWarm(t, v, out, a.observe)
}

var _ BatchDetector = (*Auto)(nil)

// observe is Observe; hot tells that the window is in cache (see
// sortedWindow.evictFor).
func (a *Auto) observe(t int64, v float64, hot bool) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (a.hasLast && t <= a.last) {
		return notReady()
	}
	if d := uint64(t) - uint64(a.last); a.hasLast && d < uint64(a.ph.minStep) {
		a.ph.minStep = int64(d)
	}
	a.last, a.hasLast = t, true
	at := a.evictFor(t, v, hot)
	if a.past {
		a.forget(t)
	}
	if a.w.len() < a.minPoints {
		a.res.add(v)
		a.pushAt(t, v, at)
		a.hold = max(0, a.hold-1)
		if a.past {
			r := math.NaN()
			if a.ph.on() {
				r = a.ph.residual(&a.hist, t, v, a.period)
			}
			a.remember(t, v, r)
		}
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
	if a.hold == 0 && res.Score >= 1 && a.seenBefore(t, v, v >= m) {
		res.Score = refractoryCap
	}
	r := math.NaN()
	if a.ph.on() {
		var pres Result
		r = a.ph.score(&a.hist, t, v, a.period, a.res.step(), a.floor, &pres)
		if pres.Score > res.Score {
			res = pres
		}
	}
	if a.hold > 0 {
		a.hold--
		res.Score = min(res.Score, refractoryCap)
		res.Lower, res.Upper = math.NaN(), math.NaN()
	} else if res.Score >= 1 {
		a.hold = a.refractory
	}
	a.res.add(v)
	a.pushAt(t, v, at)
	if a.past {
		a.remember(t, v, r)
	}
	return res
}

// evictFor is the window's evictFor; the samples that leave the window
// stay in the history's tail.
func (a *Auto) evictFor(t int64, v float64, hot bool) int {
	n, head := a.w.n, a.w.head
	at := a.w.evictFor(t, v, hot)
	if a.past {
		for range n - a.w.n {
			a.hist.keep(a.w.vals[head], uint64(a.tol))
			if head++; head == len(a.w.vals) {
				head = 0
			}
		}
	}
	return at
}

// pushAt is the window's pushAt; the oldest sample, when a full window
// drops it, stays in the history's tail.
func (a *Auto) pushAt(t int64, v float64, at int) {
	if a.past && a.w.n == maxSortedWindow {
		a.hist.keep(a.w.vals[a.w.head], uint64(a.tol))
	}
	a.w.pushAt(t, v, at)
}

// forget drops from the history of the past-period tests what lies
// beyond the window as of t.
func (a *Auto) forget(t int64) {
	i := 0
	on := a.ph.on()
	reach := uint64(a.w.window) + uint64(a.tol)
	for i < a.hist.len() && uint64(t)-uint64(a.hist.time(i)) > reach {
		if on {
			a.ph.drop(a.hist.value(i), a.hr.at(i))
		}
		i++
	}
	a.hist.drop(i)
	if on {
		a.hr.drop(i)
	}
}

// remember adds (t, v), which the window has just taken, and, with the
// phase test on, its phase residual r (NaN when it has none) to the
// history of the past-period tests.
func (a *Auto) remember(t int64, v, r float64) {
	if a.hist.t.full() {
		c := a.historyRoom(t)
		a.hist.t.grow(c)
		if a.ph.on() {
			a.hr.grow(c)
		}
	}
	a.hist.t.push(t)
	if a.ph.on() {
		sr := storedResidual(r)
		a.hr.push(sr)
		a.ph.add(v, sr, &a.hist, &a.hr)
	}
}

// historyRoom returns the room for the full history to grow to before
// (t, ·) is added: see ringRoom, for a span of the window and the
// tolerance.
func (a *Auto) historyRoom(t int64) int {
	var oldest int64
	if a.hist.len() > 0 {
		oldest = a.hist.time(0)
	}
	return ringRoom(a.hist.len(), oldest, t, uint64(a.w.window)+uint64(a.tol))
}

// pastHist is the history of the past-period tests: the samples of the
// window and of the Tolerance before it, oldest first. It keeps their
// timestamps; their values it reads from the window, but for those that
// have left it, which it keeps in a tail of their own. The window's
// values are so held once, not twice.
type pastHist struct {
	t    ring[int64]   // the timestamps
	tail ring[float64] // the values of the oldest t.len() − w.len()
	w    *sortedWindow // the values of the others
}

// len returns the number of samples held.
func (h *pastHist) len() int { return h.t.len() }

// time returns the timestamp of the i-th oldest sample.
func (h *pastHist) time(i int) int64 { return h.t.at(i) }

// value returns the value of the i-th oldest sample.
func (h *pastHist) value(i int) float64 {
	if i < h.tail.len() {
		return h.tail.at(i)
	}
	w := h.w
	i += w.head - h.tail.len()
	if i >= len(w.vals) {
		i -= len(w.vals)
	}
	return w.vals[i]
}

// keep takes v, the value of the oldest sample of the window, which is
// leaving it; the tail holds reach ms of such samples.
func (h *pastHist) keep(v float64, reach uint64) {
	if n := h.tail.len(); h.tail.full() {
		h.tail.grow(ringRoom(n, h.t.at(0), h.t.at(n), reach))
	}
	h.tail.push(v)
}

// drop removes the k oldest samples, which have all left the window.
func (h *pastHist) drop(k int) {
	h.t.drop(k)
	h.tail.drop(k)
}

// ring is a FIFO of items in a circular array, which grows only when asked
// to (see Auto.historyRoom): a history that slides moves nothing and holds
// one array sized to what it holds.
type ring[T any] struct {
	buf  []T
	head int // index of the oldest item
	n    int // items held
}

// len returns the number of items held.
func (q *ring[T]) len() int { return q.n }

// full reports whether a push needs the ring to grow first.
func (q *ring[T]) full() bool { return q.n == len(q.buf) }

// at returns the i-th oldest item; 0 ≤ i < len().
func (q *ring[T]) at(i int) T {
	i += q.head
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	return q.buf[i]
}

// push appends x; the ring must not be full.
func (q *ring[T]) push(x T) {
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = x
	q.n++
}

// drop removes the k oldest items; k ≤ len().
func (q *ring[T]) drop(k int) {
	q.n -= k
	if q.head += k; q.head >= len(q.buf) {
		q.head -= len(q.buf)
	}
	if q.n == 0 {
		q.head = 0
	}
}

// grow makes room for c ≥ len() items, unwrapping the ring.
func (q *ring[T]) grow(c int) {
	nb := make([]T, max(c, q.n))
	k := copy(nb, q.buf[q.head:min(q.head+q.n, len(q.buf))])
	copy(nb[k:], q.buf[:q.n-k])
	q.buf, q.head = nb, 0
}

// seenBefore reports whether a past period reached v or beyond (above
// when up) within the tolerance of t's phase.
func (a *Auto) seenBefore(t int64, v float64, up bool) bool {
	if !a.past {
		return false
	}
	h := &a.hist
	for j := int64(1); ; j++ {
		at := t - j*a.period
		if at > t || h.len() == 0 || at+a.tol < h.time(0) {
			return false
		}
		for k := searchTime(h, at-a.tol); k < h.len() && h.time(k) <= at+a.tol; k++ {
			if x := h.value(k); up && x >= v || !up && x <= v {
				return true
			}
		}
	}
}

// searchTime returns the index of the first sample of h at or after t.
func searchTime(h *pastHist, t int64) int {
	return sort.Search(h.len(), func(i int) bool { return h.time(i) >= t })
}

// normQuantile returns Φ⁻¹(p), the p-quantile of the standard normal.
func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
