package forecasting

import (
	"math"

	"github.com/inferwatch/inferwatch/internal/num"
)

// AccuracyWindow is how many recent forecasts an Accuracy is measured over.
const AccuracyWindow = 1000

// Accuracy measures a series' own recent forecasts at one lead against what
// came: each forecast is remembered until the sample of its target time
// arrives, then scored — its absolute error, the naive forecast's (the
// value at its origin) on the same origin, and whether the actual fell
// inside the interval — over the last AccuracyWindow scored forecasts. The
// zero value is ready to use; it is not safe for concurrent use.
type Accuracy struct {
	pending map[int64]tracked // target time → forecast
	scored  int64             // the newest target scored
	started bool
	ae, nae []float64
	in      []bool
	pos     int
}

type tracked struct{ mean, lower, upper, naive float64 }

// AccuracySummary is the accuracy over the scored forecasts: their number,
// the mean absolute error, the share of actuals inside the interval and
// the naive forecast's mean absolute error; NaN when none was scored.
type AccuracySummary struct {
	N                       int
	MAE, Coverage, NaiveMAE float64
}

// Forecast remembers a forecast of the value at target (unix
// milliseconds): its mean and interval, and the naive forecast, the value
// at its origin.
func (a *Accuracy) Forecast(target int64, mean, lower, upper, naive float64) {
	if a.pending == nil {
		a.pending = map[int64]tracked{}
	}
	a.pending[target] = tracked{mean, lower, upper, naive}
}

// Observe scores the forecast whose target is the sample at t, when one is
// remembered and t is newer than every target scored before (a series
// fitted afresh replays samples whose targets were scored: each counts
// once), and forgets the forecasts of targets up to t. A non-finite v
// scores nothing.
func (a *Accuracy) Observe(t int64, v float64) {
	if p, ok := a.pending[t]; ok && num.Finite(v) && (!a.started || t > a.scored) {
		a.push(math.Abs(v-p.mean), math.Abs(v-p.naive), v >= p.lower && v <= p.upper)
		a.scored, a.started = t, true
	}
	for k := range a.pending {
		if k <= t {
			delete(a.pending, k)
		}
	}
}

func (a *Accuracy) push(ae, nae float64, in bool) {
	if len(a.ae) < AccuracyWindow {
		a.ae, a.nae, a.in = append(a.ae, ae), append(a.nae, nae), append(a.in, in)
		return
	}
	a.ae[a.pos], a.nae[a.pos], a.in[a.pos] = ae, nae, in
	a.pos = (a.pos + 1) % AccuracyWindow
}

// Summary returns the accuracy over the scored forecasts.
func (a *Accuracy) Summary() AccuracySummary {
	out := AccuracySummary{N: len(a.ae), MAE: math.NaN(), Coverage: math.NaN(), NaiveMAE: math.NaN()}
	if len(a.ae) == 0 {
		return out
	}
	var s, sn, c float64
	for i := range a.ae {
		s += a.ae[i]
		sn += a.nae[i]
		if a.in[i] {
			c++
		}
	}
	n := float64(len(a.ae))
	out.MAE, out.NaiveMAE, out.Coverage = s/n, sn/n, c/n
	return out
}
