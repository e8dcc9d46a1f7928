package forecasting

import (
	"math"
	"math/rand/v2"
)

// weeklyRates is the per-minute mean of syntheticWeekly: shape (one value
// per 10 minutes, linearly interpolated, repeated daily) scaled to an
// average of meanPerMin, times weekend on Saturdays and Sundays (the first
// day is a Monday).
func weeklyRates(shape []float64, days int, meanPerMin, weekend float64) []float64 {
	var avg float64
	for _, v := range shape {
		avg += v
	}
	avg /= float64(len(shape))
	out := make([]float64, days*1440)
	for i := range out {
		pos := float64(i) / 10
		k := int(pos)
		fr := pos - float64(k)
		a, b := shape[k%len(shape)], shape[(k+1)%len(shape)]
		out[i] = ((1-fr)*a + fr*b) / avg * meanPerMin
		if isWeekend(i) {
			out[i] *= weekend
		}
	}
	return out
}

// isWeekend tells whether minute i falls on a Saturday or a Sunday.
func isWeekend(i int) bool { return i/1440%7 >= 5 }

// syntheticWeekly returns per-minute Poisson counts with the means of
// weeklyRates. Deterministic for a seed.
func syntheticWeekly(shape []float64, days int, meanPerMin, weekend float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := weeklyRates(shape, days, meanPerMin, weekend)
	for i, lam := range out {
		out[i] = poisson(rng, lam)
	}
	return out
}

// leadMAE is the mean absolute error at lead h of a per-minute backtest's
// forecasts, over the origins whose target is on a weekend day and over
// the others; with oracle set, of oracle[target] in their place (the
// error of knowing the true mean, the floor the noise sets).
func leadMAE(r *BacktestResult, h int, y, oracle []float64) (weekend, weekday float64) {
	var se, sd float64
	var ne, nd int
	for _, row := range r.Rows {
		if row.Lead != h || math.IsNaN(row.Actual) {
			continue
		}
		yhat := row.Yhat
		if oracle != nil {
			yhat = oracle[row.Target]
		}
		e := math.Abs(y[row.Target] - yhat)
		if isWeekend(row.Target) {
			se += e
			ne++
		} else {
			sd += e
			nd++
		}
	}
	return se / float64(ne), sd / float64(nd)
}
