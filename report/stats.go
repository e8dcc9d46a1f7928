package report

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/inferwatch/inferwatch/internal/order"
)

// This file holds the report's own statistics: pure functions over
// samples, with no I/O and no clock, like those of package analysis.

// Bucket is one cumulative bucket of a Prometheus histogram: the count of
// observations at or below UpperBound (+Inf for the last).
type Bucket struct {
	UpperBound float64
	Count      float64
}

// HistogramQuantile is the q-quantile of a histogram's cumulative buckets
// as Prometheus' histogram_quantile computes it: linear interpolation
// within the bucket the rank falls in, the lower bound of the first bucket
// taken as 0 when it is positive, and the highest finite bound when the
// rank falls in the +Inf bucket. It is NaN when there are no observations,
// no +Inf bucket, fewer than two buckets, or q is outside [0, 1]. Buckets
// need not be sorted; counts that decrease with the bound (a scrape of
// buckets taken at different instants) are raised to be monotone, as
// Prometheus does.
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if q < 0 || q > 1 || math.IsNaN(q) || len(buckets) < 2 {
		return math.NaN()
	}
	bs := slices.Clone(buckets)
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	if !math.IsInf(bs[len(bs)-1].UpperBound, 1) {
		return math.NaN()
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].Count < bs[i-1].Count || math.IsNaN(bs[i].Count) {
			bs[i].Count = bs[i-1].Count
		}
	}
	total := bs[len(bs)-1].Count
	if !(total > 0) {
		return math.NaN()
	}
	rank := q * total
	i := sort.Search(len(bs)-1, func(i int) bool { return bs[i].Count >= rank })
	if i == len(bs)-1 {
		return bs[len(bs)-2].UpperBound
	}
	if i == 0 && bs[0].UpperBound <= 0 {
		return bs[0].UpperBound
	}
	lo, loCount := 0.0, 0.0
	if i > 0 {
		lo, loCount = bs[i-1].UpperBound, bs[i-1].Count
	}
	hi, hiCount := bs[i].UpperBound, bs[i].Count
	if hiCount == loCount {
		return hi
	}
	return lo + (hi-lo)*(rank-loCount)/(hiCount-loCount)
}

// RelChange is (now − before)/before: NaN when either is not finite or
// before is 0.
func RelChange(now, before float64) float64 {
	if !finite(now) || !finite(before) || before == 0 {
		return math.NaN()
	}
	return (now - before) / before
}

// BurnRate is how fast an error ratio spends the error budget of an
// objective (a share of good events in (0, 1)): the error ratio over the
// budget 1 − objective. 1 spends exactly the budget over the SLO window;
// 14.4 over an hour spends 2 % of a 30-day budget (the fast-burn page of
// the Google SRE workbook, used by Sloth and Pyrra). NaN when the ratio is
// undefined.
func BurnRate(errorRatio, objective float64) float64 {
	if !finite(errorRatio) || !(objective > 0 && objective < 1) {
		return math.NaN()
	}
	return errorRatio / (1 - objective)
}

// BudgetSpent is the share of the error budget an error ratio over the
// whole SLO window has used: 1 means all of it, more means the objective
// was missed.
func BudgetSpent(errorRatio, objective float64) float64 { return BurnRate(errorRatio, objective) }

// Ratio is good/total as an error ratio 1 − good/total, NaN when total is
// not positive. A good count above the total (counters scraped at
// different instants) is clamped to an error ratio of 0.
func ErrorRatio(good, total float64) float64 {
	if !finite(good) || !finite(total) || total <= 0 {
		return math.NaN()
	}
	return math.Max(0, 1-good/total)
}

