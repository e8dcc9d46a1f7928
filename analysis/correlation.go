package analysis

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/inferwatch/inferwatch/internal/num"
)

// Correlation is a correlation coefficient with its significance.
type Correlation struct {
	// R is the coefficient in [−1, 1]; NaN when it is undefined (fewer
	// than 2 pairs, or a series that is constant over the pairs).
	R float64
	// P is the two-sided p-value of the null hypothesis "no correlation",
	// from Student's t distribution with N−2 degrees of freedom; NaN when
	// R is NaN or N < 3.
	P float64
	// N is the number of pairs used: those where both values are finite.
	N int
}

// Pearson returns the Pearson product-moment correlation of x and y over the
// pairs where both values are finite (NaN, ±Inf and staleness markers drop
// the pair). It is computed in two passes (means, then centred sums), which
// keeps full precision for series with a large offset. It panics when x and
// y differ in length.
func Pearson(x, y []float64) Correlation {
	if len(x) != len(y) {
		panic(fmt.Sprintf("analysis.Pearson: len(x) = %d but len(y) = %d", len(x), len(y)))
	}
	var sx, sy float64
	n := 0
	for i, a := range x {
		b := y[i]
		if num.Finite(a) && num.Finite(b) {
			sx += a
			sy += b
			n++
		}
	}
	if n < 2 {
		return Correlation{R: math.NaN(), P: math.NaN(), N: n}
	}
	mx, my := sx/float64(n), sy/float64(n)
	var sxy, sxx, syy float64
	if n == len(x) {
		// Every pair is finite: no checks in the second pass.
		y = y[:len(x)]
		for i, a := range x {
			dx, dy := a-mx, y[i]-my
			sxy += dx * dy
			sxx += dx * dx
			syy += dy * dy
		}
	} else {
		for i, a := range x {
			b := y[i]
			if num.Finite(a) && num.Finite(b) {
				dx, dy := a-mx, b-my
				sxy += dx * dy
				sxx += dx * dx
				syy += dy * dy
			}
		}
	}
	return withP(clampR(sxy/math.Sqrt(sxx*syy)), n)
}

// Spearman returns Spearman's rank correlation of x and y over the pairs
// where both values are finite: the Pearson correlation of the ranks, where
// tied values share the average of the ranks they span. The p-value uses
// the same t approximation as Pearson, which is accurate for N ≥ 10 or so.
// It panics when x and y differ in length.
func Spearman(x, y []float64) Correlation {
	if len(x) != len(y) {
		panic(fmt.Sprintf("analysis.Spearman: len(x) = %d but len(y) = %d", len(x), len(y)))
	}
	fx := make([]float64, 0, len(x))
	fy := make([]float64, 0, len(y))
	for i, a := range x {
		if num.Finite(a) && num.Finite(y[i]) {
			fx = append(fx, a)
			fy = append(fy, y[i])
		}
	}
	return Pearson(Ranks(fx), Ranks(fy))
}

// Ranks returns the 1-based ranks of xs in ascending order, ties sharing the
// average of the ranks they span: Ranks([10 20 20 30]) = [1 2.5 2.5 4].
// NaNs rank after every other value (as in sort order); callers that want
// them out drop them first.
func Ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpFloat(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && cmpFloat(xs[idx[j]], xs[idx[i]]) == 0 {
			j++
		}
		// Positions i..j−1 hold ranks i+1..j; their average is (i+1+j)/2.
		avg := float64(i+1+j) / 2
		for _, k := range idx[i:j] {
			r[k] = avg
		}
		i = j
	}
	return r
}

// cmpFloat orders floats ascending with NaNs last and all NaNs equal.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	}
	return -1
}

