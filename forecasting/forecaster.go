package forecasting

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// Options configure a [Forecaster]. Only Step is required; New fills the
// rest with the defaults documented on each field.
type Options struct {
	// Step is the spacing of the samples. Required.
	Step time.Duration
	// Model is one of [Models]; "auto" (the default) picks per series.
	Model string
	// Candidates, when set, are the models auto chooses among, in order
	// of preference: of two that forecast equally well the earlier is
	// kept. Default: the seasonal models, with naive and ses as guards.
	Candidates []string
	// Horizon is the number of steps forecast; default 10.
	Horizon int
	// Level is the coverage of the prediction interval, in (0, 1);
	// default 0.9.
	Level float64
	// PlanLevels are further levels, each in (0, 1), at which a forecast
	// also carries the upper end of the interval (Forecast.Plans): the
	// (1+level)/2 quantile of the same calibration errors, or the same
	// σ√h band at that level's normal quantile. A scale rule plans with
	// the upper end at its own level while Level stays the coverage of
	// the interval published. None by default.
	PlanLevels []float64
	// Period is the seasonal period in steps; default one day (24h/Step).
	Period int
	// CalibrationSize is how many recent origins' out-of-sample errors
	// calibrate the interval at each lead; default one period of origins,
	// at least 200 and at most 2880. At most 65,536. Once a window holds
	// four times MinCalibration errors it keeps those of one origin in
	// every stride: the steps of a minute (rounded down), or more where
	// that would keep more than 360 errors (CalibrationSize/360, rounded
	// up: see originStride), so it holds up to CalibrationSize/stride of
	// them (at least MinCalibration) whatever the step. At steps shorter
	// than a minute only lead 1, the leads at 1, 2, 3, 5, 8, 12, … minutes
	// (each count half as large again as the one before) and Horizon keep
	// errors: the leads between take their interval from the two nearest
	// that do, by linear interpolation (see leadKnots).
	CalibrationSize int
	// MinCalibration is how many errors a lead needs before its interval
	// comes from their empirical quantiles instead of a scaled σ√h;
	// default 30.
	MinCalibration int
	// MaxHistory is how many recent points Fit uses and a compaction of
	// the history keeps for refits (see [Forecaster.Refit]); default
	// seven periods, and at least two periods plus CalibrationSize; with
	// Weekly, fourteen periods plus CalibrationSize.
	MaxHistory int
	// Weekly keeps enough history for the weekly models (hw_weekly,
	// hw_weekly_log: a daily and a weekly season of seven periods), which
	// need two weeks of it: MaxHistory defaults to two weeks plus
	// CalibrationSize, so auto validates them on CalibrationSize origins
	// once the series has that much history. Off by default, since it
	// doubles the samples a series keeps (4 bytes each, up to twice
	// MaxHistory of them between compactions: about 170 KB a series at
	// one-minute steps against 80 KB). Naming a weekly model sets it.
	// Whatever MaxHistory is, auto offers the weekly models only when the
	// history holds two weeks and a validation window.
	Weekly bool
	// RefitEvery is how many updates after a fit [Forecaster.RefitDue]
	// reports true; default one period (while falling back for lack of
	// history: Horizon updates, at least 10).
	RefitEvery int
	// MaxGap is the longest run of missing steps Update fills with the
	// model's own forecast; a longer gap asks for a new Fit. Default one
	// period.
	MaxGap int
	// AllowNegative keeps negative forecasts; by default the series is a
	// rate or a count and forecasts are clipped at zero.
	AllowNegative bool
}

