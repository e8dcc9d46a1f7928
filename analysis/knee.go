package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/inferwatch/inferwatch/internal/num"
)

// KneeMethod names how a knee was found.
type KneeMethod string

// The knee methods.
const (
	// KneeKneedle is Kneedle (Satopää et al., 2011), the default: scale
	// the curve to the unit square and take the point farthest above the
	// diagonal from its first to its last point. It only ever returns a
	// measured point, tolerates noise once the curve is binned and
	// smoothed, and fits the concave saturation curve QPS makes as
	// concurrency grows.
	KneeKneedle KneeMethod = "kneedle"
	// KneeCubic fits y = ax³ + bx² + cx + d by least squares and returns
	// the inflection point x = −b/(3a), where the curve turns from
	// convex to concave. On a curve that is concave throughout (the usual
	// saturation shape) the inflection lies outside the data and the
	// cubic extrapolates: Knee.Inside is then false.
	KneeCubic KneeMethod = "cubic"
)

// Defaults of KneeConfig.
const (
	DefaultKneeBins   = 32
	DefaultKneeSmooth = 3
)

// KneeConfig configures FindKnee. Zero fields take their defaults.
type KneeConfig struct {
	// Method is KneeKneedle (default) or KneeCubic.
	Method KneeMethod
	// Bins: when the curve has more distinct concurrencies than Bins, the
	// points are grouped into Bins equal-width bins of concurrency and
	// each non-empty bin becomes its mean (concurrency, QPS). Default 32;
	// a negative value turns binning off.
	Bins int
	// Smooth is the width, in points, of the centred moving average applied
	// to QPS after binning (an even width is rounded up to the next odd
	// one; the window shrinks symmetrically near the ends). Default 3; 1
	// turns smoothing off. Kneedle only: the cubic fit smooths by itself.
	Smooth int
}

// Knee is the point where adding concurrency stops buying throughput.
type Knee struct {
	// Concurrency is the knee's concurrency (requests in flight) and QPS
	// the throughput there: the (binned, smoothed) curve's value for
	// Kneedle, the fitted cubic's value for KneeCubic.
	Concurrency, QPS float64
	Method           KneeMethod
	// Strength is, for Kneedle, the largest value of the difference curve,
	// in (0, 1): how far the knee lies above the chord of the unit-scaled
	// curve. A sharp saturation gives 0.3 or more; a value near 0 is a
	// nearly straight curve whose knee is weak evidence. 0 for KneeCubic.
	Strength float64
	// Inside is false when the cubic's inflection lies outside the range
	// of the measured concurrencies. Kneedle's knee is always inside.
	Inside bool
}

// ErrNoKnee is returned (wrapped) when the curve has no knee: it does not
// bend the way a saturation curve does within the data.
var ErrNoKnee = errors.New("no knee")

// FindKnee finds the knee of the QPS–concurrency curve from measured pairs
// (in any order; pairs with a non-finite value are dropped). For Kneedle,
// duplicated concurrencies are averaged, then binned and smoothed as c
// says; the cubic is fitted to the pairs as measured.
func FindKnee(concurrency, qps []float64, c KneeConfig) (Knee, error) {
	if len(concurrency) != len(qps) {
		return Knee{}, fmt.Errorf("knee: %d concurrency values but %d QPS values", len(concurrency), len(qps))
	}
	if c.Method == "" {
		c.Method = KneeKneedle
	}
	if c.Bins == 0 {
		c.Bins = DefaultKneeBins
	}
	if c.Smooth == 0 {
		c.Smooth = DefaultKneeSmooth
	}
	if c.Smooth < 1 {
		return Knee{}, fmt.Errorf("knee: smoothing width must be ≥ 1 point, got %d", c.Smooth)
	}
	switch c.Method {
	case KneeKneedle:
		x, y := aggregateCurve(concurrency, qps)
		if c.Bins > 0 && len(x) > c.Bins {
			x, y = binCurve(x, y, c.Bins)
		}
		return Kneedle(x, movingAverage(y, c.Smooth))
	case KneeCubic:
		return CubicInflection(concurrency, qps)
	}
	return Knee{}, fmt.Errorf("knee: unknown method %q (known: %s, %s)", c.Method, KneeKneedle, KneeCubic)
}

// Kneedle returns the knee of a curve by Satopää et al.'s Kneedle for a
// concave increasing curve: x and y are scaled to [0, 1] by their ranges,
// the difference curve d = y_n − x_n is formed and the knee is the point
// where d is largest. x must be strictly ascending. The result wraps
// ErrNoKnee when d never rises above 0 or peaks at either end (a straight
// or convex curve, or one still rising at full slope at the last point).
func Kneedle(x, y []float64) (Knee, error) {
	if len(x) != len(y) {
		return Knee{}, fmt.Errorf("kneedle: %d x values but %d y values", len(x), len(y))
	}
	if len(x) < 3 {
		return Knee{}, fmt.Errorf("kneedle: need at least 3 points, got %d: %w", len(x), ErrNoKnee)
	}
	for i := 1; i < len(x); i++ {
		if !(x[i] > x[i-1]) {
			return Knee{}, fmt.Errorf("kneedle: x must be strictly ascending, x[%d]=%v after x[%d]=%v", i, x[i], i-1, x[i-1])
		}
	}
	x0, xr := x[0], x[len(x)-1]-x[0]
	y0, yr := slices.Min(y), slices.Max(y)
	yr -= y0
	if !(yr > 0) {
		return Knee{}, fmt.Errorf("kneedle: the curve is flat: %w", ErrNoKnee)
	}
	best, at := math.Inf(-1), -1
	for i := range x {
		d := (y[i]-y0)/yr - (x[i]-x0)/xr
		if d > best {
			best, at = d, i
		}
	}
	// kneedleTolerance keeps rounding on a straight line from making a knee.
	const kneedleTolerance = 1e-9
	if best <= kneedleTolerance || at == 0 || at == len(x)-1 {
		return Knee{}, fmt.Errorf("kneedle: the curve does not bend below its chord (largest difference %.3g at point %d of %d): %w", best, at, len(x), ErrNoKnee)
	}
	return Knee{Concurrency: x[at], QPS: y[at], Method: KneeKneedle, Strength: best, Inside: true}, nil
}