// CorrelationPValue is the two-sided p-value of a correlation coefficient r
// computed from n pairs under the null hypothesis of no correlation:
// t = r·√((n−2)/(1−r²)) follows Student's t with n−2 degrees of freedom and
// p = 2·P(T > |t|). It is NaN when n < 3 or r is not in [−1, 1], and 0 when
// |r| = 1.
func CorrelationPValue(r float64, n int) float64 {
	if n < 3 || !(r >= -1 && r <= 1) {
		return math.NaN()
	}
	if math.Abs(r) == 1 {
		return 0
	}
	df := float64(n - 2)
	t := math.Abs(r) * math.Sqrt(df/(1-r*r))
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

// clampR keeps rounding from pushing |r| past 1. NaN stays NaN.
func clampR(r float64) float64 {
	if r > 1 {
		return 1
	}
	if r < -1 {
		return -1
	}
	return r
}

func withP(r float64, n int) Correlation {
	return Correlation{R: r, P: CorrelationPValue(r, n), N: n}
}

// RollingCorrelation returns, for each index i, the Pearson r of the pairs
// at indexes i−w+1 … i (a causal window of w points; pairs with a
// non-finite value are skipped inside the window). It is NaN for i < w−1
// and where the window holds fewer than 3 finite pairs or a constant series.
// x and y should be on a common grid (see Align). It costs O(len·w) and
// panics when the lengths differ or w < 2.
func RollingCorrelation(x, y []float64, w int) []float64 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("analysis.RollingCorrelation: len(x) = %d but len(y) = %d", len(x), len(y)))
	}
	if w < 2 {
		panic(fmt.Sprintf("analysis.RollingCorrelation: window must be ≥ 2 points, got %d", w))
	}
	out := make([]float64, len(x))
	for i := range out {
		out[i] = math.NaN()
		if i < w-1 {
			continue
		}
		if c := Pearson(x[i-w+1:i+1], y[i-w+1:i+1]); c.N >= 3 {
			out[i] = c.R
		}
	}
	return out
}

// LagCorrelation is the result of CrossCorrelation.
type LagCorrelation struct {
	// Lag is the lag, in steps, of the strongest |r|. Sign convention: at
	// lag k, x at time t is paired with y at time t + k·step, so a
	// positive lag means y follows x (x leads) and a negative lag means x
	// follows y. 0 when no lag had enough pairs.
	Lag int
	// Correlation is the Pearson correlation at Lag; R is NaN when no lag
	// had enough pairs.
	Correlation
	// ByLag holds r for lags −MaxLag … +MaxLag (index k+MaxLag); NaN where
	// fewer than MinPairs pairs matched or a side was constant.
	ByLag []float64
	// MaxLag is the largest |lag| tried.
	MaxLag int
}

// CrossCorrelation computes the lagged Pearson correlation of two series on
// the grid of step (each ascending, at multiples of step, gaps allowed — as
// Resample and Align return them; the two may be sampled differently, e.g.
// a dense utilisation series and a sparse latency series) for every lag in
// −maxLag … +maxLag, pairing x(t) with y(t + lag·step) by timestamp. Only
// lags with at least minPairs matched pairs (at least 3; 0 means 30)
// compete, and the one with the strongest |r| wins; ties go to the smaller
// |lag|, then to the negative one. It costs O((len(x)+len(y))·maxLag) and
// panics when a series' lengths differ, step ≤ 0 or maxLag < 0.
func CrossCorrelation(xt []int64, x []float64, yt []int64, y []float64, step int64, maxLag, minPairs int) LagCorrelation {
	if len(xt) != len(x) || len(yt) != len(y) {
		panic(fmt.Sprintf("analysis.CrossCorrelation: lengths differ: xt %d, x %d, yt %d, y %d", len(xt), len(x), len(yt), len(y)))
	}
	if step <= 0 || maxLag < 0 {
		panic(fmt.Sprintf("analysis.CrossCorrelation: need step > 0 and maxLag ≥ 0, got step %d, maxLag %d", step, maxLag))
	}
	if minPairs == 0 {
		minPairs = DefaultCouplingMinN
	}
	minPairs = max(minPairs, 3)
	res := LagCorrelation{
		Correlation: Correlation{R: math.NaN(), P: math.NaN()},
		ByLag:       make([]float64, 2*maxLag+1),
		MaxLag:      maxLag,
	}
	n := min(len(x), len(y))
	xs := make([]float64, 0, n)
	ys := make([]float64, 0, n)
	best := -1.0
	for _, lag := range lagOrder(maxLag) {
		xs, ys = xs[:0], ys[:0]
		shift := int64(lag) * step
		j := 0
		for i, ti := range xt {
			want := ti + shift
			for j < len(yt) && yt[j] < want {
				j++
			}
			if j == len(yt) {
				break
			}
			if yt[j] == want {
				xs = append(xs, x[i])
				ys = append(ys, y[j])
			}
		}
		c := Pearson(xs, ys)
		res.ByLag[lag+maxLag] = math.NaN()
		if c.N < minPairs || math.IsNaN(c.R) {
			continue
		}
		res.ByLag[lag+maxLag] = c.R
		if a := math.Abs(c.R); a > best {
			best = a
			res.Lag = lag
			res.Correlation = c
		}
	}
	return res
}

// lagOrder lists 0, −1, 1, −2, 2, … so that a strict "better than" keeps
// the smaller |lag| on ties, and the negative one of two equal |lag|.
func lagOrder(maxLag int) []int {
	out := make([]int, 0, 2*maxLag+1)
	out = append(out, 0)
	for k := 1; k <= maxLag; k++ {
		out = append(out, -k, k)
	}
	return out
}