func (o *Options) setDefaults() error {
	if o.Step <= 0 {
		return fmt.Errorf("forecasting options: step must be positive, got %v", o.Step)
	}
	if o.Model == "" {
		o.Model = defaultModel
	}
	if o.Model != ModelAuto {
		if _, err := newModel(o.Model, 2, 1); err != nil {
			return fmt.Errorf("forecasting options: %w", err)
		}
	}
	for _, name := range o.Candidates {
		if name == ModelAuto {
			return errors.New("forecasting options: auto cannot be one of auto's candidates")
		}
		if _, err := newModel(name, 2, 1); err != nil {
			return fmt.Errorf("forecasting options: candidates: %w", err)
		}
	}
	o.Horizon = cmp.Or(o.Horizon, 10)
	if o.Horizon < 1 {
		return fmt.Errorf("forecasting options: horizon must be at least 1 step, got %d", o.Horizon)
	}
	o.Level = cmp.Or(o.Level, 0.9)
	if !(o.Level > 0 && o.Level < 1) {
		return fmt.Errorf("forecasting options: level must be in (0, 1), got %g", o.Level)
	}
	for _, l := range o.PlanLevels {
		if !(l > 0 && l < 1) {
			return fmt.Errorf("forecasting options: plan level must be in (0, 1), got %g", l)
		}
	}
	o.Period = cmp.Or(o.Period, int(24*time.Hour/o.Step))
	if o.Period < 2 {
		return fmt.Errorf("forecasting options: period must be at least 2 steps, got %d (step %v)", o.Period, o.Step)
	}
	o.CalibrationSize = cmp.Or(o.CalibrationSize, min(max(o.Period, 200), 2880))
	o.MinCalibration = cmp.Or(o.MinCalibration, 30)
	if o.CalibrationSize > maxErrWindow {
		return fmt.Errorf("forecasting options: calibration size %d is above the most of %d errors", o.CalibrationSize, maxErrWindow)
	}
	if o.CalibrationSize < o.MinCalibration {
		return fmt.Errorf("forecasting options: calibration size %d is below the minimum of %d errors", o.CalibrationSize, o.MinCalibration)
	}
	weeklyModel := o.Model == ModelHWWeekly || o.Model == ModelHWWeeklyLog
	o.Weekly = o.Weekly || weeklyModel
	if o.MaxHistory == 0 {
		o.MaxHistory = max(7*o.Period, 2*o.Period+o.CalibrationSize)
		if o.Weekly {
			o.MaxHistory = 2*daysPerWeek*o.Period + o.CalibrationSize
		}
	}
	if need := 2 * daysPerWeek * o.Period; weeklyModel && o.MaxHistory < need {
		return fmt.Errorf("forecasting options: model %s needs two weeks of history, %d points, but MaxHistory keeps %d; raise it or leave it 0 for the default", o.Model, need, o.MaxHistory)
	}
	o.RefitEvery = cmp.Or(o.RefitEvery, o.Period)
	o.MaxGap = cmp.Or(o.MaxGap, o.Period)
	return nil
}

// calibration returns how a tracker keeps errors for o: a window at lead
// 1, at the leads of leadKnots and at Horizon, each of the errors of
// one origin in every originStride of CalibrationSize (at least
// MinCalibration of them), taking every origin's until it holds four
// times MinCalibration (then one a minute's, then fewer once full) and
// never thinned below MinCalibration.
func (o *Options) calibration() calibration {
	s := originStride(o.Step, o.CalibrationSize)
	size := max((o.CalibrationSize+s-1)/s, o.MinCalibration)
	return calibration{size: size, stride: s, minute: minuteSteps(o.Step), dense: min(size, 4*o.MinCalibration), keep: o.MinCalibration}
}

// Forecast is the outlook from one origin. Slices are indexed by lead − 1.
type Forecast struct {
	// Model is the model that made the forecast.
	Model string
	// Fallback is empty when the requested model made the forecast, and
	// otherwise says why it could not and what was used instead.
	Fallback string
	// Need is the number of points of history the requested model needs;
	// set with Fallback.
	Need int
	// Origin is the time of the last observation used, in unix ms.
	Origin int64
	Step   time.Duration
	Level  float64
	// Mean, Lower and Upper are the point forecast and the prediction
	// interval at Level for leads 1..H.
	Mean, Lower, Upper []float64
	// Empirical[h−1] tells whether the interval at lead h comes from
	// empirical error quantiles (true) or a scaled σ√h (false).
	Empirical []bool
	// Plans are the upper ends of the interval at each of
	// Options.PlanLevels, for leads 1..H, as Upper is at Level.
	Plans []PlanUpper
	// Peak is the largest mean over the horizon, at PeakLead; UpperPeak
	// is the largest upper bound.
	Peak      float64
	PeakLead  int
	UpperPeak float64
	// Gaps counts the missing or non-finite samples filled since Fit
	// (leading ones in the fitted data are dropped and counted too).
	Gaps int
}

// PlanUpper is the upper end of the prediction interval at Level for
// leads 1..H.
type PlanUpper struct {
	Level float64
	Upper []float64
}

// ErrGap is returned by Update when a gap is longer than Options.MaxGap.
var ErrGap = errors.New("gap too long to fill")

