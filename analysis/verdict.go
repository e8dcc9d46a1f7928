package analysis

import (
	"math"
	"slices"
	"sort"

	"github.com/inferwatch/inferwatch/internal/num"
	"github.com/inferwatch/inferwatch/internal/order"
)

// The verdicts of the window analyses: what the daemon's window rules and
// the offline commands decide from the statistics of one window. Each is a
// pure function of the window's samples and its thresholds; the caller
// picks the window.

// Verdict is a window analysis' judgement of one series (or pair) at one
// time: the figure it judged (r, η, a concurrency, a peak latency, an
// imbalance index), a score that is at least 1 when the window is a
// finding, the expected value and band where there is one, and the
// severity when the analysis grades it ("" leaves it to the score).
type Verdict struct {
	Value float64
	Result
	Severity string
}

// noVerdict is the verdict of a window that cannot be judged.
func noVerdict() Verdict {
	return Verdict{Value: math.NaN(), Result: Result{Expected: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}
}

// Median is the median of the finite values of xs (xs is not changed);
// NaN when there are none.
func Median(xs []float64) float64 { return order.Median(finite(xs)) }

// Mean is the mean of the finite values of xs; NaN when there are none.
func Mean(xs []float64) float64 {
	m, _ := meanFinite(xs)
	return m
}

// DefaultJitterMinPoints is the least number of samples a jitter window
// needs for its standard deviation to count: a standard deviation of two or
// three samples is mostly noise.
const DefaultJitterMinPoints = 5

// CorrelateConfig configures Correlate.
type CorrelateConfig struct {
	// Step is the width, in milliseconds, of the buckets both series are
	// averaged into before they are compared (> 0).
	Step int64
	// From is the exclusive lower bound, in unix milliseconds, of the
	// samples compared: y's samples before it serve only as the history of
	// its jitter. math.MinInt64 compares everything.
	From int64
	// YJitter, when > 0, compares x with the jitter of y instead of y: its
	// standard deviation over the trailing YJitter milliseconds at each
	// sample, defined where the window holds JitterMinPoints samples
	// (default DefaultJitterMinPoints).
	YJitter         int64
	JitterMinPoints int
	// MaxLag is the largest lag, in buckets either way, of the lag search
	// (0: lag 0 only); it is bounded by the span of the series.
	MaxLag int
	// MinPairs is the least number of pairs a lag needs to compete
	// (default DefaultCouplingMinN).
	MinPairs int
}

// Correlated is what Correlate measured.
type Correlated struct {
	// Pearson and Spearman are the correlations at lag 0 over the buckets
	// where both series have a value.
	Pearson, Spearman Correlation
	// Lag is the strongest lagged correlation (see CrossCorrelation),
	// searched over each series' own buckets, so that a bucket one series
	// lacks does not shift the other; MaxLag the largest lag tried.
	Lag    LagCorrelation
	MaxLag int
	// XMax is the largest x of the compared buckets (NaN when none).
	XMax float64
	// JitterDefined is how many of y's samples have a defined jitter
	// (with YJitter; otherwise y's finite samples).
	JitterDefined int
}

// Correlate compares x with y (or y's jitter) on a common grid of buckets:
// Pearson's and Spearman's correlation at lag 0 and the strongest lag.
// Timestamps are unix milliseconds, ascending.
func Correlate(xt []int64, xv []float64, yt []int64, yv []float64, c CorrelateConfig) Correlated {
	if c.MinPairs == 0 {
		c.MinPairs = DefaultCouplingMinN
	}
	if c.JitterMinPoints == 0 {
		c.JitterMinPoints = DefaultJitterMinPoints
	}
	if c.YJitter > 0 {
		yv = RollingStd(yt, yv, c.YJitter, c.JitterMinPoints)
	}
	yt, yv = finitePairs(yt, yv)
	var out Correlated
	out.JitterDefined = len(yv)
	i := sort.Search(len(xt), func(i int) bool { return xt[i] > c.From })
	xt, xv = xt[i:], xv[i:]
	j := sort.Search(len(yt), func(i int) bool { return yt[i] > c.From })
	yt, yv = yt[j:], yv[j:]

	_, x, y := Align(xt, xv, yt, yv, c.Step)
	out.Pearson, out.Spearman = Pearson(x, y), Spearman(x, y)
	out.XMax = math.NaN()
	if len(x) > 0 {
		out.XMax = slices.Max(x)
	}
	rxt, rxv := Resample(xt, xv, c.Step)
	ryt, ryv := Resample(yt, yv, c.Step)
	maxLag := max(c.MaxLag, 0)
	if len(rxt) > 0 && len(ryt) > 0 {
		// A lag longer than both series together pairs nothing.
		span := (max(rxt[len(rxt)-1], ryt[len(ryt)-1]) - min(rxt[0], ryt[0])) / c.Step
		maxLag = int(min(int64(maxLag), span))
	}
	out.MaxLag = maxLag
	out.Lag = CrossCorrelation(rxt, rxv, ryt, ryv, c.Step, maxLag, c.MinPairs)
	return out
}

// finitePairs returns the samples whose value is finite, in new slices.
func finitePairs(t []int64, v []float64) ([]int64, []float64) {
	ot, ov := make([]int64, 0, len(t)), make([]float64, 0, len(v))
	for i, x := range v {
		if num.Finite(x) {
			ot, ov = append(ot, t[i]), append(ov, x)
		}
	}
	return ot, ov
}

// JudgeCoupling is the verdict on a correlation: the score is |r| over
// MinAbsR, held below 1 unless the pair is coupled by th and, when xAbove
// > 0, x reached xAbove in the window ("y got noisy while x saturated"
// rather than "the two move together"). The band is ±MinAbsR around 0.
func JudgeCoupling(c Correlated, th CouplingThresholds, xAbove float64) Verdict {
	if th.MinAbsR == 0 {
		th.MinAbsR = DefaultCouplingMinAbsR
	}
	j := Judge(c.Pearson, th)
	coupled := j.Coupled && (xAbove == 0 || c.XMax >= xAbove)
	score := math.Abs(c.Pearson.R) / th.MinAbsR
	if math.IsNaN(score) {
		score = 0
	}
	if !coupled {
		score = min(score, 0.999)
	}
	return Verdict{Value: c.Pearson.R, Result: Result{Score: score, Expected: 0, Lower: -th.MinAbsR, Upper: th.MinAbsR, Ready: true}}
}

// JudgeDecay is the verdict on a throughput decay: the score is the smaller
// of the trend over MinSlope and the current η over minEta, held below 1
// unless the trend is significant and η is at least minEta. Zero settings
// take their defaults.
func JudgeDecay(d Decay, c DecayConfig, minEta float64) Verdict {
	if c.MinSlope == 0 {
		c.MinSlope = DefaultDecayMinSlope
	}
	if minEta == 0 {
		minEta = DefaultDecayMinEta
	}
	score := min(d.Trend.Slope/c.MinSlope, d.EtaCurrent/minEta)
	if math.IsNaN(score) || score < 0 {
		score = 0
	}
	if !d.Significant || !(d.EtaCurrent >= minEta) {
		score = min(score, 0.999)
	}
	return Verdict{Value: d.EtaCurrent, Result: Result{Score: score, Expected: 0, Lower: math.NaN(), Upper: minEta, Ready: true}}
}

// Defaults of KneeJudgement.
const (
	DefaultKneeMargin = 1.0
	// DefaultKneeMinStrength is the least Kneedle strength (the height of
	// the knee above the chord of the unit-scaled curve) taken as a real
	// knee: below it the curve is nearly straight and its "knee" is noise.
	DefaultKneeMinStrength = 0.1
	// KneeMinPoints is the least number of points a curve needs.
	KneeMinPoints = 10
)

// KneeJudgement configures JudgeKnee. Zero fields take their defaults.
type KneeJudgement struct {
	KneeConfig
	// Margin multiplies the knee concurrency: the limit the current
	// concurrency is judged against (default 1).
	Margin float64
	// MinStrength is the least Kneedle strength that counts as a knee.
	MinStrength float64
}

// KneeVerdict is JudgeKnee's result.
type KneeVerdict struct {
	Verdict
	Knee Knee
	// Current is the median concurrency of the recent samples; N the
	// points of the curve.
	Current float64
	N       int
}

// JudgeKnee finds the knee of the QPS-against-concurrency curve of a
// window (t, conc and qps aligned on one grid) and judges the median
// concurrency of the samples after recentFrom against Margin × the knee:
// at or past it the score reaches 1. ok is false when the curve has too few
// points or no knee inside the measured range.
func JudgeKnee(t []int64, conc, qps []float64, recentFrom int64, c KneeJudgement) (KneeVerdict, bool) {
	if c.Margin == 0 {
		c.Margin = DefaultKneeMargin
	}
	if c.MinStrength == 0 {
		c.MinStrength = DefaultKneeMinStrength
	}
	v := KneeVerdict{Verdict: noVerdict(), N: len(t)}
	if len(t) < KneeMinPoints {
		return v, false
	}
	k, err := FindKnee(conc, qps, c.KneeConfig)
	if err != nil || !k.Inside || (k.Method == KneeKneedle && k.Strength < c.MinStrength) || !(k.Concurrency > 0) {
		return v, false
	}
	i := sort.Search(len(t), func(i int) bool { return t[i] > recentFrom })
	v.Knee, v.Current = k, Median(conc[i:])
	limit := k.Concurrency * c.Margin
	v.Value = v.Current
	v.Result = Result{Score: v.Current / limit, Expected: k.Concurrency, Lower: math.NaN(), Upper: limit, Ready: true}
	if math.IsNaN(v.Score) {
		v.Score = 0
	}
	return v, true
}

// SpikinessMinBaseline is the least number of baseline samples a spikiness
// verdict needs: a P999 of fewer is the maximum.
const SpikinessMinBaseline = 100

// SpikinessVerdict is JudgeSpikiness' result.
type SpikinessVerdict struct {
	Verdict
	Baseline SpikeBaseline
	Spikes   Spikiness
	// Peak is the highest recent latency, Level2Above the latency above
	// which a spike is level 2, Level the highest level reached (0, 1, 2).
	Peak, Level2Above float64
	Level             int
}

// JudgeSpikiness compares the recent latencies with the P99 and P999 of the
// baseline: the score is the recent peak over P99 (level 1, a warning),
// and at least the peak over factor × P999 once a recent latency is above
// it (level 2, critical). ok is false with fewer than SpikinessMinBaseline
// baseline samples or no recent one.
func JudgeSpikiness(base, recent []float64, factor float64) (SpikinessVerdict, bool) {
	v := SpikinessVerdict{Verdict: noVerdict()}
	if len(base) < SpikinessMinBaseline || len(recent) == 0 {
		return v, false
	}
	bl := BaselineOf(base)
	if factor != 0 {
		bl.Factor = factor
	}
	sp := Spikes(recent, bl)
	peak := math.Inf(-1)
	for _, x := range recent {
		if num.Finite(x) {
			peak = max(peak, x)
		}
	}
	v.Baseline, v.Spikes, v.Peak, v.Level2Above = bl, sp, peak, bl.Factor*bl.P999
	severity := "warning"
	score := peak / bl.P99
	switch {
	case sp.Level2 > 0:
		v.Level, severity = 2, "critical"
		score = max(score, peak/v.Level2Above)
	case sp.Level1 > 0:
		v.Level = 1
	}
	if math.IsNaN(score) || math.IsInf(score, 0) || score < 0 {
		score = 0
	}
	v.Value, v.Severity = peak, severity
	v.Result = Result{Score: score, Expected: bl.P99, Lower: math.NaN(), Upper: bl.P99, Ready: true}
	return v, true
}

// ImbalanceVerdict is JudgeImbalance's result.
type ImbalanceVerdict struct {
	Verdict
	Imbalance Imbalance
}

// JudgeImbalance judges the load imbalance index of two sides over a
// window: the score is LII over Warn, the severity critical from Critical.
// ok is false when the index is undefined (a side without a finite sample,
// a negative mean) or the thresholds are wrong.
func JudgeImbalance(a, b []float64, th ImbalanceThresholds) (ImbalanceVerdict, bool) {
	if th.Warn == 0 {
		th.Warn = DefaultImbalanceWarn
	}
	v := ImbalanceVerdict{Verdict: noVerdict()}
	im, err := LoadImbalance(a, b, th)
	if err != nil || math.IsNaN(im.LII) {
		return v, false
	}
	v.Imbalance, v.Value, v.Severity = im, im.LII, "warning"
	if im.Level >= 2 {
		v.Severity = "critical"
	}
	v.Result = Result{Score: im.LII / th.Warn, Expected: 0, Lower: math.NaN(), Upper: th.Warn, Ready: true}
	return v, true
}

// MostAndLeast returns the indexes of the largest and the smallest of
// means, ignoring NaN; both are −1 when fewer than two are finite. Ties go
// to the earlier index.
func MostAndLeast(means []float64) (most, least int) {
	most, least = -1, -1
	n := 0
	for i, m := range means {
		if !num.Finite(m) {
			continue
		}
		n++
		if most < 0 || m > means[most] {
			most = i
		}
		if least < 0 || m < means[least] {
			least = i
		}
	}
	if n < 2 {
		return -1, -1
	}
	return most, least
}
