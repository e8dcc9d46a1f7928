package analysis

import (
	"cmp"
	"fmt"
	"math"
)

// Defaults of LevelShiftConfig.
const (
	DefaultLevelShiftDrift     = 0.5
	DefaultLevelShiftH         = 5.0
	DefaultLevelShiftMinPoints = 10
)

// LevelShiftConfig configures a LevelShift detector. Zero fields take their
// defaults.
type LevelShiftConfig struct {
	// Window is the span of history, in milliseconds, of the baseline the
	// samples are standardised against. It must be > 0.
	Window int64
	// Drift is the CUSUM allowance κ, in robust standard deviations: the
	// half-size of the shift the detector is tuned to (default 0.5).
	Drift float64
	// H is the CUSUM decision threshold in robust standard deviations
	// (default 5).
	H float64
	// MinPoints is how many samples the baseline must hold before the
	// detector judges (default 10, at least 2).
	MinPoints int
	// Floor is the smallest spread relative to the baseline median's
	// magnitude (default 0.001), as in RobustConfig.
	Floor float64
	// Quiet is how many samples in a row must score below 1 after an
	// alarm before the next alarm (default DefaultQuiet; negative: none).
	Quiet int
}

// LevelShift is the streaming CUSUM detector of a sustained change of level
// or of variance in one series: the throughput that drops by a third after a
// rollout and stays there, which a spike detector sees only as one more
// sample inside a widening band.
//
// Each sample (t, x) is standardised against the baseline of the samples in
// [t−Window, t): z = (x − m)/s_eff with m the median and s_eff the spread of
// Robust. With c = H/2 the clip that keeps one spike from looking
// sustained, three cumulative sums run (Page's CUSUM):
//
//	up   = max(0, up   + min(z, c)  − Drift)         level rises
//	down = max(0, down − max(z, −c) − Drift)         level falls
//	vari = max(0, vari + 3/8·min(z², c²) − ln 2)     variance grows ×4
//
// (the last is the log-likelihood ratio of N(0, 4) against N(0, 1)).
// Score = max(up, down, vari)/H. Because a single sample adds at most c,
// an alarm needs at least three samples in a row beyond the allowance.
// When the score reaches 1 the detector has found a change point: it
// reports it, then forgets the baseline and the sums and learns the new
// regime from scratch (not Ready until MinPoints samples), so one shift
// raises one alarm. The spread s_eff is Robust's, with its floors (the
// central 90% of the baseline and the series' resolution), so a baseline
// relearnt from a few samples of a near-constant series does not make
// every later wiggle a shift. As in Robust, the next alarm needs Quiet
// samples in a row below 1 first: until then scores are capped at 0.99,
// and a capped score is no change point (the sums keep running on the
// same baseline).
//
// Expected is m; [Lower, Upper] is the band of values that keep the score
// below 1 given the sums so far, NaN while the sums already hold H. The
// stream rules of Sigma apply.
//
// A LevelShift is not safe for concurrent use.
type LevelShift struct {
	floor     float64
	minPoints int
	w         sortedWindow
	res       resolution
	gate      rearm
	c         cusum
	last      int64
	hasLast   bool
}

var _ Detector = (*LevelShift)(nil)

// NewLevelShift returns a detector with c's zero fields set to their
// defaults. It panics when c is invalid; Build returns errors instead.
func NewLevelShift(c LevelShiftConfig) *LevelShift {
	c.Drift = cmp.Or(c.Drift, DefaultLevelShiftDrift)
	c.H = cmp.Or(c.H, DefaultLevelShiftH)
	c.MinPoints = cmp.Or(c.MinPoints, DefaultLevelShiftMinPoints)
	c.Floor = cmp.Or(c.Floor, DefaultRobustFloor)
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	switch {
	case c.Window <= 0:
		panic(fmt.Sprintf("analysis.NewLevelShift: Window must be > 0 ms, got %d", c.Window))
	case !(c.Drift > 0) || math.IsInf(c.Drift, 0):
		panic(fmt.Sprintf("analysis.NewLevelShift: Drift must be a finite number > 0, got %v", c.Drift))
	case !(c.H > 0) || math.IsInf(c.H, 0):
		panic(fmt.Sprintf("analysis.NewLevelShift: H must be a finite number > 0, got %v", c.H))
	case c.MinPoints < 2:
		panic(fmt.Sprintf("analysis.NewLevelShift: MinPoints must be ≥ 2, got %d", c.MinPoints))
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		panic(fmt.Sprintf("analysis.NewLevelShift: Floor must be a finite number ≥ 0, got %v", c.Floor))
	}
	return &LevelShift{floor: c.Floor, minPoints: c.MinPoints, w: sortedWindow{window: c.Window}, c: newCusum(c.Drift, c.H), gate: newRearm(c.Quiet)}
}