// Forecaster is the streaming state of one series: Fit it on history, then
// Update it with each new sample in O(1) and read Forecast; call Refit when
// RefitDue. A Forecaster is not safe for concurrent use.
type Forecaster struct {
	opts Options
	z    float64 // normal quantile for the σ√h fallback

	tr       *tracker
	fallback string
	need     int
	sigma0   float64 // one-step scale from the history, for cold intervals

	hist     []float32 // recent raw samples (NaN for gaps), for refits: see sample
	newest   float64   // the newest of them as it came (NaN for a gap)
	t0       int64     // time of the sample at index 0
	last     int64     // index of the last sample
	gaps     int
	sinceFit int
	fitted   bool
	// outage is set while the last sample is a zero that the lead-1
	// interval ruled out, or a zero following one: a series that stopped.
	outage bool
}

// New returns a Forecaster for opts, with defaults filled in.
func New(opts Options) (*Forecaster, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	return &Forecaster{opts: opts, z: normalQuantile(opts.Level)}, nil
}

// Options returns the options with defaults filled in.
func (f *Forecaster) Options() Options { return f.opts }

// Fit replaces the state with one fitted on data, whose first sample is at
// t0 (unix ms) and whose samples are Step apart; NaN and ±Inf are gaps. Only
// the last MaxHistory samples are used. With too little history for the
// requested model it falls back (see Forecast.Fallback) and returns nil; it
// returns an error only when data has no finite sample.
func (f *Forecaster) Fit(t0 int64, data []float64) error {
	first := -1
	for i, v := range data {
		if num.Finite(v) {
			first = i
			break
		}
	}
	if first < 0 {
		return fmt.Errorf("fitting forecaster: none of %d samples is finite; need at least 1", len(data))
	}
	f.gaps = first
	if n := len(data); n == 0 || data[n-1] != 0 {
		f.outage = false
	}
	data = data[first:]
	cut := max(len(data)-f.opts.MaxHistory, 0)
	f.hist = slices.Grow(f.hist[:0], len(data)-cut)
	for _, v := range data[cut:] {
		if !num.Finite(v) {
			f.gaps++
		}
		f.hist = append(f.hist, sample(v))
		f.newest = v
	}
	if !num.Finite(f.newest) {
		f.newest = math.NaN()
	}
	f.t0 = t0 + int64(first+cut)*f.opts.Step.Milliseconds()
	f.last = int64(len(f.hist) - 1)
	return f.refit()
}

// Refit refits the model on the kept history, choosing again among the
// candidates when the model is auto. Updates add to the history until it
// holds twice MaxHistory samples (an eighth more when MaxHistory is
// shorter than two periods: see room), then it is compacted back to the
// last MaxHistory, so a refit sees from MaxHistory to twice as many (Fit
// sees at most MaxHistory) and a series holds no more than that however
// long it runs; the models a refit chooses among are those MaxHistory
// samples allow. That room pays: on three weeks of per-minute counts (mean 300,
// the m-large daily shape) fed to a Forecaster fitted on the first,
// refits on exactly the last MaxHistory scored an MAE at lead 10 0.5–0.7 %
// higher, and −0.2 to +3.3 % with weekends 40 % quieter; with a room of
// an eighth, the scale signal of the shared trace of m-large's second
// client at a 5-minute start-up was short 0.77 times as often as the HPA
// of its cost, against 0.70 with this room (see docs/scale-frontier.md).
func (f *Forecaster) Refit() error {
	if len(f.hist) == 0 {
		return errors.New("refitting forecaster: Fit was never called")
	}
	return f.refit()
}

// RefitDue reports whether Options.RefitEvery updates have passed since the
// last fit (or, while falling back for lack of history, Horizon updates,
// so the requested model takes over soon after it can).
func (f *Forecaster) RefitDue() bool {
	if f.fallback != "" {
		return f.sinceFit >= max(f.opts.Horizon, 10)
	}
	return f.sinceFit >= f.opts.RefitEvery
}

