package forecasting

import (
	"fmt"
	"math"
	"time"

	"github.com/inferwatch/inferwatch/internal/num"
)

// BacktestRow is one forecast of a backtest: made at Origin (the index of
// the last sample used) for Target = Origin + Lead.
type BacktestRow struct {
	Origin, Target, Lead int
	Yhat, Lower, Upper   float64
	// Actual is data[Target]; NaN when it is a gap.
	Actual float64
}

// BacktestResult holds every forecast of a backtest and the summary at the
// horizon. Errors are scored at lead = Horizon only, on the origins whose
// target is a finite sample; the baselines are scored on the same origins.
type BacktestResult struct {
	Model              string
	Step               time.Duration
	Horizon            int
	Level              float64
	MinHistory, Period int
	Rows               []BacktestRow

	// Origins is the number of origins scored at the horizon.
	Origins int
	// MAE and SMAPE (in percent; a pair of zeros counts as 0) of the
	// model at the horizon.
	MAE, SMAPE float64
	// Coverage is the share of actuals inside [lower, upper]; AboveUpper
	// the share above upper.
	Coverage, AboveUpper float64
	// MAE at the horizon of the baselines on the same origins: the last
	// value, the value one period before the target, and the mean of the
	// last period (of all points while there is less than a period).
	// SeasonalNaiveMAE is NaN when some origin has less than a period of
	// history before its target.
	NaiveMAE, SeasonalNaiveMAE, MeanMAE float64
	// Ratio is MAE over the best of the baseline MAEs that are defined.
	Ratio float64
	// FallbackOrigins counts scored origins whose forecast was a fallback;
	// Chosen counts scored origins by the model that made the forecast.
	FallbackOrigins int
	Chosen          map[string]int
	// Gaps counts the non-finite samples met.
	Gaps int
}

// BacktestOptions extend Options for BacktestWith.
type BacktestOptions struct {
	Options
	// MinHistory is the index of the first origin: every origin i has at
	// least MinHistory samples before it (data[0..i−1]) besides its own.
	// Required, at least 0.
	MinHistory int
	// Progress, when set, is called with the origins done and the total,
	// about a hundred times over the run and once at the end.
	Progress func(done, total int)
}

// Backtest replays data (samples step apart, NaN for gaps) through a
// Forecaster of the named model, forecasting horizon steps from every
// origin i ≥ minHistory (for 10-minute data, minHistory 144 scores the
// origins with a day of history before them), and refitting when
// the Forecaster says a refit is due. See BacktestWith.
func Backtest(data []float64, step time.Duration, model string, horizon int, level float64, minHistory int) (*BacktestResult, error) {
	return BacktestWith(data, BacktestOptions{
		Options:    Options{Step: step, Model: model, Horizon: horizon, Level: level},
		MinHistory: minHistory,
	})
}

// BacktestWith is Backtest with every option and a progress callback.
func BacktestWith(data []float64, o BacktestOptions) (*BacktestResult, error) {
	f, err := New(o.Options)
	if err != nil {
		return nil, fmt.Errorf("backtest: %w", err)
	}
	return backtest(data, o, f.Options(), func(i int, first bool) error {
		if first || f.RefitDue() {
			return f.Fit(0, data[:i+1])
		}
		return f.Update(int64(i)*f.opts.Step.Milliseconds(), data[i])
	}, f.ForecastInto)
}

// BacktestSum is BacktestWith for the sum of parts (parts[i] is part i;
// all of the same length), forecast bottom-up by a [Sum] with o.Options
// for each part: the actuals and the baselines are the sum's.
func BacktestSum(parts [][]float64, o BacktestOptions) (*BacktestResult, error) {
	s, err := NewSum(o.Options, len(parts))
	if err != nil {
		return nil, fmt.Errorf("backtest: %w", err)
	}
	for k, p := range parts {
		if len(p) != len(parts[0]) {
			return nil, fmt.Errorf("backtest: part %d has %d samples, part 0 has %d", k, len(p), len(parts[0]))
		}
	}
	total := addParts(parts)
	stepMs := s.Options().Step.Milliseconds()
	ys := make([]float64, len(parts))
	res, err := backtest(total, o, s.Options(), func(i int, first bool) error {
		if first {
			upto := make([][]float64, len(parts))
			for k, p := range parts {
				upto[k] = p[:i+1]
			}
			return s.Fit(0, upto)
		}
		return s.advance(int64(i)*stepMs, parts, i, ys)
	}, s.ForecastInto)
	if res != nil {
		res.Model = ModelBottomUp
	}
	return res, err
}

