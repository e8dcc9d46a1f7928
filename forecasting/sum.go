package forecasting

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/inferwatch/inferwatch/internal/num"
)

// ModelBottomUp names the forecasts of a [Sum].
const ModelBottomUp = "bottom_up"

// PartCandidates returns the models a [Sum] lets auto (the default) choose
// among for each part when its options name none: the last value, or the
// last value plus the step the part took one period before
// (seasonal_step). Ties go to the last value. Each call returns a new
// slice.
func PartCandidates() []string { return []string{ModelNaive, ModelSeasonalStep} }

// Sum forecasts the sum of several series (a service's traffic, from the
// traffic of each of its clients) bottom-up: it forecasts each part with
// its own Forecaster and adds their mean paths. A part that steps at the
// same time every day (a client's scheduled jobs) is forecast from its own
// past steps, which the sum's noise hides. The interval of the sum comes
// from the sum's own out-of-sample errors at each lead, as a Forecaster's
// does.
//
// Fit it once, then Update it with each new set of samples; call Refit
// when RefitDue. A Sum is not safe for concurrent use.
type Sum struct {
	opts   Options
	z      float64
	parts  []*Forecaster
	tr     *tracker // the summed mean paths, scored against the sum
	sigma0 float64
	fc     Forecast // a part's forecast, reused
	fitted bool
}

// NewSum returns a Sum of n parts, each forecast with opts (defaults filled
// in). For the parts, auto (the default) chooses among PartCandidates()
// unless opts names other candidates: the seasonal models that suit a
// whole service's traffic overfit one client's (on ServeGen m-large, the
// sum of 162 parts so forecast scored 1.06 of naive, against 0.96).
func NewSum(opts Options, n int) (*Sum, error) {
	if n < 1 {
		return nil, fmt.Errorf("forecasting a sum: need at least 1 part, got %d", n)
	}
	if (opts.Model == "" || opts.Model == ModelAuto) && opts.Candidates == nil {
		opts.Model, opts.Candidates = ModelAuto, PartCandidates()
	}
	s := &Sum{parts: make([]*Forecaster, n)}
	for i := range s.parts {
		f, err := New(opts)
		if err != nil {
			return nil, fmt.Errorf("forecasting a sum: %w", err)
		}
		s.parts[i] = f
	}
	s.opts = s.parts[0].Options()
	s.z = s.parts[0].z
	return s, nil
}

// Options returns the options of the parts, with defaults filled in.
func (s *Sum) Options() Options { return s.opts }

// Fit fits every part on its data (data[i] is part i; all start at t0, unix
// ms, and have the same length). As a Forecaster's fit does, it holds back
// the last samples (up to CalibrationSize, at most half) and feeds them one
// at a time, so the sum's interval is calibrated on errors from the start.
func (s *Sum) Fit(t0 int64, data [][]float64) error {
	if len(data) != len(s.parts) {
		return fmt.Errorf("fitting a sum of %d parts: got data for %d", len(s.parts), len(data))
	}
	n := len(data[0])
	for i, d := range data {
		if len(d) != n {
			return fmt.Errorf("fitting a sum: part %d has %d samples, part 0 has %d", i, len(d), n)
		}
	}
	for i, d := range data {
		if !slices.ContainsFunc(d, num.Finite) {
			return fmt.Errorf("fitting a sum: none of the %d samples of part %d is finite; need at least 1", n, i)
		}
	}
	v := min(s.opts.CalibrationSize, n/2)
	for i, d := range data {
		if err := s.parts[i].Fit(t0, d[:n-v]); err != nil {
			return fmt.Errorf("fitting a sum: part %d: %w", i, err)
		}
	}
	s.sigma0 = diffRMS(addParts(data))
	s.tr = newTracker(partsModel{s}, s.opts.Horizon, s.opts.calibration(), !s.opts.AllowNegative)
	s.fitted = true
	stepMs := s.opts.Step.Milliseconds()
	ys := make([]float64, len(data))
	for j := n - v; j < n; j++ {
		if err := s.advance(t0+int64(j)*stepMs, data, j, ys); err != nil {
			return fmt.Errorf("fitting a sum: %w", err)
		}
	}
	return nil
}

// advance feeds sample j of every part (gathered into ys) at time t and
// refits the parts that are due.
func (s *Sum) advance(t int64, data [][]float64, j int, ys []float64) error {
	for i, d := range data {
		ys[i] = d[j]
	}
	if err := s.Update(t, ys); err != nil {
		return err
	}
	if s.RefitDue() {
		return s.Refit()
	}
	return nil
}

// RefitDue reports whether some part is due for a refit.
func (s *Sum) RefitDue() bool {
	for _, f := range s.parts {
		if f.fitted && f.RefitDue() {
			return true
		}
	}
	return false
}

// Refit refits the parts that are due, keeping the errors that calibrate
// the sum's interval.
func (s *Sum) Refit() error {
	if !s.fitted {
		return errors.New("refitting a sum: Fit was never called")
	}
	for i, f := range s.parts {
		if f.RefitDue() {
			if err := f.Refit(); err != nil {
				return fmt.Errorf("refitting a sum: part %d: %w", i, err)
			}
		}
	}
	s.tr.predictRow() // the parts' new forecasts from the same origin
	return nil
}

