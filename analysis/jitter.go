package analysis

import (
	"fmt"
	"math"

	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/internal/order"
)

// RollingStd measures jitter: for each sample i, the sample standard
// deviation (divisor n−1) of the finite samples with timestamps in
// (t[i]−window, t[i]] — the current sample and the past only, like
// Prometheus' stddev_over_time(x[window]) evaluated at t[i]. t must be
// ascending (equal timestamps are allowed). The result is NaN where the
// window holds fewer than minPoints finite samples (minPoints below 2
// counts as 2) and where the sample itself is not finite.
//
// It runs in O(n): the mean and sum of squared deviations are updated as
// samples enter and leave (Welford's update and its inverse) and recomputed
// exactly from the window whenever as many samples have left as it holds,
// so rounding never accumulates.
//
// It panics when the lengths differ, window ≤ 0 or t is not ascending.
func RollingStd(t []int64, v []float64, window int64, minPoints int) []float64 {
	checkRolling("RollingStd", t, v, window)
	minPoints = max(minPoints, 2)
	out := make([]float64, len(v))
	var (
		start   int // first index that may be in the window
		n       int
		mean    float64
		m2      float64
		removed int
	)
	for i, x := range v {
		if num.Finite(x) {
			n++
			d := x - mean
			mean += d / float64(n)
			m2 += d * (x - mean)
		}
		for t[start] <= t[i]-window {
			if y := v[start]; num.Finite(y) {
				if n == 1 {
					n, mean, m2 = 0, 0, 0
				} else {
					n--
					d := y - mean
					mean -= d / float64(n)
					m2 -= d * (y - mean)
				}
				removed++
			}
			start++
		}
		if removed >= n && n > 0 {
			// Recompute exactly from what is left in the window.
			mean, m2 = exactMoments(v[start : i+1])
			removed = 0
		}
		out[i] = math.NaN()
		if num.Finite(x) && n >= minPoints {
			out[i] = math.Sqrt(max(m2, 0) / float64(n-1))
		}
	}
	return out
}

// exactMoments is the mean and the sum of squared deviations of the finite
// values of xs, in two passes.
func exactMoments(xs []float64) (mean, m2 float64) {
	mean, n := meanFinite(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		if num.Finite(x) {
			d := x - mean
			m2 += d * d
		}
	}
	return mean, m2
}

// RollingIQR measures jitter robustly: the interquartile range Q3 − Q1
// (quantiles by linear interpolation, R type 7) of the same causal windows
// as RollingStd, with the same rules for minPoints and non-finite samples. The quartiles come from selection,
// O(k) per window of k samples, so the whole costs O(n·k).
//
// It panics when the lengths differ, window ≤ 0 or t is not ascending.
func RollingIQR(t []int64, v []float64, window int64, minPoints int) []float64 {
	checkRolling("RollingIQR", t, v, window)
	minPoints = max(minPoints, 2)
	out := make([]float64, len(v))
	var buf []float64
	start := 0
	for i, x := range v {
		for t[start] <= t[i]-window {
			start++
		}
		out[i] = math.NaN()
		if !num.Finite(x) {
			continue
		}
		buf = buf[:0]
		for _, y := range v[start : i+1] {
			if num.Finite(y) {
				buf = append(buf, y)
			}
		}
		if len(buf) < minPoints {
			continue
		}
		q1 := order.Quantile(buf, 0.25)
		q3 := order.Quantile(buf, 0.75)
		out[i] = q3 - q1
	}
	return out
}

// TailSpread is the jitter read off two quantile series already computed by
// the serving stack (for example vLLM's P99 and P50 of time per output
// token, evaluated at the same instants): p99[i] − p50[i], NaN where either
// is not finite. A spread that is negative by rounding is kept as is. It
// panics when the lengths differ.
func TailSpread(p99, p50 []float64) []float64 {
	if len(p99) != len(p50) {
		panic(fmt.Sprintf("analysis.TailSpread: %d P99 values but %d P50 values", len(p99), len(p50)))
	}
	out := make([]float64, len(p99))
	for i, hi := range p99 {
		out[i] = math.NaN()
		if lo := p50[i]; num.Finite(hi) && num.Finite(lo) {
			out[i] = hi - lo
		}
	}
	return out
}

func checkRolling(name string, t []int64, v []float64, window int64) {
	if len(t) != len(v) {
		panic(fmt.Sprintf("analysis.%s: %d timestamps but %d values", name, len(t), len(v)))
	}
	if window <= 0 {
		panic(fmt.Sprintf("analysis.%s: window must be > 0, got %d", name, window))
	}
	for i := 1; i < len(t); i++ {
		if t[i] < t[i-1] {
			panic(fmt.Sprintf("analysis.%s: timestamps must be ascending, t[%d]=%d < t[%d]=%d", name, i, t[i], i-1, t[i-1]))
		}
	}
}
