package forecasting

import (
	"fmt"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// tracker runs a model over a stream, keeping its forecasts from the last H
// origins so that each new sample scores them: the error at a knot lead
// feeds that lead's calibration window (see leadKnots). A window takes the
// error of every origin until it holds dense of them, then of one origin
// in every two, three, … up to one in stride, thinning what it holds each
// time, and then grows to its size: a full window spans its calibration's
// origins in at most maxWindowErrors errors whatever the step, and a
// short history calibrates on its errors at every origin as soon as a
// longer step would.
type tracker struct {
	m       model
	h       int
	clip    bool
	knots   []int     // the leads with a calibration window, ascending
	stride  int       // the most origins a window has per error it keeps
	minute  int       // the steps of a minute: below that stride a window thins at dense
	dense   int       // the errors a window holds before it moves to a longer stride
	keep    int       // the fewest errors a window is thinned to
	cur     []float64 // the H forecasts from the latest origin
	preds   []float64 // H rows of the knots' forecasts; row o%H holds origin o
	origin  int
	win     []*errWindow // win[i] calibrates lead knots[i]
	strides []int        // win[i] keeps the errors of the origins that are multiples of strides[i]
	record  bool         // keep a copy of every row predicted in rows
	rows    [][]float64  // the forecasts from each origin, in order
}

// calibration is how a tracker keeps errors: windows at lead 1, every
// minute-th lead and the horizon, of up to size errors, from every origin
// until they hold dense, then thinned (to no fewer than keep) each time
// they hold dense again until they keep one origin's in every minute, and
// then each time they are full until they keep one in every stride.
type calibration struct{ size, stride, minute, dense, keep int }

// newTracker returns a tracker of m over h leads that keeps errors as c
// says.
func newTracker(m model, h int, c calibration, clip bool) *tracker {
	k := newTrackerState(m, h, c, clip)
	k.predictRow()
	return k
}

// newTrackerState returns a tracker with empty windows and no forecast.
func newTrackerState(m model, h int, c calibration, clip bool) *tracker {
	knots := leadKnots(h, c.minute)
	k := &tracker{m: m, h: h, clip: clip, knots: knots, stride: c.stride, minute: c.minute, dense: c.dense, keep: c.keep,
		cur: make([]float64, h), preds: make([]float64, h*len(knots)),
		win: make([]*errWindow, len(knots)), strides: make([]int, len(knots))}
	for i := range k.win {
		k.win[i] = newErrWindow(c.size)
		k.strides[i] = 1
	}
	return k
}

// reserve makes room in the calibration windows for the errors the next
// m targets bring (lead l's gets up to m − l + 1 of them, and a full
// window's worth as the updates come); with a stride above 1, for the
// dense errors only, since thinning keeps fewer.
func (k *tracker) reserve(m int) {
	if k.stride > 1 {
		m = min(m, k.dense)
	}
	for _, w := range k.win {
		w.reserve(m)
	}
}

// score gives window i the error e of the forecast from origin o, if the
// window keeps that origin's: a window whose stride is below the tracker's
// and that is full, or holds dense errors at a stride below a minute of
// steps, moves to the next stride (the least multiple of its stride that
// divides the tracker's) at the first origin that is a multiple of it,
// keeping one in every so many of the errors it holds, unless that would
// leave it fewer than keep. So windows span about as much time at every
// step: dense errors within a minute of origins, then up to size of them
// at one a minute, then thinned as they fill.
func (k *tracker) score(i, o int, e float64) {
	s, w := k.strides[i], k.win[i]
	if o%s != 0 {
		return
	}
	if (w.len() >= k.dense && s < k.minute || w.full()) && s < k.stride {
		next := s + s
		for k.stride%next != 0 {
			next += s
		}
		if o%next == 0 && w.len()/(next/s) >= k.keep {
			w.thin(next / s)
			k.strides[i] = next
		}
	}
	w.push(e)
}

// row returns the knots' forecasts from origin o, one of the last H.
func (k *tracker) row(o int) []float64 {
	r, n := o%k.h, len(k.knots)
	return k.preds[r*n : (r+1)*n]
}

// store keeps the knots' forecasts of the H forecasts p from origin o.
func (k *tracker) store(o int, p []float64) {
	r := k.row(o)
	for i, l := range k.knots {
		r[i] = p[l-1]
	}
}

func (k *tracker) predictRow() {
	p := k.cur
	k.m.predict(p)
	for i, v := range p {
		if k.clip {
			v = clip0(v)
		}
		if !num.Finite(v) {
			// A model that diverged forecasts the last value instead.
			v = p[0]
			if !num.Finite(v) {
				v = 0
			}
		}
		p[i] = v
	}
	k.store(k.origin, p)
	if k.record {
		k.rows = append(k.rows, append([]float64(nil), p...))
	}
}

// current returns the forecasts from the latest origin.
func (k *tracker) current() []float64 { return k.cur }

// observe scores the earlier forecasts against y, then feeds y to the model
// and forecasts from it. A NaN y is a gap: the model gets its own one-step
// forecast and nothing is scored.
func (k *tracker) observe(y float64) {
	if math.IsNaN(y) {
		y = k.cur[0]
	} else {
		for i, l := range k.knots {
			o := k.origin + 1 - l
			if o < 0 {
				break
			}
			k.score(i, o, y-k.row(o)[i])
		}
	}
	k.origin++
	k.m.update(y)
	k.predictRow()
}

// candidates lists the models auto chooses among, primary ones (seasonal)
// first; positive tells whether every value seen is positive.
func candidates(positive bool) (primary, guards []string) {
	primary = []string{ModelHWAddDamped, ModelHWLog, ModelRobust, ModelSeasonalNaive}
	if positive {
		primary = append(primary, ModelHWMulDamped)
	}
	// The weekly models last: refit offers them only when the history
	// holds two weeks and a validation window.
	primary = append(primary, ModelHWWeekly, ModelHWWeeklyLog)
	return primary, guardModels
}

// guardModels are the candidates auto always validates besides the
// seasonal ones: the last value and exponential smoothing.
var guardModels = []string{ModelNaive, ModelSES}

// autoCandidates lists the candidates auto validates on n points of
// history: the primary ones that leave at least minValidationPoints (and
// two horizons) of it to validate on after their need, then the guards;
// none when no primary one is possible.
func autoCandidates(n, p, h int, positive bool) []string {
	vmin := max(minValidationPoints, 2*h)
	primary, guards := candidates(positive)
	var names []string
	for _, name := range primary {
		m, _ := newModel(name, p, h)
		if n-m.need() >= vmin {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		names = append(names, guards...)
	}
	return names
}

// refit fits the model (or, for auto, each candidate) on all but the last
// V samples of the history and replays those V samples to collect
// out-of-sample errors; auto keeps the candidate with the lowest mean
// absolute error at the horizon over the origins they share. The winner's
// state and errors carry on.
func (f *Forecaster) refit() error {
	raw := f.history()
	n, p, h := len(raw), f.opts.Period, f.opts.Horizon
	vmin := max(minValidationPoints, 2*h)
	positive := true
	for _, v := range raw {
		if num.Finite(v) && v <= 0 {
			positive = false
			break
		}
	}
	var names []string
	auto := f.opts.Model == ModelAuto
	// The candidates are those MaxHistory points allow: the room a
	// refit has beyond it (see room) adds to what they are fitted and
	// validated on, not to which models a series may hold.
	held := min(n, f.opts.MaxHistory)
	switch {
	case auto && f.opts.Candidates != nil:
		for _, name := range f.opts.Candidates {
			if held >= f.candidateNeed(name, false) {
				names = append(names, name)
			}
		}
		if first := f.opts.Candidates[0]; len(names) == 0 && held >= f.candidateNeed(first, true) {
			names = []string{first}
		}
	case auto:
		names = autoCandidates(held, p, h, positive)
	default:
		m, _ := newModel(f.opts.Model, p, h)
		if n >= m.need() {
			names = []string{f.opts.Model}
		}
	}
	f.fallback, f.need = "", 0
	lead := h // the lead the candidates are judged at
	if len(names) == 0 {
		need := 0
		switch {
		case auto && f.opts.Candidates != nil:
			need = f.candidateNeed(f.opts.Candidates[0], true)
			for _, name := range f.opts.Candidates[1:] {
				need = min(need, f.candidateNeed(name, false))
			}
		case auto:
			need = p + vmin // the robust model's, the first to become possible
		default:
			m, _ := newModel(f.opts.Model, p, h)
			need = m.need()
		}
		// Without a season: the last value, exponential smoothing or the
		// mean of what there is, chosen on the recent origins when there
		// are enough of them. A history too short to score the horizon
		// is judged at the longest lead it can score on as many origins
		// again (at least fallbackLead steps, or the horizon when that is
		// shorter), so a long horizon does not leave the first of a
		// series to the last value and an interval no error calibrates.
		lead = max(1, min(h, (n-3)/2))
		names = []string{ModelNaive}
		if lead >= min(h, fallbackLead) {
			names = []string{ModelNaive, ModelSES, ModelMean}
		}
		f.need = need
		f.fallback = fmt.Sprintf("%s needs %d points of history (%v at %v steps), have %d: using ",
			f.opts.Model, need, time.Duration(need)*f.opts.Step, f.opts.Step, n)
	}

	var vals []*validation
	from := 0
	var firstErr error
	for _, name := range names {
		inner, _ := newModel(name, p, h)
		m := &bounded{model: inner}
		v := min(f.opts.CalibrationSize, n-m.need())
		if len(names) == 1 && v < vmin || f.fallback != "" && v < 2*lead {
			v = 0 // nothing to compare; fit on everything
		}
		if err := m.fit(fillGaps(raw[:n-v], p)); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		tr := newTracker(m, h, f.opts.calibration(), !f.opts.AllowNegative)
		tr.reserve(v)
		tr.record = true
		tr.rows = [][]float64{append([]float64(nil), tr.current()...)}
		for _, y := range raw[n-v:] {
			tr.observe(y)
		}
		tr.record = false
		vals = append(vals, &validation{tr: tr, start: n - v - 1, rows: tr.rows})
		tr.rows = nil
		from = max(from, n-v-1)
	}
	if len(vals) == 0 {
		return fmt.Errorf("fitting forecaster: %w", firstErr)
	}
	// While falling back (no seasonal candidate) every choice is on the
	// evidence alone; otherwise a choice on less than a period of origins
	// (or the calibration window, when shorter) must be clear.
	thin := 0
	if f.fallback == "" {
		thin = min(p, f.opts.CalibrationSize)
	}
	f.tr = choose(vals, raw, from, h, lead, f.opts.calibration(), thin, !f.opts.AllowNegative)
	if f.fallback != "" {
		f.fallback += f.tr.m.name()
	}
	f.sigma0 = diffRMS(raw)
	f.sinceFit = 0
	f.fitted = true
	return nil
}

// candidateNeed is the history at which auto offers one of the given
// Candidates: its model's need plus the origins it is judged on — a period
// (or the calibration window, when shorter), so a seasonal model is not
// chosen on a few hours that happen to suit it; alone, the first (the
// baseline) is offered once it leaves the least validation, until another
// can be judged.
func (f *Forecaster) candidateNeed(name string, alone bool) int {
	p, h := f.opts.Period, f.opts.Horizon
	m, _ := newModel(name, p, h)
	v := max(minValidationPoints, 2*h)
	if !alone {
		v = max(v, min(p, f.opts.CalibrationSize))
	}
	return m.need() + v
}

// fillGaps returns x with each NaN replaced by the value one period back
// when that is finite, else by the last finite value (x[0] is finite).
func fillGaps(x []float64, period int) []float64 {
	out := make([]float64, len(x))
	last := 0.0
	for i, v := range x {
		if !num.Finite(v) {
			v = last
			if i >= period && num.Finite(out[i-period]) {
				v = out[i-period]
			}
		}
		out[i] = v
		last = v
	}
	return out
}

// diffRMS is the root mean square of the first differences of the finite
// neighbours in x, a scale for one-step errors before any are measured; 1
// when there are none.
func diffRMS(x []float64) float64 {
	var s float64
	var n int
	for i := 1; i < len(x); i++ {
		if num.Finite(x[i]) && num.Finite(x[i-1]) {
			d := x[i] - x[i-1]
			s += d * d
			n++
		}
	}
	if n == 0 || s == 0 {
		return 1
	}
	return math.Sqrt(s / float64(n))
}