// Update adds the samples ys (ys[i] of part i) at time t (unix ms), as
// Forecaster.Update does for each part; a non-finite sample of any part is
// a gap in the sum.
func (s *Sum) Update(t int64, ys []float64) error {
	if !s.fitted {
		return errors.New("updating a sum: Fit was never called")
	}
	if len(ys) != len(s.parts) {
		return fmt.Errorf("updating a sum of %d parts: got %d samples", len(s.parts), len(ys))
	}
	total := 0.0
	for i, f := range s.parts {
		if err := f.Update(t, ys[i]); err != nil {
			return fmt.Errorf("updating a sum: part %d: %w", i, err)
		}
		total += ys[i]
	}
	if !num.Finite(total) {
		total = math.NaN()
	}
	s.tr.observe(total)
	return nil
}

// newest returns the time (unix ms) of the newest sample any part holds;
// held is false when no part holds one.
func (s *Sum) newest() (at int64, held bool) {
	stepMs := s.opts.Step.Milliseconds()
	at = math.MinInt64
	for _, f := range s.parts {
		if f.hist != nil {
			at, held = max(at, f.t0+f.last*stepMs), true
		}
	}
	return at, held
}

// ObservedPeak returns the highest sum of the parts' samples at a time in
// [from, to] (unix ms), a part counting 0 where it has none, and that time
// (the newest of equals); ok is false when no part has a finite sample
// there. It costs one step a part a sample in the range.
func (s *Sum) ObservedPeak(from, to int64) (v float64, at int64, ok bool) {
	stepMs := s.opts.Step.Milliseconds()
	newest, held := s.newest()
	if !held {
		return 0, 0, false
	}
	start := newest
	if to < newest {
		start -= (newest - to + stepMs - 1) / stepMs * stepMs
	}
	for t := start; t >= from; t -= stepMs {
		sum, any := 0.0, false
		for _, f := range s.parts {
			if y := f.observedAt(t); num.Finite(y) {
				sum, any = sum+y, true
			}
		}
		if any && (!ok || sum > v) {
			v, at, ok = sum, t, true
		}
	}
	return v, at, ok
}

// ForecastInto writes the forecast of the sum from the last samples into
// dst, reusing its slices. Its Model is bottom_up; Fallback names the parts
// that fell back for lack of history.
func (s *Sum) ForecastInto(dst *Forecast) {
	h := s.opts.Horizon
	p0 := s.parts[0]
	dst.Model, dst.Fallback, dst.Need = ModelBottomUp, "", 0
	dst.Origin = p0.t0 + p0.last*s.opts.Step.Milliseconds()
	dst.Step, dst.Level, dst.Gaps = s.opts.Step, s.opts.Level, 0
	dst.setLen(h)
	if !s.fitted {
		return
	}
	fell := 0
	for _, f := range s.parts {
		dst.Gaps += f.gaps
		if f.fallback != "" {
			fell++
			dst.Need = max(dst.Need, f.need)
		}
	}
	if fell > 0 {
		dst.Fallback = fmt.Sprintf("%d of %d parts have too little history for %s: they fall back", fell, len(s.parts), s.opts.Model)
	}
	fillForecast(dst, s.tr, &s.opts, s.z, s.sigma0, false)
}

// addParts returns the sum of parts of equal length, step by step; a NaN
// in a part leaves a gap in the sum.
func addParts(parts [][]float64) []float64 {
	total := make([]float64, len(parts[0]))
	for _, p := range parts {
		for i, v := range p {
			total[i] += v
		}
	}
	return total
}

// partsModel is the model the sum's tracker runs: its forecast is the sum
// of the parts' mean paths. The parts see their own samples before the
// tracker sees the sum, so update has nothing left to do.
type partsModel struct{ s *Sum }

func (m partsModel) name() string          { return ModelBottomUp }
func (m partsModel) need() int             { return 1 }
func (m partsModel) fit(y []float64) error { return nil }
func (m partsModel) update(y float64)      {}
func (m partsModel) predict(out []float64) {
	clear(out)
	fc := &m.s.fc
	for _, f := range m.s.parts {
		f.ForecastInto(fc)
		for i := range out {
			out[i] += fc.Mean[i]
		}
	}
}

// Observed appends to dst the sums of the parts' samples at the times in
// [from, to] (unix ms) up to the newest, oldest first, a part counting 0
// where it has none and NaN where no part has a sample, and returns it.
func (s *Sum) Observed(dst []float64, from, to int64) []float64 {
	stepMs := s.opts.Step.Milliseconds()
	newest, held := s.newest()
	if !held {
		return dst
	}
	oldest := newest
	for _, f := range s.parts {
		if f.hist != nil {
			oldest = min(oldest, f.t0+(f.last-int64(len(f.hist)-1))*stepMs)
		}
	}
	to = min(to, newest)
	start := max(from, oldest)
	if r := (start - newest) % stepMs; r != 0 {
		start -= r
		if start < from {
			start += stepMs
		}
	}
	for t := start; t <= to; t += stepMs {
		sum, any := 0.0, false
		for _, f := range s.parts {
			if y := f.observedAt(t); num.Finite(y) {
				sum, any = sum+y, true
			}
		}
		if !any {
			sum = math.NaN()
		}
		dst = append(dst, sum)
	}
	return dst
}
