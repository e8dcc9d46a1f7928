package analysis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/internal/order"

	"gonum.org/v1/gonum/stat/distuv"
)

// Millisecond spans used by the decay analysis.
const (
	hourMs int64 = 60 * 60 * 1000
	dayMs        = 24 * hourMs
	weekMs       = 7 * dayMs
)

// TheilSenFit is a robust straight-line fit y ≈ Intercept + Slope·x.
type TheilSenFit struct {
	// Slope is the median of the slopes (y_j − y_i)/(x_j − x_i) over the
	// pairs with x_i ≠ x_j.
	Slope float64
	// Intercept is the median of y_i − Slope·x_i.
	Intercept float64
	// Lower and Upper bound the confidence interval of Slope (Sen 1968):
	// with N' slopes and S Kendall's statistic, C = z_{1−α/2}·√Var(S),
	// they are the slopes of ranks (N'−C)/2 and (N'+C)/2 + 1 (1-based,
	// interpolated), NaN when those ranks fall outside 1…N'.
	Lower, Upper float64
	// N is the number of finite points and Pairs the number of slopes the
	// fit was taken from (all pairs up to TheilSenMaxPairs, a
	// deterministic sample beyond).
	N, Pairs int
}

// TheilSenMaxPairs is how many pairwise slopes TheilSen computes exactly:
// about 2,000 points. Beyond that it draws this many pairs with a fixed
// seed, so the result is reproducible and the CI ranks are scaled to the
// sample (an approximation whose error is far below the CI's width).
const TheilSenMaxPairs = 2_000_000