// Observe scores (t, v) and then adds it to the baseline.
func (l *LevelShift) Observe(t int64, v float64) Result { return l.observe(t, v, false) }

// ObserveBatch scores a run of samples of the series, exactly as one
// Observe per sample does (see BatchDetector).
func (l *LevelShift) ObserveBatch(t []int64, v []float64, out []Result) {
	observeWarm(t, v, out, l.observe)
}

var _ BatchDetector = (*LevelShift)(nil)

// observe is Observe; hot tells that the window is in cache (see
// sortedWindow.evictFor).
func (l *LevelShift) observe(t int64, v float64, hot bool) Result {
	if math.IsNaN(v) || math.IsInf(v, 0) || (l.hasLast && t <= l.last) {
		return notReady()
	}
	l.last, l.hasLast = t, true
	l.res.add(v)
	at := l.w.evictFor(t, v, hot)
	if l.w.len() < l.minPoints {
		l.c.reset()
		l.w.pushAt(t, v, at)
		return notReady()
	}
	m := l.w.median()
	s := robustSpread(max(windowSpread(&l.w, m), l.res.step()), m, l.floor)
	zlo, zhi := l.c.band()
	res := Result{Expected: m, Lower: clampInf(m - zlo*s), Upper: clampInf(m + zhi*s), Ready: true}
	if zlo < 0 || zhi < 0 { // the sums already hold H: a quiet period
		res.Lower, res.Upper = math.NaN(), math.NaN()
	}
	res.Score = l.gate.pass(l.c.step((v - m) / s))
	if res.Score >= 1 {
		// A change point: learn the new regime from this sample on.
		l.c.reset()
		l.w.clear()
		at = 0
	}
	l.w.pushAt(t, v, at)
	return res
}

// cusum holds the three cumulative sums of LevelShift over standardised
// samples z.
type cusum struct {
	drift, h, clip float64
	up, down, vari float64
}

// The weights of the variance CUSUM: the log-likelihood ratio of N(0, 4)
// against N(0, 1) is 3/8·z² − ln 2.
const (
	variGain = 3.0 / 8
	variCost = math.Ln2
)

func newCusum(drift, h float64) cusum { return cusum{drift: drift, h: h, clip: h / 2} }

func (c *cusum) reset() { c.up, c.down, c.vari = 0, 0, 0 }

// step adds z and returns max(up, down, vari)/H.
func (c *cusum) step(z float64) float64 {
	zc := max(-c.clip, min(c.clip, z)) // also maps ±Inf to the clip
	c.up = max(0, c.up+zc-c.drift)
	c.down = max(0, c.down-zc-c.drift)
	c.vari = max(0, c.vari+variGain*zc*zc-variCost)
	return max(c.up, c.down, c.vari) / c.h
}

// band returns how far below and above 0 the next z may fall and keep
// every sum below H (+Inf when no single sample can reach H that way):
// up + z − Drift < H  ⇔  z < H − up + Drift, likewise down, and
// vari + 3/8·z² − ln 2 < H  ⇔  |z| < √((H − vari + ln 2)/(3/8)).
func (c *cusum) band() (lo, hi float64) {
	reach := func(z float64) float64 {
		if z > c.clip { // clipped: no single sample gets there
			return math.Inf(1)
		}
		return z
	}
	vz := reach(math.Sqrt((c.h - c.vari + variCost) / variGain))
	return min(reach(c.h-c.down+c.drift), vz), min(reach(c.h-c.up+c.drift), vz)
}