// Update adds the sample at time t (unix ms), which must come after the last
// one. Missing steps before it and a non-finite y are gaps: the model takes
// its own one-step forecast in their place and no error is recorded for
// them. A gap longer than Options.MaxGap returns an error wrapping ErrGap
// and changes nothing: Fit again. Between refits Update costs O(H) plus the
// calibration bookkeeping, independent of the history length.
func (f *Forecaster) Update(t int64, y float64) error {
	idx, err := f.next("updating forecaster", t)
	if err != nil {
		return err
	}
	if missing := idx - f.last - 1; missing > int64(f.opts.MaxGap) {
		return fmt.Errorf("updating forecaster: %d steps missing before %d ms, more than the %d allowed: %w", missing, t, f.opts.MaxGap, ErrGap)
	}
	for f.last < idx-1 {
		f.push(math.NaN())
	}
	f.push(y)
	return nil
}

// FitAfterGap fits the forecaster again after Update returned ErrGap for
// y at t (unix ms): on the samples it holds at times after from (unix ms;
// math.MinInt64 for all of them) from the first finite one on, the
// missing steps up to t and y, as a new Forecaster's Fit on those samples
// would, so a caller need not keep the history beside it. The samples held are the
// float32s a Refit reads too (see sample); only the newest is exact.
func (f *Forecaster) FitAfterGap(from, t int64, y float64) error {
	idx, err := f.next("fitting forecaster after a gap", t)
	if err != nil {
		return err
	}
	stepMs := f.opts.Step.Milliseconds()
	base := f.last - int64(len(f.hist)-1) // the index of hist[0]
	start := len(f.hist)
	for i := range f.hist {
		if f.t0+(base+int64(i))*stepMs > from && num.Finite(f.sampleAt(i)) {
			start = i
			break
		}
	}
	if start == len(f.hist) {
		f.outage = false
		return f.Fit(t, []float64{y})
	}
	first := base + int64(start)
	data := make([]float64, idx-first+1)
	for i := range data {
		data[i] = math.NaN()
	}
	for i := start; i < len(f.hist); i++ {
		data[base+int64(i)-first] = f.sampleAt(i)
	}
	data[len(data)-1] = y
	f.outage = false // the one state Fit carries over
	return f.Fit(f.t0+first*stepMs, data)
}

// next returns the index of a new sample at t (unix ms), or an error that
// begins with op when Fit was never called or t is not after the last
// sample.
func (f *Forecaster) next(op string, t int64) (int64, error) {
	if !f.fitted {
		return 0, fmt.Errorf("%s: Fit was never called", op)
	}
	stepMs := f.opts.Step.Milliseconds()
	idx := f.indexOf(t, stepMs)
	if idx <= f.last {
		return 0, fmt.Errorf("%s: sample at %d ms is not after the last one at %d ms", op, t, f.t0+f.last*stepMs)
	}
	return idx, nil
}

func (f *Forecaster) indexOf(t, stepMs int64) int64 {
	d := t - f.t0
	if d < 0 {
		return -1 - (-d)/stepMs
	}
	return (d + stepMs/2) / stepMs
}

func (f *Forecaster) push(y float64) {
	f.last++
	f.sinceFit++
	if !num.Finite(y) {
		y = math.NaN()
		f.gaps++
	}
	if f.fitted {
		// A zero more than twice as far below the forecast made for it
		// as the lower bound of its interval starts an outage; the zeros
		// after it continue it.
		lo := f.tr.current()[0] - 2*f.z*f.sigma0
		if w := f.tr.win[0]; w.len() >= f.opts.MinCalibration {
			lo = f.tr.current()[0] + 2*w.quantile((1-f.opts.Level)/2)
		}
		f.outage = y == 0 && (f.outage || lo > 0)
	}
	f.tr.observe(y)
	// Keep MaxHistory samples, compacting once the slice holds room()
	// (twice as many, or an eighth more), so a push is O(1) amortised; its
	// array grows by eighths to that size.
	if room := f.room(); len(f.hist) >= room {
		n := copy(f.hist, f.hist[len(f.hist)-f.opts.MaxHistory+1:])
		f.hist = f.hist[:n]
	}
	f.hist = append(grown(f.hist, f.room()), sample(y))
	f.newest = y
}

// room is the most samples the history holds before a compaction takes
// it back to MaxHistory: twice as many when MaxHistory holds two periods
// (a seasonal model estimates its season on more of them), else an eighth
// more (and at least 16), so a short history stays short.
func (f *Forecaster) room() int {
	if f.opts.MaxHistory >= 2*f.opts.Period {
		return 2 * f.opts.MaxHistory
	}
	return f.opts.MaxHistory + max(f.opts.MaxHistory/8, 16)
}