// TheilSen fits a line through the finite (x, y) pairs with the Theil–Sen
// estimator and Sen's confidence interval for the slope at the given
// confidence (0 means 0.95). The variance of Kendall's S carries the
// correction for ties in y. It returns an error when fewer than 3 points
// are finite or all x are equal, and panics when the lengths differ.
func TheilSen(x, y []float64, confidence float64) (TheilSenFit, error) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("analysis.TheilSen: len(x) = %d but len(y) = %d", len(x), len(y)))
	}
	if confidence == 0 {
		confidence = 0.95
	}
	if !(confidence > 0 && confidence < 1) {
		return TheilSenFit{}, fmt.Errorf("theil-sen: confidence must be in (0, 1), got %v", confidence)
	}
	var xs, ys []float64
	for i, a := range x {
		if num.Finite(a) && num.Finite(y[i]) {
			xs = append(xs, a)
			ys = append(ys, y[i])
		}
	}
	n := len(xs)
	if n < 3 {
		return TheilSenFit{}, fmt.Errorf("theil-sen: need at least 3 finite points, got %d", n)
	}
	total := n * (n - 1) / 2
	var slopes []float64
	if total <= TheilSenMaxPairs {
		slopes = make([]float64, 0, total)
		for i := range n {
			for j := i + 1; j < n; j++ {
				if dx := xs[j] - xs[i]; dx != 0 {
					slopes = append(slopes, (ys[j]-ys[i])/dx)
				}
			}
		}
	} else {
		rng := rand.New(rand.NewPCG(0x5eed, 0x7e11))
		slopes = make([]float64, 0, TheilSenMaxPairs)
		for range TheilSenMaxPairs {
			i, j := rng.IntN(n), rng.IntN(n-1)
			if j >= i {
				j++
			}
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	m := len(slopes)
	if m == 0 {
		return TheilSenFit{}, errors.New("theil-sen: all x values are equal, the slope is undefined")
	}
	// Ranks are 1-based: the median of m slopes is rank (m+1)/2.
	// scale maps a rank among all pairs to one in the sample.
	scale := 1.0
	if total > TheilSenMaxPairs {
		scale = float64(TheilSenMaxPairs) / float64(total)
	}
	fit := TheilSenFit{N: n, Pairs: m}
	fit.Slope = rankSelect(slopes, float64(m+1)/2)

	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	c := z * math.Sqrt(kendallVar(ys))
	nPairs := float64(m) / scale // N': slopes among all pairs
	fit.Lower = rankSelect(slopes, (nPairs-c)/2*scale)
	fit.Upper = rankSelect(slopes, ((nPairs+c)/2+1)*scale)

	resid := make([]float64, n)
	for i := range xs {
		resid[i] = ys[i] - fit.Slope*xs[i]
	}
	fit.Intercept = order.Quantile(resid, 0.5)
	return fit, nil
}

// rankSelect returns the value of 1-based rank r among xs (reordering xs),
// interpolating linearly between neighbouring ranks; NaN when r is outside
// [1, len(xs)].
func rankSelect(xs []float64, r float64) float64 {
	if !(r >= 1 && r <= float64(len(xs))) {
		return math.NaN()
	}
	if len(xs) == 1 {
		return xs[0]
	}
	return order.Quantile(xs, (r-1)/float64(len(xs)-1))
}

// kendallVar is the variance of Kendall's S under the null hypothesis for
// a series y without ties in time: n(n−1)(2n+5)/18 minus Σ t(t−1)(2t+5)/18
// over the groups of t tied y values.
func kendallVar(y []float64) float64 {
	n := float64(len(y))
	v := n * (n - 1) * (2*n + 5)
	counts := make(map[float64]int, len(y))
	for _, x := range y {
		counts[x]++
	}
	for _, c := range counts {
		if c > 1 {
			t := float64(c)
			v -= t * (t - 1) * (2*t + 5)
		}
	}
	return v / 18
}

// Defaults of DecayConfig.
const (
	DefaultDecayPeakQuantile = 0.99
	DefaultDecayReference    = weekMs
	DefaultDecayMinSlope     = 0.01
	DefaultDecayConfidence   = 0.95
	DefaultDecayCurrent      = hourMs
	DefaultDecayMinEta       = 0.15
)

// DecayConfig configures ThroughputDecay. Zero fields take their defaults.
type DecayConfig struct {
	// Peak is T_peak, the throughput of a healthy replica, in the unit of
	// the series (tokens/s, requests/s). 0 means: estimate it as the
	// PeakQuantile of the throughput over the Reference window.
	Peak float64
	// PeakQuantile is the quantile that stands for the recent peak
	// (default 0.99: the top 1 % is treated as outliers).
	PeakQuantile float64
	// Reference is the span, in milliseconds up to the last sample, over
	// which the peak is estimated (default one week; a shorter series
	// uses all of it).
	Reference int64
	// MinSlope is the least trend of η, in fraction of the peak per day,
	// that counts (default 0.01: one point of the peak per day; a decay
	// rule, which pages someone, defaults to 0.1).
	MinSlope float64
	// Confidence is the level of the slope's interval (default 0.95).
	Confidence float64
	// Current is the span, in milliseconds up to the last sample, whose
	// median η is Decay.EtaCurrent (default one hour).
	Current int64
}

// Decay is the throughput decay of a serving replica.
type Decay struct {
	// Peak is the T_peak used (configured or estimated).
	Peak float64
	// Eta is η(t) = 1 − T_actual(t)/T_peak at each input sample: 0 at the
	// peak, 0.3 when throughput is 30 % below it, negative above it; NaN
	// where the throughput is not finite.
	Eta []float64
	// Trend is the Theil–Sen fit of η against time in days since the first
	// sample: Trend.Slope is the change of η per day (positive: the
	// throughput is decaying), with its confidence interval.
	Trend TheilSenFit
	// EtaCurrent is η now: the median of the finite η over the last
	// Current up to the newest sample; NaN when there is none.
	EtaCurrent float64
	// Significant is true when the interval excludes 0 on the decaying
	// side (Trend.Lower > 0) and Trend.Slope ≥ MinSlope. A recovering
	// throughput is never significant decay.
	Significant bool
	// DayOverDay is the mean η over the last day (last − 1d, last] minus
	// the mean η over the day before it; WeekOverWeek is the mean η over
	// the last day minus that over the same day one week earlier
	// (last − 8d, last − 7d]. Positive means more decay now. NaN when a
	// window holds no finite η.
	DayOverDay, WeekOverWeek float64
}

// ThroughputDecay measures how far the throughput has fallen below its peak
// and whether the fall is trending. t is in unix milliseconds, ascending;
// throughput in any unit (the same as c.Peak). Errors say which input or
// setting is wrong.
func ThroughputDecay(t []int64, throughput []float64, c DecayConfig) (Decay, error) {
	if len(t) != len(throughput) {
		return Decay{}, fmt.Errorf("throughput decay: %d timestamps but %d values", len(t), len(throughput))
	}
	for i := 1; i < len(t); i++ {
		if t[i] < t[i-1] {
			return Decay{}, fmt.Errorf("throughput decay: timestamps must be ascending, t[%d]=%d < t[%d]=%d", i, t[i], i-1, t[i-1])
		}
	}
	if c.PeakQuantile == 0 {
		c.PeakQuantile = DefaultDecayPeakQuantile
	}
	if c.Reference == 0 {
		c.Reference = DefaultDecayReference
	}
	if c.MinSlope == 0 {
		c.MinSlope = DefaultDecayMinSlope
	}
	if c.Confidence == 0 {
		c.Confidence = DefaultDecayConfidence
	}
	if c.Current == 0 {
		c.Current = DefaultDecayCurrent
	}
	switch {
	case c.Peak < 0 || math.IsNaN(c.Peak) || math.IsInf(c.Peak, 0):
		return Decay{}, fmt.Errorf("throughput decay: peak must be a finite number ≥ 0 (0: estimate it), got %v", c.Peak)
	case !(c.PeakQuantile > 0 && c.PeakQuantile <= 1):
		return Decay{}, fmt.Errorf("throughput decay: peak quantile must be in (0, 1], got %v", c.PeakQuantile)
	case c.Reference < 0:
		return Decay{}, fmt.Errorf("throughput decay: reference window must be > 0 ms, got %d", c.Reference)
	case c.Current < 0:
		return Decay{}, fmt.Errorf("throughput decay: the span of the current η must be > 0 ms, got %d", c.Current)
	}
	if len(t) == 0 {
		return Decay{}, errors.New("throughput decay: no samples")
	}
	last := t[len(t)-1]
	peak := c.Peak
	if peak == 0 {
		var ref []float64
		for i, x := range throughput {
			if t[i] > last-c.Reference && num.Finite(x) {
				ref = append(ref, x)
			}
		}
		if len(ref) == 0 {
			return Decay{}, errors.New("throughput decay: no finite throughput in the reference window to estimate the peak from")
		}
		peak = order.Quantile(ref, c.PeakQuantile)
		if !(peak > 0) {
			return Decay{}, fmt.Errorf("throughput decay: the estimated peak (q%v over the reference window) is %v; set Peak", c.PeakQuantile, peak)
		}
	}
	d := Decay{Peak: peak, Eta: make([]float64, len(t))}
	days := make([]float64, len(t))
	for i, x := range throughput {
		d.Eta[i] = 1 - x/peak
		if !num.Finite(x) {
			d.Eta[i] = math.NaN()
		}
		days[i] = float64(t[i]-t[0]) / float64(dayMs)
	}
	fit, err := TheilSen(days, d.Eta, c.Confidence)
	if err != nil {
		return Decay{}, fmt.Errorf("throughput decay: trend of η: %w", err)
	}
	d.Trend = fit
	d.Significant = fit.Lower > 0 && fit.Slope >= c.MinSlope
	var recent []float64
	for i := len(t) - 1; i >= 0 && t[i] > last-c.Current; i-- {
		if num.Finite(d.Eta[i]) {
			recent = append(recent, d.Eta[i])
		}
	}
	d.EtaCurrent = order.Median(recent)
	now := windowMean(t, d.Eta, last-dayMs, last)
	d.DayOverDay = now - windowMean(t, d.Eta, last-2*dayMs, last-dayMs)
	d.WeekOverWeek = now - windowMean(t, d.Eta, last-weekMs-dayMs, last-weekMs)
	return d, nil
}

// windowMean is the mean of the finite v with t in (from, to]; NaN if none.
func windowMean(t []int64, v []float64, from, to int64) float64 {
	sum, n := 0.0, 0
	for i, x := range v {
		if t[i] > from && t[i] <= to && num.Finite(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