// CubicInflection fits y = ax³ + bx² + cx + d to the finite pairs by least
// squares and returns its inflection point x = −b/(3a) (where y” = 0) and
// the fitted y there. The fit is done on x centred and scaled to [−1, 1],
// which keeps the normal equations well conditioned, and mapped back. It
// needs 4 distinct x values and a non-zero cubic term.
func CubicInflection(x, y []float64) (Knee, error) {
	if len(x) != len(y) {
		return Knee{}, fmt.Errorf("cubic knee: %d x values but %d y values", len(x), len(y))
	}
	xs, _ := aggregateCurve(x, y)
	if len(xs) < 4 {
		return Knee{}, fmt.Errorf("cubic knee: need at least 4 distinct x values, got %d", len(xs))
	}
	lo, hi := xs[0], xs[len(xs)-1]
	mid, half := (lo+hi)/2, (hi-lo)/2
	// Fit on the raw pairs, not the averages: duplicates then weigh as
	// many times as they were measured.
	var u, v []float64
	for i, a := range x {
		if num.Finite(a) && num.Finite(y[i]) {
			u = append(u, (a-mid)/half)
			v = append(v, y[i])
		}
	}
	A := mat.NewDense(len(u), 4, nil)
	for i, ui := range u {
		A.Set(i, 0, 1)
		A.Set(i, 1, ui)
		A.Set(i, 2, ui*ui)
		A.Set(i, 3, ui*ui*ui)
	}
	var coef mat.VecDense
	if err := coef.SolveVec(A, mat.NewVecDense(len(v), v)); err != nil {
		return Knee{}, fmt.Errorf("cubic knee: least-squares fit: %w", err)
	}
	c0, c1, c2, c3 := coef.AtVec(0), coef.AtVec(1), coef.AtVec(2), coef.AtVec(3)
	scaleY := max(slices.Max(v)-slices.Min(v), math.Abs(slices.Max(v)))
	if math.Abs(c3) <= 1e-12*scaleY {
		return Knee{}, fmt.Errorf("cubic knee: the fitted cubic term is 0, the curve has no inflection: %w", ErrNoKnee)
	}
	ui := -c2 / (3 * c3)
	k := Knee{
		Concurrency: mid + half*ui,
		QPS:         c0 + ui*(c1+ui*(c2+ui*c3)),
		Method:      KneeCubic,
	}
	k.Inside = k.Concurrency >= lo && k.Concurrency <= hi
	return k, nil
}

// aggregateCurve drops pairs with a non-finite value, sorts by x and
// replaces the pairs sharing an x by one with the mean y.
func aggregateCurve(x, y []float64) (xs, ys []float64) {
	idx := make([]int, 0, len(x))
	for i, a := range x {
		if num.Finite(a) && num.Finite(y[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(x[a], x[b]) })
	for k := 0; k < len(idx); {
		xv := x[idx[k]]
		sum, n := 0.0, 0
		for ; k < len(idx) && x[idx[k]] == xv; k++ {
			sum += y[idx[k]]
			n++
		}
		xs = append(xs, xv)
		ys = append(ys, sum/float64(n))
	}
	return xs, ys
}

// binCurve groups ascending points into bins equal-width bins of x and
// returns the mean x and mean y of each non-empty bin.
func binCurve(x, y []float64, bins int) (bx, by []float64) {
	lo, width := x[0], (x[len(x)-1]-x[0])/float64(bins)
	for k := 0; k < len(x); {
		b := min(int((x[k]-lo)/width), bins-1)
		sx, sy, n := 0.0, 0.0, 0
		for ; k < len(x) && min(int((x[k]-lo)/width), bins-1) == b; k++ {
			sx += x[k]
			sy += y[k]
			n++
		}
		bx = append(bx, sx/float64(n))
		by = append(by, sy/float64(n))
	}
	return bx, by
}

// movingAverage is the centred moving average of 2·⌊w/2⌋+1 points, shrunk
// symmetrically near the ends (the first and last points stay as they are),
// so a straight line stays straight; w ≤ 2 returns y unchanged.
func movingAverage(y []float64, w int) []float64 {
	if w <= 2 {
		return y
	}
	out := make([]float64, len(y))
	for i := range y {
		h := min(w/2, i, len(y)-1-i)
		lo, hi := i-h, i+h+1
		s := 0.0
		for _, v := range y[lo:hi] {
			s += v
		}
		out[i] = s / float64(hi-lo)
	}
	return out
}