// sample is y as the history keeps it: a float32, the largest at or below
// y, or NaN for a gap (NaN or ±Inf). Seven digits are more than a refit
// needs, and 4 bytes a sample (where float64 takes 8) is what a series at
// a short step holds most of: a day at 15 s is 23 KB. Rounded down, a
// peak of the history is never above the sample it comes from, so replicas
// sized on it are never one more than the sample asks for. Beyond
// float32's range (±3.4·10³⁸) a finite sample is kept as its largest
// finite value.
func sample(y float64) float32 {
	if !num.Finite(y) {
		return float32(math.NaN())
	}
	v := float32(max(min(y, math.MaxFloat32), -math.MaxFloat32))
	if float64(v) > y {
		v = math.Nextafter32(v, float32(math.Inf(-1)))
	}
	return v
}

// sampleAt returns kept sample i: the newest as it came, so that a
// forecast from it (the last value's, above all) is exact, and the others
// as float64s of their float32s.
func (f *Forecaster) sampleAt(i int) float64 {
	if i == len(f.hist)-1 {
		return f.newest
	}
	return float64(f.hist[i])
}

// history returns the kept samples as float64s, for a refit.
func (f *Forecaster) history() []float64 {
	out := make([]float64, len(f.hist))
	for i := range f.hist {
		out[i] = f.sampleAt(i)
	}
	return out
}

// ObservedPeak returns the highest sample the forecaster holds at a time
// in [from, to] (unix ms) and that time (the newest of equals); ok is false
// when it holds no finite sample there. It costs one step a sample from
// the newest back to from.
func (f *Forecaster) ObservedPeak(from, to int64) (v float64, at int64, ok bool) {
	stepMs := f.opts.Step.Milliseconds()
	for i := len(f.hist) - 1; i >= 0; i-- {
		t := f.t0 + (f.last-int64(len(f.hist)-1-i))*stepMs
		if t < from {
			break
		}
		if y := f.sampleAt(i); t <= to && num.Finite(y) && (!ok || y > v) {
			v, at, ok = y, t, true
		}
	}
	return v, at, ok
}

// observedAt returns the sample the forecaster holds at time t (unix ms),
// NaN when it holds none there.
func (f *Forecaster) observedAt(t int64) float64 {
	stepMs := f.opts.Step.Milliseconds()
	if f.hist == nil || (t-f.t0)%stepMs != 0 {
		return math.NaN()
	}
	back := f.last - (t-f.t0)/stepMs
	if t < f.t0 || back < 0 || back >= int64(len(f.hist)) {
		return math.NaN()
	}
	return f.sampleAt(len(f.hist) - 1 - int(back))
}

// Model returns the name of the model in use.
func (f *Forecaster) Model() string {
	if f.tr == nil {
		return ""
	}
	return f.tr.m.name()
}

// Forecast returns the forecast from the last sample.
func (f *Forecaster) Forecast() Forecast {
	var fc Forecast
	f.ForecastInto(&fc)
	return fc
}

// ForecastInto writes the forecast from the last sample into dst, reusing
// its slices.
func (f *Forecaster) ForecastInto(dst *Forecast) {
	h := f.opts.Horizon
	dst.Model, dst.Fallback, dst.Need = f.Model(), f.fallback, 0
	if f.fallback != "" {
		dst.Need = f.need
	}
	dst.Origin = f.t0 + f.last*f.opts.Step.Milliseconds()
	dst.Step, dst.Level, dst.Gaps = f.opts.Step, f.opts.Level, f.gaps
	dst.setLen(h)
	if !f.fitted {
		return
	}
	fillForecast(dst, f.tr, &f.opts, f.z, f.sigma0, f.outage)
}