// Span is a time interval [Start, End].
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Gaps returns the intervals of [from, to] where t (unix milliseconds,
// ascending) has no sample for longer than minGap: a series that starts
// late, stops early or breaks in the middle.
func Gaps(t []int64, from, to time.Time, minGap time.Duration) []Span {
	var out []Span
	prev := from.UnixMilli()
	g := minGap.Milliseconds()
	add := func(a, b int64) {
		if b-a > g {
			out = append(out, Span{Start: time.UnixMilli(a).UTC(), End: time.UnixMilli(b).UTC()})
		}
	}
	for _, ts := range t {
		if ts < from.UnixMilli() || ts > to.UnixMilli() {
			continue
		}
		add(prev, ts)
		prev = ts
	}
	add(prev, to.UnixMilli())
	return out
}

// Coverage is the share of [from, to] not inside gaps.
func Coverage(gaps []Span, from, to time.Time) float64 {
	total := to.Sub(from)
	if total <= 0 {
		return math.NaN()
	}
	missing := time.Duration(0)
	for _, g := range gaps {
		missing += g.End.Sub(g.Start)
	}
	return math.Max(0, 1-float64(missing)/float64(total))
}

// Summary is the mean and the peak of the finite samples of a series
// within [from, to].
type Summary struct {
	N        int
	Mean     float64
	Peak     float64
	PeakTime time.Time
}

// Summarize is the Summary of the samples of t, v within [from, to]; Mean
// and Peak are NaN when none is finite.
func Summarize(t []int64, v []float64, from, to time.Time) Summary {
	s := Summary{Mean: math.NaN(), Peak: math.NaN()}
	var sum float64
	for i, ts := range t {
		if ts < from.UnixMilli() || ts > to.UnixMilli() || !finite(v[i]) {
			continue
		}
		s.N++
		sum += v[i]
		if s.N == 1 || v[i] > s.Peak {
			s.Peak, s.PeakTime = v[i], time.UnixMilli(ts).UTC()
		}
	}
	if s.N > 0 {
		s.Mean = sum / float64(s.N)
	}
	return s
}

// quantileOf is the q-quantile (type 7) of the finite values of v; NaN when
// there are none.
func quantileOf(v []float64, q float64) float64 {
	f := finiteValues(v)
	if len(f) == 0 {
		return math.NaN()
	}
	return order.Quantile(f, q)
}

// ForecastOutcome is one forecast checked against what came: its mean and
// interval at the target, the naive forecast (the value at its origin) and
// the actual value.
type ForecastOutcome struct {
	Mean, Lower, Upper, Naive, Actual float64
}

// ForecastAccuracy is the accuracy of a set of forecasts: their mean
// absolute error, that of the naive forecast on the same origins, the
// ratio of the two (below 1: better than naive) and the share of actuals
// inside the interval.
type ForecastAccuracy struct {
	N                           int
	MAE, NaiveMAE, Ratio, Cover float64
	AboveUpper, LongestAboveRun int
}

// ScoreForecasts scores outcomes in time order; outcomes with a non-finite
// actual or mean are skipped. LongestAboveRun is the longest run of
// consecutive outcomes whose actual lay above the upper bound.
func ScoreForecasts(outs []ForecastOutcome) ForecastAccuracy {
	a := ForecastAccuracy{MAE: math.NaN(), NaiveMAE: math.NaN(), Ratio: math.NaN(), Cover: math.NaN()}
	var e, ne float64
	var naiveN, covered, banded, run int
	for _, o := range outs {
		if !finite(o.Actual) || !finite(o.Mean) {
			continue
		}
		a.N++
		e += math.Abs(o.Mean - o.Actual)
		if finite(o.Naive) {
			ne += math.Abs(o.Naive - o.Actual)
			naiveN++
		}
		if finite(o.Lower) && finite(o.Upper) {
			banded++
			if o.Actual >= o.Lower && o.Actual <= o.Upper {
				covered++
			}
		}
		if finite(o.Upper) && o.Actual > o.Upper {
			a.AboveUpper++
			run++
			a.LongestAboveRun = max(a.LongestAboveRun, run)
		} else {
			run = 0
		}
	}
	if a.N > 0 {
		a.MAE = e / float64(a.N)
	}
	if naiveN > 0 && naiveN == a.N {
		a.NaiveMAE = ne / float64(naiveN)
		if a.NaiveMAE > 0 {
			a.Ratio = a.MAE / a.NaiveMAE
		}
	}
	if banded > 0 {
		a.Cover = float64(covered) / float64(banded)
	}
	return a
}

// ValueAt returns the sample of t, v at ts, or the nearest one within tol;
// NaN when there is none.
func ValueAt(t []int64, v []float64, ts int64, tol int64) float64 {
	i := sort.Search(len(t), func(i int) bool { return t[i] >= ts })
	best, bestD := math.NaN(), tol+1
	for _, j := range []int{i - 1, i} {
		if j < 0 || j >= len(t) || !finite(v[j]) {
			continue
		}
		d := t[j] - ts
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = v[j], d
		}
	}
	return best
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func finiteValues(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if finite(x) {
			out = append(out, x)
		}
	}
	return out
}