// backtest scores the forecasts of a model of data from every origin:
// advance(i, first) brings the model to origin i (at the first origin,
// fitted on data[:i+1]; then one sample at a time, refitting when due),
// and forecast writes its forecast from there.
func backtest(data []float64, o BacktestOptions, opts Options, advance func(i int, fit bool) error, forecast func(*Forecast)) (*BacktestResult, error) {
	h, p := opts.Horizon, opts.Period
	if o.MinHistory < 0 {
		return nil, fmt.Errorf("backtest: min history must not be negative, got %d", o.MinHistory)
	}
	first := o.MinHistory
	last := len(data) - 2 // the last origin with a target at lead 1
	if last < first {
		return nil, fmt.Errorf("backtest: %d samples leave no origin after a min history of %d; need at least %d", len(data), o.MinHistory, o.MinHistory+2)
	}
	if err := advance(first, true); err != nil {
		return nil, fmt.Errorf("backtest: at origin %d: %w", first, err)
	}
	res := &BacktestResult{
		Model: opts.Model, Step: opts.Step, Horizon: h, Level: opts.Level,
		MinHistory: o.MinHistory, Period: p, Chosen: map[string]int{},
		Rows: make([]BacktestRow, 0, (last-first+1)*h),
	}
	filled := fillGaps(trimLeading(data), p)
	lead := len(data) - len(filled) // leading gaps, not in filled
	var fc Forecast
	var sumAE, sumSAPE, sumN, sumS, sumM float64
	var covered, above int
	total := last - first + 1
	every := max(total/100, 1)
	for i := first; i <= last; i++ {
		if i > first {
			if err := advance(i, false); err != nil {
				return nil, fmt.Errorf("backtest: at origin %d: %w", i, err)
			}
		}
		forecast(&fc)
		for l := 1; l <= h && i+l < len(data); l++ {
			res.Rows = append(res.Rows, BacktestRow{Origin: i, Target: i + l, Lead: l,
				Yhat: fc.Mean[l-1], Lower: fc.Lower[l-1], Upper: fc.Upper[l-1], Actual: data[i+l]})
		}
		if t := i + h; t < len(data) && num.Finite(data[t]) && i >= lead {
			y := data[t]
			yhat, lo, hi := fc.Mean[h-1], fc.Lower[h-1], fc.Upper[h-1]
			res.Origins++
			sumAE += math.Abs(y - yhat)
			if d := math.Abs(y) + math.Abs(yhat); d > 0 {
				sumSAPE += 2 * math.Abs(y-yhat) / d
			}
			if y >= lo && y <= hi {
				covered++
			}
			if y > hi {
				above++
			}
			// Baselines from the gap-filled series, on the same origin.
			j := i - lead
			sumN += math.Abs(y - filled[j])
			if k := j + h - p*((h-1)/p+1); k >= 0 {
				sumS += math.Abs(y - filled[k])
			} else {
				sumS = math.NaN()
			}
			sumM += math.Abs(y - meanLastPeriod(filled, j, p))
			res.Chosen[fc.Model]++
			if fc.Fallback != "" {
				res.FallbackOrigins++
			}
		}
		if o.Progress != nil && ((i-first+1)%every == 0 || i == last) {
			o.Progress(i-first+1, total)
		}
	}
	for _, v := range data {
		if !num.Finite(v) {
			res.Gaps++
		}
	}
	if n := float64(res.Origins); n > 0 {
		res.MAE, res.SMAPE = sumAE/n, 100*sumSAPE/n
		res.Coverage, res.AboveUpper = float64(covered)/n, float64(above)/n
		res.NaiveMAE, res.SeasonalNaiveMAE, res.MeanMAE = sumN/n, sumS/n, sumM/n
		best := math.Min(res.NaiveMAE, res.MeanMAE)
		if !math.IsNaN(res.SeasonalNaiveMAE) {
			best = math.Min(best, res.SeasonalNaiveMAE)
		}
		res.Ratio = res.MAE / best
	}
	return res, nil
}

func trimLeading(x []float64) []float64 {
	for i, v := range x {
		if num.Finite(v) {
			return x[i:]
		}
	}
	return nil
}

// meanLastPeriod is the mean of x[j−p+1..j] (of x[0..j] when shorter).
func meanLastPeriod(x []float64, j, p int) float64 {
	return meanOf(x[max(j-p+1, 0) : j+1])
}