// fillForecast writes the mean path of tr from its latest origin into dst,
// corrected for a bias its recent errors show, with the interval their
// empirical quantiles give at each lead (interpolated between the leads
// that keep errors; a σ√h band while a lead has fewer than MinCalibration
// errors, σ from the lead-1 errors or sigma0), the upper end at each of
// PlanLevels the same way, the peak and the upper peak. During an outage
// it forecasts zeros.
func fillForecast(dst *Forecast, tr *tracker, o *Options, z, sigma0 float64, outage bool) {
	h := o.Horizon
	copy(dst.Mean, tr.current())
	qlo, qhi := (1-o.Level)/2, (1+o.Level)/2
	dst.setPlans(o.PlanLevels, h)
	sigma1 := sigma0
	if w := tr.win[0]; w.len() >= 10 {
		sigma1 = w.rms()
	}
	dst.Peak, dst.PeakLead, dst.UpperPeak = math.Inf(-1), 0, math.Inf(-1)
	for i := range h {
		m := dst.Mean[i]
		lo, hi := 0.0, 0.0
		if c := tr.calibration(i+1, qlo, qhi); c.n >= o.MinCalibration {
			// Errors replayed on the float32 history after a refit can be a
			// rounding short of those of the samples as they came: the
			// bounds keep two float32 roundings of room.
			pad := math.Abs(m) * 0x1p-22
			lo, hi = m+c.lower-pad, m+c.upper+pad
			for _, p := range dst.Plans {
				p.Upper[i] = m + tr.bound(i+1, (1+p.Level)/2) + pad
			}
			dst.Empirical[i] = true
			if se := 1.2533 * c.rmsErr / math.Sqrt(float64(c.n)); math.Abs(c.median) > 3*se {
				m += c.median
				if !o.AllowNegative {
					m = clip0(m)
				}
				dst.Mean[i] = m
			}
		} else {
			d := z * sigma1 * math.Sqrt(float64(i+1))
			lo, hi = m-d, m+d
			for _, p := range dst.Plans {
				p.Upper[i] = m + normalQuantile(p.Level)*sigma1*math.Sqrt(float64(i+1))
			}
			dst.Empirical[i] = false
		}
		if outage {
			// An outage persists more often than not: forecast it going
			// on, with the interval reaching the model's forecast.
			dst.Mean[i], m, lo = 0, 0, 0
		}
		if !o.AllowNegative {
			lo, hi = clip0(lo), clip0(hi)
		}
		dst.Lower[i], dst.Upper[i] = lo, max(hi, lo)
		for _, p := range dst.Plans {
			if !o.AllowNegative {
				p.Upper[i] = clip0(p.Upper[i])
			}
			p.Upper[i] = max(p.Upper[i], lo)
		}
		if m > dst.Peak {
			dst.Peak, dst.PeakLead = m, i+1
		}
		dst.UpperPeak = max(dst.UpperPeak, dst.Upper[i])
	}
}

// setLen sizes dst's slices for h leads, reusing their arrays.
func (dst *Forecast) setLen(h int) {
	dst.Mean = resize(dst.Mean, h)
	dst.Lower = resize(dst.Lower, h)
	dst.Upper = resize(dst.Upper, h)
	if cap(dst.Empirical) < h {
		dst.Empirical = make([]bool, h)
	}
	dst.Empirical = dst.Empirical[:h]
}

// setPlans sizes dst.Plans for levels and h leads, reusing its arrays.
func (dst *Forecast) setPlans(levels []float64, h int) {
	if len(levels) == 0 {
		dst.Plans = dst.Plans[:0]
		return
	}
	if cap(dst.Plans) < len(levels) {
		dst.Plans = append(dst.Plans[:cap(dst.Plans)], make([]PlanUpper, len(levels)-cap(dst.Plans))...)
	}
	dst.Plans = dst.Plans[:len(levels)]
	for j, l := range levels {
		dst.Plans[j].Level, dst.Plans[j].Upper = l, resize(dst.Plans[j].Upper, h)
	}
}

// normalQuantile is the two-sided normal quantile z of coverage level:
// P(|Z| ≤ z) = level.
func normalQuantile(level float64) float64 { return math.Sqrt2 * math.Erfinv(level) }

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// Observed appends to dst the samples the forecaster holds at the times in
// [from, to] (unix ms), oldest first, NaN for a gap, and returns it. The
// samples are one a step and end at the newest held in the range; those
// before the oldest held are not appended.
func (f *Forecaster) Observed(dst []float64, from, to int64) []float64 {
	if len(f.hist) == 0 {
		return dst
	}
	stepMs := f.opts.Step.Milliseconds()
	newest := f.t0 + f.last*stepMs
	oldest := newest - int64(len(f.hist)-1)*stepMs
	lo := max(0, (from-oldest+stepMs-1)/stepMs)
	if from < oldest {
		lo = 0
	}
	if to < oldest {
		return dst
	}
	hi := min(int64(len(f.hist)-1), (to-oldest)/stepMs)
	for i := lo; i <= hi; i++ {
		dst = append(dst, f.sampleAt(int(i)))
	}
	return dst
}