// Defaults of CouplingThresholds.
const (
	DefaultCouplingMinAbsR = 0.5
	DefaultCouplingMaxP    = 0.01
	DefaultCouplingMinN    = 30
)

// CouplingThresholds decide when two series count as coupled. Zero fields
// take their defaults.
type CouplingThresholds struct {
	// MinAbsR is the least |r| that counts (default 0.5: a "large" effect
	// in Cohen's terms, one series explains ≥ 25 % of the other's
	// variance).
	MinAbsR float64
	// MaxP is the p-value the correlation must be below (default 0.01).
	MaxP float64
	// MinN is the least number of pairs (default 30: below it a single
	// burst can make |r| large and the t approximation of Spearman's p is
	// rough).
	MinN int
}

// Coupling is the verdict on one correlation.
type Coupling struct {
	Correlation
	// Coupled is true when N ≥ MinN, |R| ≥ MinAbsR and P < MaxP.
	Coupled bool
	// Reason says which test decided, e.g. "n=12 < 30" or
	// "|r|=0.31 < 0.5"; "coupled" when all passed.
	Reason string
}

// Judge applies the thresholds th (zero fields take their defaults) to c.
func Judge(c Correlation, th CouplingThresholds) Coupling {
	if th.MinAbsR == 0 {
		th.MinAbsR = DefaultCouplingMinAbsR
	}
	if th.MaxP == 0 {
		th.MaxP = DefaultCouplingMaxP
	}
	if th.MinN == 0 {
		th.MinN = DefaultCouplingMinN
	}
	v := Coupling{Correlation: c}
	switch {
	case c.N < th.MinN:
		v.Reason = fmt.Sprintf("n=%d < %d", c.N, th.MinN)
	case math.IsNaN(c.R):
		v.Reason = "r undefined (a constant series)"
	case math.Abs(c.R) < th.MinAbsR:
		v.Reason = fmt.Sprintf("|r|=%.3g < %g", math.Abs(c.R), th.MinAbsR)
	case !(c.P < th.MaxP):
		v.Reason = fmt.Sprintf("p=%.3g ≥ %g", c.P, th.MaxP)
	default:
		v.Coupled = true
		v.Reason = "coupled"
	}
	return v
}

// PairwisePearson calls fn with the Pearson correlation of every pair
// series[i], series[j] with i < j, in order of i then j. All series must
// have the same length (it panics otherwise): they are on one grid.
//
// Each series is centred and scaled to unit norm once, so a pair costs one
// dot product plus the p-value. A series holding a non-finite value cannot
// be prepared that way (its pairs drop different points); its pairs fall
// back to Pearson.
func PairwisePearson(series [][]float64, fn func(i, j int, c Correlation)) {
	if len(series) == 0 {
		return
	}
	n := len(series[0])
	z := make([][]float64, len(series)) // nil: use Pearson
	for i, s := range series {
		if len(s) != n {
			panic(fmt.Sprintf("analysis.PairwisePearson: series %d has %d points, series 0 has %d", i, len(s), n))
		}
		z[i] = standardize(s)
	}
	for i := range series {
		for j := i + 1; j < len(series); j++ {
			if z[i] == nil || z[j] == nil {
				fn(i, j, Pearson(series[i], series[j]))
				continue
			}
			if n < 2 || z[i][0] != z[i][0] || z[j][0] != z[j][0] {
				// A constant series: r is undefined.
				fn(i, j, Correlation{R: math.NaN(), P: math.NaN(), N: n})
				continue
			}
			fn(i, j, withP(clampR(dot(z[i], z[j])), n))
		}
	}
}

// standardize returns (x − mean)/‖x − mean‖, or nil when x holds a
// non-finite value. A constant series gives a slice of NaNs.
func standardize(x []float64) []float64 {
	sum := 0.0
	for _, v := range x {
		if !num.Finite(v) {
			return nil
		}
		sum += v
	}
	z := make([]float64, len(x))
	if len(x) == 0 {
		return z
	}
	m := sum / float64(len(x))
	ss := 0.0
	for i, v := range x {
		z[i] = v - m
		ss += z[i] * z[i]
	}
	inv := 1 / math.Sqrt(ss) // +Inf for a constant series: 0·Inf = NaN
	for i := range z {
		z[i] *= inv
	}
	return z
}

// dot is Σ a[i]·b[i] with four accumulators, which lets the CPU overlap the
// additions.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
