package forecasting

import (
	"math"
	"time"
)

// minuteSteps is the steps in a minute (rounded down) for steps shorter
// than a minute, else 1: the spacing, in leads, of the leads that keep a
// calibration window, and the fewest origins a window keeps one error of.
// Errors from origins a few seconds apart are nearly the same error.
func minuteSteps(step time.Duration) int {
	return max(1, int(time.Minute/step))
}

// maxWindowErrors is the most errors a calibration window keeps, whatever
// the step: 1,440 bytes a window (4 bytes an error). A window of
// CalibrationSize origins that would hold more keeps the errors of one
// origin in every originStride.
const maxWindowErrors = 360

// originStride is how many origins a full calibration window of size
// origins has per error it keeps: a minute of steps, or more when that
// would keep more than maxWindowErrors (at one-minute steps and a day of
// origins, one in four).
func originStride(step time.Duration, size int) int {
	return max(minuteSteps(step), (size+maxWindowErrors-1)/maxWindowErrors)
}

// leadKnots returns the leads, of h, that keep a calibration window:
// every lead at a spacing of 1 (steps of a minute or longer); at a spacing
// of a minute of steps (shorter steps), lead 1, the leads at 1, 2, 3, 5,
// 8, 12, … minutes (each count half as large again as the one before,
// rounded up) and h. The leads between two knots take their interval from
// both (see tracker.calibration): an interval whose width grows as the
// square root of the lead is interpolated within 1.5 % of it from the
// first minute on (0.8 % from the third), and one that grows linearly
// exactly. A 10-minute horizon keeps 7 windows at 15 s and 10 at one
// minute.
func leadKnots(h, spacing int) []int {
	knots := []int{1}
	if spacing == 1 {
		for l := 2; l <= h; l++ {
			knots = append(knots, l)
		}
		return knots
	}
	for u := 1; u*spacing < h; u = (3*u + 1) / 2 {
		knots = append(knots, u*spacing)
	}
	if h > 1 {
		knots = append(knots, h)
	}
	return knots
}

// leadCalibration is what the errors at one lead say about its interval.
type leadCalibration struct {
	n              int     // errors behind it: the fewer of its knots'
	lower, upper   float64 // split-conformal bounds at the interval's levels
	median, rmsErr float64
}

// calibration returns the calibration of lead l (1 ≤ l ≤ H) at the levels
// qlo and qhi: a knot's own window's, and between two knots a and b the
// linear interpolation of theirs, weighted (l−a)/(b−a) towards b.
func (k *tracker) calibration(l int, qlo, qhi float64) leadCalibration {
	i := k.knotAtOrAbove(l)
	b := k.win[i]
	if k.knots[i] == l {
		return leadCalibration{n: b.len(), lower: b.bound(qlo), upper: b.bound(qhi),
			median: b.quantile(0.5), rmsErr: b.rms()}
	}
	a := k.win[i-1]
	w := float64(l-k.knots[i-1]) / float64(k.knots[i]-k.knots[i-1])
	return leadCalibration{n: min(a.len(), b.len()),
		lower:  lerp(a.bound(qlo), b.bound(qlo), w),
		upper:  lerp(a.bound(qhi), b.bound(qhi), w),
		median: lerp(a.quantile(0.5), b.quantile(0.5), w),
		rmsErr: lerp(a.rms(), b.rms(), w)}
}

// bound returns the split-conformal bound at level q of lead l's errors,
// as calibration does: a knot's own window's, and between two knots the
// linear interpolation of theirs.
func (k *tracker) bound(l int, q float64) float64 {
	i := k.knotAtOrAbove(l)
	if k.knots[i] == l {
		return k.win[i].bound(q)
	}
	w := float64(l-k.knots[i-1]) / float64(k.knots[i]-k.knots[i-1])
	return lerp(k.win[i-1].bound(q), k.win[i].bound(q), w)
}

// knotAtOrAbove returns the index of the first knot at or above lead l.
func (k *tracker) knotAtOrAbove(l int) int {
	lo, hi := 0, len(k.knots)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.knots[m] < l {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lerp is a + w(b − a); NaN when either is.
func lerp(a, b, w float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a + w*(b-a)
}
